package io.shardwise.console;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.core.analysis.LoadStats;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.partition.Strategy;
import io.shardwise.core.sim.SimulationReport;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Locale;

/**
 * Renders a {@link SimulationReport} as a table, JSON or CSV: the one rendering that {@code
 * shardwise simulate} prints and {@code GET /api/v1/simulate} returns. Numbers are rounded to fixed
 * decimal places (fractions 6, statistics 4) so the output is the same on every JVM.
 */
public final class SimulationOutput {

  private static final ObjectMapper JSON = new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(JsonGenerator.Feature.WRITE_BIGDECIMAL_AS_PLAIN);

  private SimulationOutput() {}

  /**
   * One JSON object: keys, from, to, hash, keySource and a result per strategy (moved count and
   * fraction, the minimum, balance and keys per node before and after); with placements, also
   * {@code placedKeys} and per result {@code placement.before/after}, the node of each key.
   */
  public static ObjectNode toJson(SimulationReport report) {
    ObjectNode root = JSON.createObjectNode();
    root.put("keys", report.keys());
    root.put("from", report.from());
    root.put("to", report.to());
    root.put("hash", report.hash());
    root.put("keySource", report.keySource());
    if (report.placedKeys() != null) {
      ArrayNode placed = root.putArray("placedKeys");
      report.placedKeys().forEach(k -> placed.add(ByteStrings.toDisplay(k)));
    }
    ArrayNode results = root.putArray("results");
    for (SimulationReport.Result r : report.results()) {
      ObjectNode o = results.addObject();
      o.put("strategy", r.strategy().id());
      o.put("moved", r.moved());
      o.put("movedFraction", round(r.movedFraction(), 6));
      o.put("theoreticalFraction", round(r.theoreticalFraction(), 6));
      o.put("shardsBefore", r.shardsBefore());
      o.put("shardsAfter", r.shardsAfter());
      stats(o.putObject("before"), r.before());
      stats(o.putObject("after"), r.after());
      ArrayNode loadBefore = o.putArray("loadBefore");
      r.loadBefore().forEach(loadBefore::add);
      ArrayNode loadAfter = o.putArray("loadAfter");
      r.loadAfter().forEach(loadAfter::add);
      if (r.structure() != null) {
        ObjectNode s = o.putObject("structure");
        s.put("unit", r.structure().unit());
        s.put("moved", r.structure().moved());
        s.put("total", r.structure().total());
        if (r.structure().spaceFraction() != null) {
          s.put("spaceFraction", round(r.structure().spaceFraction(), 6));
        }
      }
      if (r.movedKeys() != null) {
        ArrayNode keys = o.putArray("movedKeys");
        for (SimulationReport.MovedKey k : r.movedKeys()) {
          keys.addObject().put("key", ByteStrings.toDisplay(k.key())).put("from", k.from()).put("to", k.to());
        }
      }
      if (r.placement() != null) {
        ObjectNode p = o.putObject("placement");
        ArrayNode before = p.putArray("before");
        for (int node : r.placement().before()) {
          before.add(node);
        }
        ArrayNode after = p.putArray("after");
        for (int node : r.placement().after()) {
          after.add(node);
        }
      }
    }
    return root;
  }

  public static void json(SimulationReport report, PrintWriter out) {
    try {
      out.println(JSON.writeValueAsString(toJson(report)));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void stats(ObjectNode o, LoadStats s) {
    o.put("min", s.min());
    o.put("max", s.max());
    o.put("mean", round(s.mean(), 4));
    o.put("stddev", round(s.stddev(), 4));
    o.put("peakToAverage", round(s.peakToAverage(), 4));
  }

  public static void table(SimulationReport report, PrintWriter out) {
    out.printf(
        Locale.ROOT,
        "%,d keys (%s), %d -> %d nodes, hash %s%n%n",
        report.keys(), report.keySource(), report.from(), report.to(), report.hash());
    out.printf(
        Locale.ROOT,
        "%-11s %11s %8s %9s %7s %12s %12s  %s%n",
        "strategy", "moved keys", "moved", "minimum", "x min", "p/a before", "p/a after", "what moved");
    for (SimulationReport.Result r : report.results()) {
      out.printf(
          Locale.ROOT,
          "%-11s %,11d %7.2f%% %8.2f%% %7s %12.3f %12.3f  %s%n",
          r.strategy().id(),
          r.moved(),
          100 * r.movedFraction(),
          100 * r.theoreticalFraction(),
          Double.isNaN(r.movedOverMinimum()) ? "-" : String.format(Locale.ROOT, "%.2f", r.movedOverMinimum()),
          r.before().peakToAverage(),
          r.after().peakToAverage(),
          structure(report, r));
    }
    out.printf(
        Locale.ROOT,
        "%nminimum: the least any balanced placement must move, |M-N|/max(N,M).%n"
            + "p/a: peak-to-average keys per node (1.000 is perfectly even).%n");
    for (SimulationReport.Result r : report.results()) {
      if (r.movedKeys() == null) {
        continue;
      }
      out.printf(Locale.ROOT, "%nmoved keys, %s (%,d):%n", r.strategy().id(), r.movedKeys().size());
      for (SimulationReport.MovedKey k : r.movedKeys()) {
        out.printf(Locale.ROOT, "  %s  %d -> %d%n", ByteStrings.toDisplay(k.key()), k.from(), k.to());
      }
    }
  }

  private static String structure(SimulationReport report, SimulationReport.Result r) {
    SimulationReport.Structure s = r.structure();
    if (s == null) {
      if (r.strategy() == Strategy.MOD) {
        return "every key re-placed mod " + report.to();
      }
      return report.to() >= report.from() ? "only keys won by new nodes" : "only keys of removed nodes";
    }
    String text = String.format(Locale.ROOT, "%,d of %,d %s", s.moved(), s.total(), s.unit());
    if (s.spaceFraction() != null) {
      text += String.format(Locale.ROOT, " (%.2f%% of hash space)", 100 * s.spaceFraction());
    }
    return text;
  }

  /**
   * CSV: one row per strategy; with moved keys listed, one row per moved key instead
   * ({@code strategy,key,from,to}).
   */
  public static void csv(SimulationReport report, PrintWriter out) {
    boolean listed = report.results().stream().anyMatch(r -> r.movedKeys() != null);
    if (listed) {
      out.println("strategy,key,from,to");
      for (SimulationReport.Result r : report.results()) {
        for (SimulationReport.MovedKey k : r.movedKeys()) {
          out.println(r.strategy().id() + "," + csvField(ByteStrings.toDisplay(k.key())) + "," + k.from() + "," + k.to());
        }
      }
      return;
    }
    out.println(
        "strategy,keys,from,to,moved,movedFraction,theoreticalFraction,"
            + "beforeMin,beforeMax,beforeMean,beforeStddev,beforePeakToAverage,"
            + "afterMin,afterMax,afterMean,afterStddev,afterPeakToAverage");
    for (SimulationReport.Result r : report.results()) {
      out.println(
          String.join(
              ",",
              r.strategy().id(),
              Long.toString(report.keys()),
              Integer.toString(report.from()),
              Integer.toString(report.to()),
              Long.toString(r.moved()),
              round(r.movedFraction(), 6).toPlainString(),
              round(r.theoreticalFraction(), 6).toPlainString(),
              csvStats(r.before()),
              csvStats(r.after())));
    }
  }

  private static String csvStats(LoadStats s) {
    return String.join(
        ",",
        Long.toString(s.min()),
        Long.toString(s.max()),
        round(s.mean(), 4).toPlainString(),
        round(s.stddev(), 4).toPlainString(),
        round(s.peakToAverage(), 4).toPlainString());
  }

  private static String csvField(String value) {
    if (value.contains(",") || value.contains("\"")) {
      return "\"" + value.replace("\"", "\"\"") + "\"";
    }
    return value;
  }

  private static BigDecimal round(double value, int places) {
    // new BigDecimal(double) is the exact binary value: no dependence on Double.toString, which
    // changed between JDK releases.
    return new BigDecimal(value).setScale(places, RoundingMode.HALF_EVEN).stripTrailingZeros();
  }
}
