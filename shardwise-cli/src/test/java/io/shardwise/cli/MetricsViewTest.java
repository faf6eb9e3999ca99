package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.proto.v1.Metric;
import io.shardwise.proto.v1.MetricsResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class MetricsViewTest {

  private static Metric m(String name, String statistic, double value, String unit) {
    return Metric.newBuilder().setName(name).setStatistic(statistic).setValue(value).setUnit(unit).build();
  }

  private static MetricsResponse reading(double bytes, double keys, double pauses, double pausedSeconds) {
    return MetricsResponse.newBuilder().setNode("n1")
        .addMetrics(m("shardwise.move.bytes", "count", bytes, "bytes"))
        .addMetrics(m("shardwise.move.keys", "count", keys, ""))
        .addMetrics(m("shardwise.move.write.pause", "count", pauses, "seconds"))
        .addMetrics(m("shardwise.move.write.pause", "total", pausedSeconds, "seconds"))
        .addMetrics(m("shardwise.move.write.pause", "max", 0.0401, "seconds"))
        .addMetrics(m("shardwise.moves.in.flight", "value", 2, ""))
        .addMetrics(Metric.newBuilder().setName("shardwise.move.write.pause.percentile").setStatistic("value").setValue(0.012)
            .setUnit("seconds").putTags("phi", "0.99"))
        .build();
  }

  @Test
  void countersReadInHumanUnitsWithTheirRateTimersWithMeanAndMaxGaugesAsTheyAre() {
    List<MetricsView.Row> rows = MetricsView.rows(List.of(reading(0, 1_000, 10, 0.1)),
        List.of(reading(12.5 * 1024 * 1024, 3_000, 30, 0.36)), Duration.ofSeconds(2));
    assertThat(rows).containsExactly(
        new MetricsView.Row("n1", "shardwise.move.bytes", "12.5 MiB", "6.3 MiB/s"),
        new MetricsView.Row("n1", "shardwise.move.keys", "3,000", "1,000/s"),
        new MetricsView.Row("n1", "shardwise.move.write.pause", "30 ×, mean 12.0 ms, max 40.1 ms", "10.0/s"),
        new MetricsView.Row("n1", "shardwise.moves.in.flight", "2", "-"),
        new MetricsView.Row("n1", "shardwise.move.write.pause.percentile phi=0.99", "12.0 ms", "-"));
  }

  @Test
  void aNodeMissingFromTheFirstReadingHasNoRate() {
    List<MetricsView.Row> rows = MetricsView.rows(List.of(), List.of(reading(100, 5, 0, 0)), Duration.ofSeconds(1));
    assertThat(rows.get(0)).isEqualTo(new MetricsView.Row("n1", "shardwise.move.bytes", "100 B", "-"));
    assertThat(rows.get(2).value()).as("no pause yet").isEqualTo("0 ×");
  }

  @Test
  void perShardCountersAreSummedPerTable() {
    MetricsResponse r = MetricsResponse.newBuilder().setNode("n1")
        .addMetrics(Metric.newBuilder().setName("shardwise.shard.writes").setStatistic("count").setValue(3).setUnit("keys")
            .putTags("table", "users").putTags("table_id", "1").putTags("shard", "0"))
        .addMetrics(Metric.newBuilder().setName("shardwise.shard.writes").setStatistic("count").setValue(4).setUnit("keys")
            .putTags("table", "users").putTags("table_id", "1").putTags("shard", "1"))
        .build();
    assertThat(MetricsView.rows(List.of(), List.of(r), Duration.ofSeconds(1)))
        .containsExactly(new MetricsView.Row("n1", "shardwise.shard.writes table=users", "7 keys", "-"));
  }

  @Test
  void humanUnits() {
    assertThat(MetricsView.human(1023, "bytes")).isEqualTo("1,023 B");
    assertThat(MetricsView.human(1536, "bytes")).isEqualTo("1.5 KiB");
    assertThat(MetricsView.human(3.5 * (1L << 30), "bytes")).isEqualTo("3.5 GiB");
    assertThat(MetricsView.human(0.0000042, "seconds")).isEqualTo("4 µs");
    assertThat(MetricsView.human(2.5, "seconds")).isEqualTo("2.50 s");
    assertThat(MetricsView.human(0.25, "")).isEqualTo("0.25");
    assertThat(MetricsView.human(7, "rows")).isEqualTo("7 rows");
  }
}
