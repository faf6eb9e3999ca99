package io.shardwise.core.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Lists, salted lists and sealed sub-keys: each operation, and the salting protocol under every interleaving a seed makes. */
class ListsTest {

  private static final int LIMIT = 1 << 20;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<String> strings(List<Lists.Element> elements) {
    List<String> out = new ArrayList<>();
    elements.forEach(e -> out.add(new String(e.value(), StandardCharsets.UTF_8)));
    return out;
  }

  private static List<Lists.Element> plain(byte[] stored) {
    return ((Lists.Plain) Lists.decode(stored)).elements();
  }

  @Test
  void appendsKeepTheirOrderEvenWhenTheClockGoesBack() {
    byte[] v = Lists.append(null, b("a"), 1_000, Lists.KEY, LIMIT);
    v = Lists.append(v, b("b"), 900, Lists.KEY, LIMIT); // the clock went back: stamped just after a
    v = Lists.append(v, b("c"), 5_000, Lists.KEY, LIMIT);
    List<Lists.Element> elements = plain(v);
    assertThat(strings(elements)).containsExactly("a", "b", "c");
    assertThat(elements).extracting(Lists.Element::micros).containsExactly(1_000L, 1_001L, 5_000L);
    assertThat(Lists.isList(v)).isTrue();
    assertThat(Lists.isList(Counters.increment(null, 1))).isFalse();
    assertThat(plain(Lists.encode(Lists.decode(v)))).isEqualTo(elements);
    assertThat(plain(null)).isEmpty();
  }

  @Test
  void anAppendPastTheLimitOrToAnotherKindOfValueIsRefusedAndASealedSubKeyTakesNoAppends() {
    byte[] v = Lists.append(null, new byte[80], 1, Lists.KEY, 100);
    assertThatThrownBy(() -> Lists.append(v, new byte[1], 2, Lists.KEY, 100)).isInstanceOfSatisfying(Counters.CounterException.class,
        e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.TOO_LARGE)).hasMessageContaining("past the value limit of 100");
    assertThatThrownBy(() -> Lists.append(Counters.increment(null, 3), b("x"), 1, Lists.KEY, LIMIT))
        .isInstanceOfSatisfying(Counters.CounterException.class, e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.NOT_A_LIST));
    assertThatThrownBy(() -> Counters.increment(v, 1)).isInstanceOfSatisfying(Counters.CounterException.class,
        e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.NOT_A_COUNTER));
    byte[] sealed = Lists.seal(v);
    assertThat(Lists.seal(sealed)).isEqualTo(sealed);
    assertThatThrownBy(() -> Lists.append(sealed, b("late"), 3, 0, LIMIT)).isInstanceOfSatisfying(Counters.CounterException.class,
        e -> assertThat(e.refusal()).isEqualTo(Counters.Refusal.SEALED));
    byte[] cut = java.util.Arrays.copyOf(v, v.length - 1);
    assertThatThrownBy(() -> Lists.decode(cut)).hasMessageContaining("past the value's end");
  }

  @Test
  void foldsMergeBySubKeyStampOnceAndTheLastMakesAListAgain() {
    byte[] fresh = Lists.salt(Lists.append(null, b("k1"), 10, Lists.KEY, LIMIT), 4, 2);
    assertThat(Lists.salt(fresh, 4, 2)).isEqualTo(fresh);
    assertThatThrownBy(() -> Lists.salt(fresh, 5, 2)).hasMessageContaining("generation 4");
    byte[] key = Lists.append(fresh, b("k2"), 40, Lists.KEY, LIMIT);
    byte[] s0 = Lists.append(Lists.append(null, b("a"), 20, 0, LIMIT), b("b"), 50, 0, LIMIT);
    byte[] s1 = Lists.append(null, b("x"), 30, 1, LIMIT);
    Lists.Salted salted = (Lists.Salted) Lists.decode(key);
    List<String> before = strings(Lists.merged(salted, new byte[][] {s0, s1}));
    assertThat(before).containsExactly("k1", "a", "x", "k2", "b");
    byte[] once = Lists.fold(key, 4, 0, Lists.sealedElements(Lists.seal(s0)));
    assertThat(Lists.fold(once, 4, 0, Lists.sealedElements(Lists.seal(s0)))).as("a second fold adds nothing").isEqualTo(once);
    assertThat(strings(Lists.merged((Lists.Salted) Lists.decode(once), new byte[][] {s0, s1}))).isEqualTo(before);
    byte[] done = Lists.fold(once, 4, 1, Lists.sealedElements(Lists.seal(s1)));
    assertThat(strings(plain(done))).isEqualTo(before);
    assertThat(Lists.fold(done, 4, 1, List.of())).isEqualTo(done);
    byte[] k = key;
    assertThatThrownBy(() -> Lists.fold(k, 5, 0, List.of())).hasMessageContaining("generation 4, not 5");
    assertThatThrownBy(() -> Lists.fold(k, 4, 2, List.of())).hasMessageContaining("not one of the list's 2");
    assertThatThrownBy(() -> Lists.sealedElements(s0)).hasMessageContaining("not sealed");
  }

  @Test
  void aSubKeyKnowsItsIndex() {
    Key key = Key.of("feed");
    assertThat(Counters.subKeyIndex(Counters.subKey(key, 9, 0).partitionKey())).isZero();
    assertThat(Counters.subKeyIndex(Counters.subKey(key, 9, 63).partitionKey())).isEqualTo(63);
  }

  // ---------------------------------------------------------------- the protocol, interleaved

  /**
   * A model of one salted list, as {@code CountersTest}'s of a counter: the stored values, the
   * registry (one change old for stale writers), a controller promoting and demoting step by step,
   * and readers reading the key and then one sub-key a step. Each owner stamps with its own clock,
   * which may lag or lead the others' by a few ticks.
   */
  private static final class Model {
    final Key key = Key.of("feed");
    final Map<Key, byte[]> store = new HashMap<>();
    final SplittableRandom random;
    final Set<String> applied = new HashSet<>();
    /** When each element was appended: the true time, before its owner's clock error. */
    final Map<String, Long> appendedAt = new HashMap<>();
    long clock;
    int state;
    int generation;
    int fanout;
    int[] previous = {0, 0, 0};
    final List<Runnable> controller = new ArrayList<>();
    int nextGeneration = 1;
    int next;

    Model(long seed) {
      this.random = new SplittableRandom(seed);
    }

    void setRegistry(int s, int g, int n) {
      previous = new int[] {state, generation, fanout};
      state = s;
      generation = g;
      fanout = n;
    }

    /** An owner's clock: the true time give or take a few ticks. */
    long stamp() {
      clock += 1 + random.nextInt(3);
      return clock + random.nextInt(7) - 3;
    }

    void appendTo(Key target, byte[] element) {
      int origin = Counters.isSubKey(target.partitionKey()) ? Counters.subKeyIndex(target.partitionKey()) : Lists.KEY;
      store.put(target, Lists.append(store.get(target), element, stamp(), origin, LIMIT));
    }

    void append() {
      String name = "e" + next++;
      boolean stale = random.nextBoolean();
      int s = stale ? previous[0] : state;
      int g = stale ? previous[1] : generation;
      int n = stale ? previous[2] : fanout;
      Key target = s == 2 ? Counters.subKey(key, g, random.nextInt(n)) : key;
      try {
        appendTo(target, b(name));
      } catch (Counters.CounterException sealed) {
        assertThat(sealed.refusal()).isEqualTo(Counters.Refusal.SEALED);
        appendTo(state == 2 ? Counters.subKey(key, generation, random.nextInt(fanout)) : key, b(name));
      }
      applied.add(name);
      appendedAt.put(name, clock);
    }

    void plan() {
      if (state == 0) {
        int g = nextGeneration++;
        int n = 2 + random.nextInt(4);
        controller.add(() -> setRegistry(1, g, n));
        controller.add(() -> store.put(key, Lists.salt(store.get(key), g, n)));
        controller.add(() -> setRegistry(2, g, n));
      } else {
        int g = generation;
        int n = fanout;
        controller.add(() -> setRegistry(3, g, n));
        for (int i = 0; i < n; i++) {
          Key sub = Counters.subKey(key, g, i);
          controller.add(() -> store.put(sub, Lists.seal(store.get(sub))));
        }
        for (int i = 0; i < n; i++) {
          int index = i;
          Key sub = Counters.subKey(key, g, i);
          List<List<Lists.Element>> read = new ArrayList<>();
          controller.add(() -> read.add(Lists.sealedElements(store.get(sub))));
          controller.add(() -> store.put(key, Lists.fold(store.get(key), g, index, read.get(0))));
        }
        controller.add(() -> setRegistry(0, 0, 0));
      }
    }
  }

  /** A reader mid-read: the key read, then one sub-key per step. */
  private static final class Reader {
    final Set<String> appliedAtStart;
    Lists.Salted salted;
    byte[][] subKeys;
    List<String> result;
    int next = -1;
    boolean done;

    Reader(Set<String> applied) {
      this.appliedAtStart = new HashSet<>(applied);
    }

    void step(Model m) {
      if (next == -1) {
        Lists.Value v = Lists.decode(m.store.get(m.key));
        if (v instanceof Lists.Plain p) {
          result = strings(p.elements());
          done = true;
          return;
        }
        salted = (Lists.Salted) v;
        subKeys = new byte[salted.fanout()][];
        next = 0;
      } else {
        if (!salted.isFolded(next)) {
          subKeys[next] = m.store.get(Counters.subKey(m.key, salted.generation(), next));
        }
        next++;
      }
      if (next >= salted.fanout()) {
        result = strings(Lists.merged(salted, subKeys));
        done = true;
      }
    }
  }

  static java.util.stream.LongStream seeds() {
    return java.util.stream.LongStream.rangeClosed(1, 300);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void everyReadHoldsEachAppendBeforeItOnceAndAllReadsAgreeOnTheOrder(long seed) {
    Model m = new Model(seed);
    Reader reader = null;
    List<List<String>> reads = new ArrayList<>();
    for (int step = 0; step < 1_000; step++) {
      int what = m.random.nextInt(10);
      if (what < 5) {
        m.append();
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
          // Plain set operations: AssertJ's containsAll compares element by element, too slow for 300 seeds.
          Set<String> read = new HashSet<>(reader.result);
          Set<String> missing = new HashSet<>(reader.appliedAtStart);
          missing.removeAll(read);
          assertThat(missing).as("seed %d step %d: appends made before the read that it lacks", seed, step).isEmpty();
          Set<String> unknown = new HashSet<>(read);
          unknown.removeAll(m.applied);
          assertThat(unknown).as("seed %d step %d: elements not appended by its end", seed, step).isEmpty();
          assertThat(read.size()).as("seed %d step %d: each once", seed, step).isEqualTo(reader.result.size());
          reads.add(reader.result);
          reader = null;
        }
      }
    }
    while (!m.controller.isEmpty()) {
      m.controller.remove(0).run();
    }
    if (m.state == 2) {
      m.plan();
      while (!m.controller.isEmpty()) {
        m.controller.remove(0).run();
      }
    }
    List<String> last = strings(plain(m.store.get(m.key)));
    // Owners' clocks err by at most 3 ticks each way: an element appended more than 6 ticks after
    // another, wherever each went, comes after it.
    long latest = 0;
    for (String e : last) {
      long at = m.appendedAt.get(e);
      if (at < latest - 6) {
        throw new AssertionError("seed " + seed + ": " + e + ", appended at " + at + ", comes after one appended at " + latest);
      }
      latest = Math.max(latest, at);
    }
    assertThat(new HashSet<>(last).equals(m.applied) && last.size() == m.applied.size())
        .as("seed %d: the key alone holds every append once demoted", seed).isTrue();
    Map<String, Integer> position = new HashMap<>();
    for (int i = 0; i < last.size(); i++) {
      position.put(last.get(i), i);
    }
    for (List<String> read : reads) {
      for (int i = 1; i < read.size(); i++) {
        if (position.get(read.get(i - 1)) >= position.get(read.get(i))) {
          throw new AssertionError("seed " + seed + ": a read has " + read.get(i - 1) + " before " + read.get(i) + ", the final list after");
        }
      }
    }
    assertThat(reads).isNotEmpty();
  }
}
