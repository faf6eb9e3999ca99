package io.shardwise.core.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Counters, salted keys and sealed sub-keys: each operation, and the salting protocol under every interleaving a seed makes. */
class CountersTest {

  private static long plain(byte[] v) {
    return ((Counters.Plain) Counters.decode(v)).value();
  }

  @Test
  void anIncrementAddsToACounterOrToASaltedKeysTotalAndASealedSubKeyRefusesIt() {
    byte[] one = Counters.increment(null, 1);
    assertThat(one).hasSize(8);
    assertThat(plain(Counters.increment(one, -5))).isEqualTo(-4);
    byte[] salted = Counters.salt(Counters.increment(one, 9), 7, 4);
    assertThat(Counters.decode(salted)).isEqualTo(new Counters.Salted(7, 4, 0, 10));
    assertThat(Counters.decode(Counters.increment(salted, 2))).isEqualTo(new Counters.Salted(7, 4, 0, 12));
    byte[] sealed = Counters.seal(Counters.increment(null, 3));
    assertThat(Counters.decode(sealed)).isEqualTo(new Counters.Sealed(3));
    assertThatThrownBy(() -> Counters.increment(sealed, 1)).isInstanceOfSatisfying(Counters.CounterException.class,
        e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.SEALED));
    assertThatThrownBy(() -> Counters.increment(new byte[] {1, 2, 3}, 1)).isInstanceOfSatisfying(Counters.CounterException.class,
        e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.NOT_A_COUNTER)).hasMessageContaining("3 bytes");
    assertThatThrownBy(() -> Counters.increment(ByteBuffer.allocate(8).putLong(Long.MAX_VALUE).array(), 1))
        .hasMessageContaining("overflow");
  }

  @Test
  void saltSealAndFoldAreIdempotentAndTheLastFoldMakesACounterAgain() {
    byte[] salted = Counters.salt(Counters.increment(null, 5), 1, 2);
    assertThat(Counters.salt(salted, 1, 2)).isEqualTo(salted);
    assertThatThrownBy(() -> Counters.salt(salted, 2, 2)).hasMessageContaining("generation 1");
    assertThatThrownBy(() -> Counters.salt(null, 1, 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Counters.salt(null, 1, 65)).isInstanceOf(IllegalArgumentException.class);
    byte[] sealed = Counters.seal(null);
    assertThat(Counters.seal(sealed)).isEqualTo(sealed);
    byte[] once = Counters.fold(salted, 1, 0, 7);
    assertThat(Counters.decode(once)).isEqualTo(new Counters.Salted(1, 2, 1, 12));
    assertThat(Counters.fold(once, 1, 0, 7)).as("a second fold of sub-key 0 adds nothing").isEqualTo(once);
    byte[] done = Counters.fold(once, 1, 1, 3);
    assertThat(plain(done)).isEqualTo(15);
    assertThat(Counters.fold(done, 1, 1, 3)).isEqualTo(done);
    assertThatThrownBy(() -> Counters.fold(salted, 2, 0, 1)).hasMessageContaining("generation 1, not 2");
    assertThatThrownBy(() -> Counters.fold(salted, 1, 2, 1)).hasMessageContaining("not one of the key's 2");
  }

  @Test
  void subKeysAreTheKeyWithASuffixTheDataApiReserves() {
    Key key = Key.of("likes", "total");
    Key sub = Counters.subKey(key, 3, 5);
    assertThat(sub.sortKey()).isEqualTo(key.sortKey());
    assertThat(Counters.isSubKey(sub.partitionKey())).isTrue();
    assertThat(Counters.isSubKey(key.partitionKey())).isFalse();
    assertThat(Counters.subKey(key, 3, 6)).isNotEqualTo(sub);
    assertThat(Counters.subKey(key, 4, 5)).isNotEqualTo(sub);
  }

  // ---------------------------------------------------------------- the protocol, interleaved

  /**
   * A model of one salted counter: the stored values of the key and its sub-keys, the registry's
   * state, writers that route by a view of the registry that may be one change old, a controller
   * that promotes and demotes step by step, and readers that read the key and then its sub-keys
   * one step at a time, with any steps of the others in between. Every reader's result must lie
   * between the increments applied before it began and those applied when it ended; and sequential
   * reads never go back.
   */
  private static final class Model {
    final Key key = Key.of("likes");
    final Map<Key, byte[]> store = new HashMap<>();
    final SplittableRandom random;
    long applied;
    // The registry: state (0 none, 1 promoting, 2 salted, 3 demoting), generation, fanout; and the previous one.
    int state;
    int generation;
    int fanout;
    int[] previous = {0, 0, 0};
    // The controller's work list: its remaining steps.
    final List<Runnable> controller = new ArrayList<>();
    int nextGeneration = 1;

    Model(long seed) {
      this.random = new SplittableRandom(seed);
    }

    void setRegistry(int s, int g, int n) {
      previous = new int[] {state, generation, fanout};
      state = s;
      generation = g;
      fanout = n;
    }

    /** A writer's increment, routed by the current registry or the one before it (a stale client). */
    void increment() {
      long delta = 1 + random.nextInt(3);
      boolean stale = random.nextBoolean();
      int s = stale ? previous[0] : state;
      int g = stale ? previous[1] : generation;
      int n = stale ? previous[2] : fanout;
      Key target = s == 2 ? Counters.subKey(key, g, random.nextInt(n)) : key;
      try {
        store.put(target, Counters.increment(store.get(target), delta));
      } catch (Counters.CounterException sealed) {
        assertThat(sealed.refusal()).isEqualTo(Counters.Refusal.SEALED);
        Key fresh = state == 2 ? Counters.subKey(key, generation, random.nextInt(fanout)) : key; // refreshed, sent again
        store.put(fresh, Counters.increment(store.get(fresh), delta));
      }
      applied += delta;
    }

    void plan() {
      if (state == 0) {
        int g = nextGeneration++;
        int n = 2 + random.nextInt(4);
        controller.add(() -> setRegistry(1, g, n));
        controller.add(() -> store.put(key, Counters.salt(store.get(key), g, n)));
        controller.add(() -> setRegistry(2, g, n));
      } else {
        int g = generation;
        int n = fanout;
        controller.add(() -> setRegistry(3, g, n));
        for (int i = 0; i < n; i++) {
          Key sub = Counters.subKey(key, g, i);
          controller.add(() -> store.put(sub, Counters.seal(store.get(sub))));
        }
        for (int i = 0; i < n; i++) {
          int index = i;
          Key sub = Counters.subKey(key, g, i);
          long[] read = new long[1];
          controller.add(() -> read[0] = ((Counters.Sealed) Counters.decode(store.get(sub))).value());
          controller.add(() -> store.put(key, Counters.fold(store.get(key), g, index, read[0])));
        }
        controller.add(() -> setRegistry(0, 0, 0));
      }
    }
  }

  /** A reader mid-read: the key read, then one sub-key per step. */
  private static final class Reader {
    final long appliedAtStart;
    Counters.Salted salted;
    long result;
    int next = -1; // -1: the key is next
    boolean done;

    Reader(long appliedAtStart) {
      this.appliedAtStart = appliedAtStart;
    }

    void step(Model m) {
      if (next == -1) {
        Counters.Value v = Counters.decode(m.store.get(m.key));
        if (v instanceof Counters.Plain p) {
          result = p.value();
          done = true;
          return;
        }
        salted = (Counters.Salted) v;
        result = salted.total();
        next = 0;
      } else {
        if (!salted.isFolded(next)) {
          byte[] raw = m.store.get(Counters.subKey(m.key, salted.generation(), next));
          byte[][] one = new byte[salted.fanout()][];
          one[next] = raw;
          result += Counters.merged(new Counters.Salted(salted.generation(), salted.fanout(), salted.folded(), 0), one);
        }
        next++;
      }
      done = next >= salted.fanout();
    }
  }

  static java.util.stream.LongStream seeds() {
    return java.util.stream.LongStream.rangeClosed(1, 300);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void everyReadCountsEachIncrementAppliedBeforeItOnceThroughPromotionsAndDemotions(long seed) {
    Model m = new Model(seed);
    Reader reader = null;
    long lastResult = 0;
    int reads = 0;
    for (int step = 0; step < 3_000; step++) {
      int what = m.random.nextInt(10);
      if (what < 5) {
        m.increment();
      } else if (what < 8) {
        if (m.controller.isEmpty() && m.random.nextInt(20) == 0) {
          m.plan();
        }
        if (!m.controller.isEmpty()) {
          m.controller.remove(0).run();
        }
      } else {
        if (reader == null) {
          reader = new Reader(m.applied);
        }
        reader.step(m);
        if (reader.done) {
          assertThat(reader.result).as("seed %d step %d: at least what was applied before the read", seed, step)
              .isGreaterThanOrEqualTo(reader.appliedAtStart);
          assertThat(reader.result).as("seed %d step %d: at most what was applied at its end", seed, step).isLessThanOrEqualTo(m.applied);
          assertThat(reader.result).as("seed %d step %d: never below an earlier read", seed, step).isGreaterThanOrEqualTo(lastResult);
          lastResult = reader.result;
          reader = null;
          reads++;
        }
      }
    }
    while (!m.controller.isEmpty()) {
      m.controller.remove(0).run();
    }
    if (m.state == 2) {
      m.plan(); // demote, so that the key ends a counter again
      while (!m.controller.isEmpty()) {
        m.controller.remove(0).run();
      }
    }
    assertThat(plain(m.store.get(m.key))).as("seed %d: the key alone holds every increment once demoted", seed).isEqualTo(m.applied);
    assertThat(reads).isPositive();
  }
}
