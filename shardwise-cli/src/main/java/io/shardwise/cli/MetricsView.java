package io.shardwise.cli;

import io.shardwise.proto.v1.Metric;
import io.shardwise.proto.v1.MetricsResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code cluster metrics} for people: one line per meter and node, in human units, with the rate of
 * each counter between two readings. A counter reads "12.3 MiB, 1.2 MiB/s"; a timer "30 ×, mean
 * 12.0 ms, max 40.1 ms"; a gauge its value. Raw measurements are what {@code -o json} prints.
 */
final class MetricsView {

  private MetricsView() {}

  /** One row: node, meter (with its tags), value, rate. */
  record Row(String node, String meter, String value, String rate) {}

  /** The rows for the second reading, rates taken against the first over {@code between}. */
  static List<Row> rows(List<MetricsResponse> first, List<MetricsResponse> second, Duration between) {
    Map<String, Map<String, Double>> before = new LinkedHashMap<>();
    for (MetricsResponse r : first) {
      measurements(r).forEach((meter, stats) -> before.put(r.getNode() + "\u0000" + meter, stats));
    }
    double seconds = between.toNanos() / 1e9;
    List<Row> rows = new ArrayList<>();
    for (MetricsResponse r : second) {
      Map<String, String> units = new LinkedHashMap<>();
      r.getMetricsList().forEach(m -> units.put(meter(m), m.getUnit()));
      measurements(r).forEach((meter, stats) -> {
        String unit = units.getOrDefault(meter, "");
        Map<String, Double> was = before.getOrDefault(r.getNode() + "\u0000" + meter, Map.of());
        rows.add(row(r.getNode(), meter, unit, stats, was, seconds));
      });
    }
    return rows;
  }

  private static Row row(String node, String meter, String unit, Map<String, Double> stats, Map<String, Double> was, double seconds) {
    if (stats.containsKey("total")) { // a timer (total in the unit) or a distribution summary
      double count = stats.getOrDefault("count", 0.0);
      String value = String.format(Locale.ROOT, "%,.0f ×", count);
      if (count > 0) {
        value += ", mean " + human(stats.get("total") / count, unit) + ", max " + human(stats.getOrDefault("max", 0.0), unit);
      }
      double rate = rate(count, was.get("count"), seconds);
      return new Row(node, meter, value, Double.isNaN(rate) ? "-" : String.format(Locale.ROOT, "%,.1f/s", rate));
    }
    if (stats.containsKey("count")) { // a counter
      double count = stats.get("count");
      double rate = rate(count, was.get("count"), seconds);
      return new Row(node, meter, human(count, unit), Double.isNaN(rate) ? "-" : human(rate, unit) + "/s");
    }
    double value = stats.values().stream().findFirst().orElse(0.0); // a gauge
    return new Row(node, meter, human(value, unit), "-");
  }

  private static double rate(double now, Double before, double seconds) {
    if (before == null || seconds <= 0) {
      return Double.NaN;
    }
    return Math.max(0, now - before) / seconds;
  }

  /**
   * Per meter (name and tags), its statistics: count, total, max, value. Per-shard counters are
   * summed per table (a node may own hundreds of shards; Prometheus has them one by one).
   */
  private static Map<String, Map<String, Double>> measurements(MetricsResponse r) {
    Map<String, Map<String, Double>> out = new LinkedHashMap<>();
    for (Metric m : r.getMetricsList()) {
      String statistic = m.getStatistic().toLowerCase(Locale.ROOT).equals("total_time") ? "total" : m.getStatistic().toLowerCase(Locale.ROOT);
      Map<String, Double> stats = out.computeIfAbsent(meter(m), k -> new LinkedHashMap<>());
      if (m.containsTags(PER_SHARD)) {
        stats.merge(statistic, m.getValue(), Double::sum);
      } else {
        stats.put(statistic, m.getValue());
      }
    }
    return out;
  }

  private static final String PER_SHARD = "shard";

  private static String meter(Metric m) {
    Map<String, String> tags = new TreeMap<>(m.getTagsMap());
    tags.remove(PER_SHARD);
    tags.remove("table_id");
    StringBuilder b = new StringBuilder(m.getName());
    tags.forEach((k, v) -> b.append(' ').append(k).append('=').append(v));
    return b.toString();
  }

  /** {@code value} in {@code unit}, scaled for reading: 1.2 MiB, 12.0 ms, 1,204. */
  static String human(double value, String unit) {
    switch (unit) {
      case "bytes":
        return io.shardwise.core.util.Bytes.human(value);
      case "seconds": {
        double abs = Math.abs(value);
        if (abs == 0) {
          return "0 s";
        }
        if (abs < 1e-3) {
          return String.format(Locale.ROOT, "%.0f µs", value * 1e6);
        }
        if (abs < 1) {
          return String.format(Locale.ROOT, "%.1f ms", value * 1e3);
        }
        return String.format(Locale.ROOT, "%.2f s", value);
      }
      default: {
        String n = value == Math.rint(value) && Math.abs(value) < 1e15 ? String.format(Locale.ROOT, "%,.0f", value)
            : String.format(Locale.ROOT, "%,.2f", value);
        return unit.isEmpty() ? n : n + " " + unit;
      }
    }
  }
}
