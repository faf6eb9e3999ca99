package io.shardwise.server.hot;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ShardHeatTest {

  /** A heat whose clock stands still and whose split candidates are picked by {@code seed}: it replays exactly. */
  private static ShardHeat heat(long seed) {
    return new ShardHeat(() -> 0, new java.util.SplittableRandom(seed)::nextLong);
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void countsHalveEveryHalfLifeSoAKeyThatCooledDownFades() {
    AtomicLong now = new AtomicLong();
    ShardHeat heat = new ShardHeat(now::get, new java.util.SplittableRandom(1)::nextLong);
    ShardRef shard = new ShardRef(1, 0);
    for (int i = 0; i < 64; i++) {
      heat.count(shard, b("was-hot"), true);
    }
    assertThat(heat.hottest(shard, 1).keys().get(0).count()).isEqualTo(64);
    now.addAndGet(3 * ShardHeat.HALF_LIFE_NANOS); // three half-lives: 64 -> 8
    heat.count(shard, b("now-hot"), false);
    ShardHeat.Hot hot = heat.hottest(shard, 2);
    assertThat(hot.keys().get(0).count()).isEqualTo(8);
    assertThat(hot.sampled()).isEqualTo(9);
    now.addAndGet(4 * ShardHeat.HALF_LIFE_NANOS); // 8 -> 0: gone
    assertThat(heat.hottest(shard, 2).keys()).isEmpty();
  }

  @Test
  void hotKeysAreThoseWithAGuaranteedShareOfTheirShardAndIncrementsAreCountedApart() {
    ShardHeat heat = heat(2);
    ShardRef a = new ShardRef(1, 0);
    ShardRef b = new ShardRef(1, 1);
    for (int i = 0; i < 100; i++) {
      heat.count(a, b("likes"), true, true); // a counter: every request an increment
      heat.count(a, b("k" + (i % 50)), false);
      heat.count(b, b("k" + (i % 10)), true); // ten keys of a tenth each: none hot
    }
    assertThat(heat.hotKeys(0.5)).as("'likes' takes half of shard a's requests").isEqualTo(1);
    assertThat(heat.hotKeys(0.6)).isZero();
    assertThat(heat.hotKeys(0.1)).as("and each of b's ten keys a tenth").isEqualTo(11);
    HeavyHitters.Entry likes = heat.hottest(a, 1).keys().get(0);
    assertThat(likes.merges()).isEqualTo(100);
    assertThat(likes.writes()).isEqualTo(100);
    assertThat(heat.hottest(b, 1).keys().get(0).merges()).isZero();
  }

  @Test
  void ascendingWritesAllRiseRandomOnesSeldomDo() {
    ShardHeat heat = heat(11);
    ShardRef timeline = new ShardRef(1, 0);
    ShardRef users = new ShardRef(1, 1);
    java.util.SplittableRandom random = new java.util.SplittableRandom(3);
    for (int i = 0; i < 1_000; i++) {
      heat.count(timeline, b(String.format("event-%08d", i)), true);
      heat.count(users, b("user-" + random.nextInt(1_000_000)), true);
      heat.count(timeline, b("event-00000001"), false); // reads do not count as writes
    }
    ShardHeat.Hot t = heat.hottest(timeline, 1);
    assertThat(t.sampledWrites()).isEqualTo(1_000);
    assertThat(t.rising()).isEqualTo(1_000);
    assertThat(new String(t.highest(), StandardCharsets.UTF_8)).isEqualTo("event-00000999");
    ShardHeat.Hot u = heat.hottest(users, 1);
    assertThat(u.rising()).as("records of a random stream: about ln(1000) of them").isLessThan(30);
  }

  @Test
  void shardsAreKeptApartAndAForgottenShardHasNone() {
    ShardHeat heat = heat(12);
    ShardRef a = new ShardRef(1, 0);
    ShardRef b = new ShardRef(1, 1);
    heat.count(a, b("x"), false);
    assertThat(heat.hottest(b, 5)).isSameAs(ShardHeat.Hot.NONE);
    heat.forget(a);
    assertThat(heat.hottest(a, 5)).isSameAs(ShardHeat.Hot.NONE);
  }

  @Test
  void aRangeShardsLoadSplitFallsWhereItsRequestsBalance() {
    ShardHeat heat = heat(13);
    ShardRef shard = ShardRef.ofKeyRange(1, 0, new byte[0], null);
    java.util.SplittableRandom random = new java.util.SplittableRandom(5);
    for (int i = 0; i < 20_000; i++) {
      heat.count(shard, b(String.format("user%04d", random.nextInt(1_000))), i % 2 == 0);
    }
    ShardHeat.LoadSplit split = heat.loadSplit(shard);
    assertThat(split.refusal()).isEmpty();
    assertThat(split.point().lowerShare()).isBetween(0.4, 0.6);
    assertThat(new String(split.point().key(), StandardCharsets.UTF_8)).isBetween("user0300", "user0700");
  }

  @Test
  void aHashrangeShardsLoadSplitIsAHashInsideTheShard() {
    ShardHeat heat = heat(14);
    io.shardwise.core.hash.HashFunction murmur = io.shardwise.core.hash.HashFunctions.byName("murmur3-32");
    ShardRef shard = ShardRef.ofHashRange(1, 0, murmur, 0, murmur.maxValue());
    java.util.SplittableRandom random = new java.util.SplittableRandom(6);
    for (int i = 0; i < 20_000; i++) {
      heat.count(shard, b("user" + random.nextInt(1_000)), false);
    }
    ShardHeat.LoadSplit split = heat.loadSplit(shard);
    assertThat(split.point()).isNotNull();
    long hash = java.nio.ByteBuffer.wrap(split.point().key()).getLong();
    assertThat(hash).isBetween(murmur.maxValue() / 4, murmur.maxValue() / 4 * 3);
  }

  @Test
  void aShardWhoseLoadIsOneHotKeyIsRefusedAsAHotKey() {
    ShardHeat heat = heat(15);
    ShardRef shard = ShardRef.ofKeyRange(1, 0, new byte[0], null);
    java.util.SplittableRandom random = new java.util.SplittableRandom(7);
    for (int i = 0; i < 20_000; i++) {
      // half the requests to one key in the middle; the rest spread evenly: a split at the hot key is even, and pointless
      heat.count(shard, random.nextBoolean() ? b("user0500") : b(String.format("user%04d", random.nextInt(1_000))), true);
    }
    ShardHeat.LoadSplit split = heat.loadSplit(shard);
    assertThat(split.point()).isNull();
    assertThat(split.refusal()).contains("hot key");
  }

  @Test
  void aBucketShardHasNoLoadSplit() {
    ShardHeat heat = heat(16);
    ShardRef bucket = new ShardRef(1, 0);
    heat.count(bucket, b("x"), true);
    assertThat(heat.loadSplit(bucket).point()).isNull();
    assertThat(heat.loadSplit(bucket).refusal()).contains("only range and hashrange");
  }
}
