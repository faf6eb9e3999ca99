package io.shardwise.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A run as JSON (for scripts) or as a one-screen summary. Latencies are in microseconds.
 *
 * <p>JSON: {@code throughput} (operations per second of the measured run), per operation type an
 * object {@code {count, p50, p95, p99, p999, max, mean}}, {@code errors} by kind, the options and
 * the warm-up, {@code load}, {@code phases} (when the run was cut into phases) and, for Shardwise,
 * {@code spread} (requests per shard and per node and their peak-to-average).
 */
public final class BenchReport {

  private static final ObjectMapper JSON = new ObjectMapper();

  private BenchReport() {}

  public static ObjectNode json(Bench.Result r, ClusterTraffic.Spread spread) {
    ObjectNode o = JSON.createObjectNode();
    o.put("target", r.target());
    Bench.Options opt = r.options();
    o.put("workload", opt.workload().name()).put("records", opt.records()).put("threads", opt.threads())
        .put("valueSize", opt.valueSize()).put("distribution", opt.distribution().id()).put("latencyUnit", "us");
    o.put("warmupSeconds", round(r.warmupSeconds())).put("warmupOperations", r.warmupOperations());
    o.put("seconds", round(r.run().seconds())).put("operations", r.run().operations());
    o.put("throughput", round(r.run().throughput()));
    if (r.load() != null) {
      o.putObject("load").put("records", r.load().records()).put("seconds", round(r.load().seconds()))
          .put("throughput", round(r.load().throughput()));
    }
    ops(o, r.run());
    ObjectNode errors = o.putObject("errors");
    r.errors().forEach(errors::put);
    o.put("notFound", r.notFound());
    if (r.phases().size() > 1 || (r.phases().size() == 1 && !r.phases().get(0).name().equals("run"))) {
      ObjectNode phases = o.putObject("phases");
      for (Bench.Phase p : r.phases()) {
        ObjectNode po = phases.putObject(p.name()).put("seconds", round(p.seconds())).put("operations", p.operations())
            .put("throughput", round(p.throughput()));
        stats(po.putObject("all"), p.all());
      }
    }
    if (spread != null) {
      ObjectNode s = o.putObject("spread");
      s.put("shardPeakToAverage", round(spread.shardPeakToAverage())).put("nodePeakToAverage", round(spread.nodePeakToAverage()));
      ObjectNode nodes = s.putObject("perNode");
      spread.perNode().forEach(nodes::put);
      ObjectNode shards = s.putObject("perShard");
      spread.perShard().forEach(shards::put);
    }
    return o;
  }

  private static void ops(ObjectNode o, Bench.Phase phase) {
    for (Map.Entry<OpType, Bench.OpStats> e : phase.ops().entrySet()) {
      stats(o.putObject(e.getKey().id()), e.getValue());
    }
  }

  private static void stats(ObjectNode o, Bench.OpStats s) {
    o.put("count", s.count()).put("p50", s.p50()).put("p95", s.p95()).put("p99", s.p99()).put("p999", s.p999())
        .put("max", s.max()).put("mean", round(s.mean()));
  }

  /** The one-screen summary of a run and its baselines, with ratios against the first result. */
  public static void text(PrintWriter out, List<Bench.Result> results, ClusterTraffic.Spread spread) {
    Bench.Result first = results.get(0);
    Bench.Options opt = first.options();
    out.printf(Locale.ROOT, "workload %s (%s), %,d records, %d-byte values, %s, %d threads; warm-up %.1f s, run %.1f s%n",
        opt.workload().name(), opt.workload().description(), opt.records(), opt.valueSize(), opt.distribution().id(),
        opt.threads(), first.warmupSeconds(), first.run().seconds());
    out.println();
    out.printf(Locale.ROOT, "%-14s %-18s %10s %12s %9s %9s %9s %9s %9s%n", "target", "operation", "count", "ops/s", "p50", "p95", "p99",
        "p99.9", "max");
    for (Bench.Result r : results) {
      out.printf(Locale.ROOT, "%-14s %-18s %,10d %,12.0f %9s %9s %9s %9s %9s%n", r.target(), "all", r.run().operations(),
          r.run().throughput(), ms(r.run().all().p50()), ms(r.run().all().p95()), ms(r.run().all().p99()), ms(r.run().all().p999()),
          ms(r.run().all().max()));
      for (Map.Entry<OpType, Bench.OpStats> e : r.run().ops().entrySet()) {
        Bench.OpStats s = e.getValue();
        out.printf(Locale.ROOT, "%-14s %-18s %,10d %12s %9s %9s %9s %9s %9s%n", "", e.getKey().id(), s.count(), "",
            ms(s.p50()), ms(s.p95()), ms(s.p99()), ms(s.p999()), ms(s.max()));
      }
      if (!r.errors().isEmpty()) {
        out.println("               errors: " + r.errors());
      }
    }
    if (results.size() > 1) {
      out.println();
      for (Bench.Result r : results.subList(1, results.size())) {
        out.printf(Locale.ROOT, "%s / %s: throughput %.2fx, p99 %.2fx%n", first.target(), r.target(),
            first.run().throughput() / Math.max(1e-9, r.run().throughput()), first.run().all().p99() / Math.max(1, r.run().all().p99()));
      }
    }
    if (first.phases().size() > 1) {
      out.println();
      for (Bench.Phase p : first.phases()) {
        out.printf(Locale.ROOT, "  %-8s %6.1f s  %,10.0f ops/s  p50 %s ms  p99 %s ms%n", p.name(), p.seconds(), p.throughput(),
            ms(p.all().p50()), ms(p.all().p99()));
      }
    }
    if (spread != null) {
      out.printf(Locale.ROOT, "%nrequests per shard: peak-to-average %.2f over %d shards; per node %.2f %s%n",
          spread.shardPeakToAverage(), spread.perShard().size(), spread.nodePeakToAverage(), spread.perNode());
    }
    out.printf(Locale.ROOT, "latencies in ms; load: %,.0f records/s%n", first.load() == null ? 0 : first.load().throughput());
  }

  /** Microseconds as milliseconds, with fewer decimals the larger they are. */
  public static String ms(double micros) {
    return String.format(Locale.ROOT, micros >= 100_000 ? "%.0f" : micros >= 10_000 ? "%.1f" : "%.2f", micros / 1000);
  }

  /** Two decimals, for reports. */
  public static double round(double v) {
    return Math.round(v * 100) / 100.0;
  }
}
