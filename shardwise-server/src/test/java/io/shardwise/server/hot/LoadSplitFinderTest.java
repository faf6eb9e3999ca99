package io.shardwise.server.hot;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LoadSplitFinderTest {

  private static byte[] key(int i) {
    return String.format("k%06d", i).getBytes(StandardCharsets.UTF_8);
  }

  private static void record(LoadSplitFinder f, SplittableRandom random, byte[] key) {
    f.record(key, random::nextLong);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void uniformRequestsSplitNearTheMiddleOfTheirKeys(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    LoadSplitFinder f = new LoadSplitFinder();
    for (int i = 0; i < 20_000; i++) {
      record(f, random, key(random.nextInt(1_000)));
    }
    LoadSplitFinder.Point p = f.best();
    assertThat(p).isNotNull();
    assertThat(p.lowerShare()).isBetween(0.4, 0.6);
    assertThat(p.below() + p.from()).isGreaterThanOrEqualTo(LoadSplitFinder.MIN_COUNTED);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void skewedRequestsSplitWhereTheLoadBalancesNotWhereTheKeysDo(long seed) {
    // Keys 0..999, but 80% of the requests go to keys 900..999: the split belongs among those.
    SplittableRandom random = new SplittableRandom(seed);
    LoadSplitFinder f = new LoadSplitFinder();
    for (int i = 0; i < 40_000; i++) {
      record(f, random, key(random.nextInt(10) < 8 ? 900 + random.nextInt(100) : random.nextInt(900)));
    }
    LoadSplitFinder.Point p = f.best();
    assertThat(p).isNotNull();
    assertThat(new String(p.key(), StandardCharsets.UTF_8)).isGreaterThan("k000900");
    assertThat(p.lowerShare()).isBetween(0.3, 0.7);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void oneKeyTakingEveryRequestHasNoSplit(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    LoadSplitFinder f = new LoadSplitFinder();
    for (int i = 0; i < 10_000; i++) {
      record(f, random, key(7));
    }
    assertThat(f.best()).isNull();
    assertThat(f.mostCounted()).isGreaterThan(LoadSplitFinder.MIN_COUNTED);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2})
  void fewRequestsGiveNoPointYet(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    LoadSplitFinder f = new LoadSplitFinder();
    for (int i = 0; i < 60; i++) {
      record(f, random, key(random.nextInt(1_000)));
    }
    assertThat(f.best()).isNull();
    assertThat(f.mostCounted()).isLessThan(LoadSplitFinder.MIN_COUNTED);
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void afterDecaysThePointFollowsWhereTheRequestsMoved(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    LoadSplitFinder f = new LoadSplitFinder();
    for (int i = 0; i < 20_000; i++) {
      record(f, random, key(random.nextInt(500))); // first the lower half of the keys
    }
    for (int round = 0; round < 8; round++) {
      f.decay();
      for (int i = 0; i < 5_000; i++) {
        record(f, random, key(500 + random.nextInt(500))); // then only the upper half
      }
    }
    LoadSplitFinder.Point p = f.best();
    assertThat(p).isNotNull();
    assertThat(new String(p.key(), StandardCharsets.UTF_8)).isGreaterThan("k000600").isLessThan("k000900");
  }
}
