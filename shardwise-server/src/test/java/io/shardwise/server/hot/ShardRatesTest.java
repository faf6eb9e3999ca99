package io.shardwise.server.hot;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardTraffic;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ShardRatesTest {

  private static final ShardRef A = new ShardRef(1, 0);

  @Test
  void eachTickRecordsTheSecondsDeltasOldestFirstAndTheRingKeepsTheLastSeconds() {
    ShardRates rates = new ShardRates();
    long reads = 0;
    long writes = 0;
    rates.tick(Map.of(A, new ShardTraffic.Counts(reads, writes)));
    assertThat(rates.history(A, 10).reads()).isEmpty();
    for (int second = 1; second <= ShardRates.SECONDS + 5; second++) {
      reads += second;
      writes += 2L * second;
      rates.tick(Map.of(A, new ShardTraffic.Counts(reads, writes)));
    }
    ShardRates.History last3 = rates.history(A, 3);
    int newest = ShardRates.SECONDS + 5;
    assertThat(last3.reads()).containsExactly(newest - 2, newest - 1, newest);
    assertThat(last3.writes()).containsExactly(2 * (newest - 2), 2 * (newest - 1), 2 * newest);
    assertThat(rates.history(A, 1_000).reads()).hasSize(ShardRates.SECONDS).startsWith(6);
  }

  @Test
  void aShardThatLeftIsForgottenAndStartsAfreshWhenItComesBack() {
    ShardRates rates = new ShardRates();
    rates.tick(Map.of(A, new ShardTraffic.Counts(0, 0)));
    rates.tick(Map.of(A, new ShardTraffic.Counts(10, 0)));
    rates.tick(Map.of());
    assertThat(rates.history(A, 10)).isSameAs(ShardRates.History.NONE);
    rates.tick(Map.of(A, new ShardTraffic.Counts(50, 0)));
    rates.tick(Map.of(A, new ShardTraffic.Counts(55, 0)));
    assertThat(rates.history(A, 10).reads()).containsExactly(5);
  }
}
