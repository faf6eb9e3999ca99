package io.shardwise.server.hot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Space-Saving's guarantees against exact counts, on seeded zipfian streams. */
class HeavyHittersTest {

  private static final int KEYS = 10_000;
  private static final int EVENTS = 200_000;
  private static final int CAPACITY = 100;

  /** A zipfian (s = 0.99) stream over {@code KEYS} keys by inverse-CDF sampling. */
  private static int[] zipf(long seed) {
    double[] cdf = new double[KEYS];
    double sum = 0;
    for (int i = 0; i < KEYS; i++) {
      sum += 1 / Math.pow(i + 1, 0.99);
      cdf[i] = sum;
    }
    SplittableRandom random = new SplittableRandom(seed);
    int[] out = new int[EVENTS];
    for (int e = 0; e < EVENTS; e++) {
      double u = random.nextDouble() * sum;
      int i = java.util.Arrays.binarySearch(cdf, u);
      out[e] = i >= 0 ? i : -i - 1;
    }
    return out;
  }

  private static byte[] key(int i) {
    return ("user-" + i).getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] key) {
    return new String(key, StandardCharsets.UTF_8);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3, 4, 5})
  void everyFrequentKeyIsHeldAndEveryCountIsWithinItsError(long seed) {
    int[] stream = zipf(seed);
    HeavyHitters sketch = new HeavyHitters(CAPACITY);
    Map<String, Long> exact = new HashMap<>();
    SplittableRandom writes = new SplittableRandom(seed * 31);
    for (int k : stream) {
      sketch.add(key(k), writes.nextInt(4) == 0);
      exact.merge("user-" + k, 1L, Long::sum);
    }
    assertThat(sketch.total()).isEqualTo(EVENTS);
    List<HeavyHitters.Entry> held = sketch.top(CAPACITY);
    Map<String, HeavyHitters.Entry> byKey = held.stream().collect(Collectors.toMap(e -> text(e.key()), e -> e));

    // Every key counted more than n / capacity times is held.
    exact.forEach((k, n) -> {
      if (n > EVENTS / CAPACITY) {
        assertThat(byKey).as("%s, counted %d times", k, n).containsKey(k);
      }
    });
    // A held key's estimate is an upper bound, at most its error over, and the error at most n / capacity.
    for (HeavyHitters.Entry e : held) {
      long truth = exact.getOrDefault(text(e.key()), 0L);
      assertThat(e.count()).as(text(e.key())).isGreaterThanOrEqualTo(truth);
      assertThat(e.guaranteed()).as(text(e.key())).isLessThanOrEqualTo(truth);
      assertThat(e.error()).isLessThanOrEqualTo(EVENTS / CAPACITY);
      assertThat(e.reads() + e.writes()).as("reads and writes seen of the key itself").isLessThanOrEqualTo(truth);
    }
    // The ten hottest keys are the true ten hottest (zipfian heads are far apart).
    List<String> trueTop = exact.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(10)
        .map(Map.Entry::getKey).toList();
    assertThat(sketch.top(10).stream().map(e -> text(e.key()))).containsExactlyInAnyOrderElementsOf(trueTop);
  }

  @Test
  void oneKeyTakingHalfTheTrafficIsFirstWithItsReadWriteMix() {
    HeavyHitters sketch = new HeavyHitters(16);
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 100_000; i++) {
      if (i % 2 == 0) {
        sketch.add(key(-1), i % 4 == 0); // half the events, half of those writes
      } else {
        sketch.add(key(random.nextInt(50_000)), false);
      }
    }
    HeavyHitters.Entry top = sketch.top(1).get(0);
    assertThat(text(top.key())).isEqualTo("user--1");
    assertThat(top.guaranteed()).isGreaterThanOrEqualTo(50_000 - 100_000 / 16);
    assertThat(top.writes()).isEqualTo(25_000);
    assertThat(top.reads()).isEqualTo(25_000);
  }

  @Test
  void decayHalvesCountsAndFreesCountersThatReachZero() {
    HeavyHitters sketch = new HeavyHitters(4);
    for (int i = 0; i < 8; i++) {
      sketch.add(key(1), true);
    }
    sketch.add(key(2), false);
    sketch.decay();
    assertThat(sketch.total()).isEqualTo(4);
    assertThat(sketch.top(4)).hasSize(1);
    assertThat(sketch.top(1).get(0).count()).isEqualTo(4);
    assertThat(sketch.top(1).get(0).writes()).isEqualTo(4);
  }

  @Test
  void aKeyIsCopiedWhenHeldAndCapacityIsChecked() {
    HeavyHitters sketch = new HeavyHitters(2);
    byte[] k = key(3);
    sketch.add(k, false);
    k[0] = 'X';
    assertThat(text(sketch.top(1).get(0).key())).isEqualTo("user-3");
    assertThatThrownBy(() -> new HeavyHitters(0)).hasMessage("capacity must be between 1 and 65,536, not 0");
  }
}
