package io.shardwise.server.hot;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ShardHeatTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void countsHalveEveryHalfLifeSoAKeyThatCooledDownFades() {
    AtomicLong now = new AtomicLong();
    ShardHeat heat = new ShardHeat(now::get);
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
  void ascendingWritesAllRiseRandomOnesSeldomDo() {
    ShardHeat heat = new ShardHeat();
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
    ShardHeat heat = new ShardHeat();
    ShardRef a = new ShardRef(1, 0);
    ShardRef b = new ShardRef(1, 1);
    heat.count(a, b("x"), false);
    assertThat(heat.hottest(b, 5)).isSameAs(ShardHeat.Hot.NONE);
    heat.forget(a);
    assertThat(heat.hottest(a, 5)).isSameAs(ShardHeat.Hot.NONE);
  }
}
