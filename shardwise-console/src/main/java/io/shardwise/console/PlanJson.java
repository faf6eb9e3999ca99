package io.shardwise.console;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import java.util.Locale;

/**
 * Rebalancing plans and balancer settings as JSON: what {@code shardwise rebalance ... -o json}
 * prints and {@code /api/v1/plans} returns.
 */
public final class PlanJson {

  private static final ObjectMapper JSON = new ObjectMapper();

  private PlanJson() {}

  public static void settings(ObjectNode o, BalancerSettings s) {
    o.put("mode", s.getMode().name().toLowerCase(Locale.ROOT)).put("paused", s.getPaused()).put("maxMovesPerNode", s.getMaxMovesPerNode())
        .put("bandwidthBytesPerSecond", s.getBandwidthBytesPerSecond()).put("autoMaxFraction", s.getAutoMaxFraction())
        .put("absentGraceSeconds", s.getAbsentGraceSeconds())
        .put("splitBytes", RebalanceRecords.splitBytesOf(s, "")).put("splitRequestsPerSecond", RebalanceRecords.splitRpsOf(s, ""))
        .put("splitRateSeconds", RebalanceRecords.splitRpsSeconds(s)).put("mergeFraction", RebalanceRecords.mergeFraction(s))
        .put("mergeSeconds", RebalanceRecords.mergeSeconds(s));
    ObjectNode tables = o.putObject("tableModes");
    new java.util.TreeMap<>(s.getTableModesMap()).forEach((t, m) -> tables.put(t, m.name().toLowerCase(Locale.ROOT)));
  }

  /** A table's split and merge policy as it applies (-1: off). */
  public static void policy(ObjectNode o, BalancerSettings s, String table) {
    o.put("mode", RebalanceRecords.modeOf(s, table).name().toLowerCase(Locale.ROOT))
        .put("splitBytes", RebalanceRecords.splitBytesOf(s, table)).put("splitRequestsPerSecond", RebalanceRecords.splitRpsOf(s, table))
        .put("splitRateSeconds", RebalanceRecords.splitRpsSeconds(s)).put("mergeFraction", RebalanceRecords.mergeFraction(s))
        .put("mergeSeconds", RebalanceRecords.mergeSeconds(s));
  }

  public static ObjectNode plan(PlanRecord p) {
    ObjectNode o = JSON.createObjectNode();
    if (!p.getId().isEmpty()) {
      o.put("id", p.getId());
    }
    o.put("state", Rebalancing.describe(p.getState())).put("baseEpoch", p.getBaseEpoch()).put("reason", p.getReason());
    if (p.getNeedsApproval()) {
      o.put("needsApproval", true);
    }
    if (!p.getError().isEmpty()) {
      o.put("error", p.getError());
    }
    ArrayNode moves = o.putArray("moves");
    for (MoveRecord m : p.getMovesList()) {
      ObjectNode mo = moves.addObject().put("shard", m.getTable() + "/" + m.getNumber()).put("from", m.getFrom()).put("to", m.getTo())
          .put("keys", m.getKeys()).put("bytes", m.getBytes()).put("state", m.getState().name().toLowerCase(Locale.ROOT))
          .put("attempts", m.getAttempts());
      if (m.getSourceAbsent()) {
        mo.put("sourceAbsent", true);
      }
      if (m.getReplica()) {
        mo.put("kind", m.getLeadership() ? "lead" : "replica");
      }
      if (m.hasProgress()) {
        MoveProgress pr = m.getProgress();
        mo.putObject("progress").put("phase", pr.getPhase().name().toLowerCase(Locale.ROOT)).put("copiedBytes", pr.getCopiedBytes())
            .put("totalBytes", pr.getTotalBytes()).put("caughtUpKeys", pr.getCaughtUpKeys()).put("pauseMicros", pr.getPauseMicros());
      }
      if (!m.getError().isEmpty()) {
        mo.put("error", m.getError());
      }
    }
    if (p.getResizesCount() > 0) {
      ArrayNode resizes = o.putArray("resizes");
      for (ResizeRecord r : p.getResizesList()) {
        ObjectNode ro = resizes.addObject().put("kind", r.getKind().name().toLowerCase(Locale.ROOT)).put("table", r.getTable())
            .put("shard", r.getNumber()).put("owner", r.getOwner()).put("bytes", r.getBytes())
            .put("requestsPerSecond", r.getRequestsPerSecond()).put("why", r.getWhy())
            .put("state", r.getState().name().toLowerCase(Locale.ROOT));
        if (r.getKind() == ResizeRecord.Kind.MERGE) {
          ro.put("rightShard", r.getRightNumber());
        } else if (r.getKind() == ResizeRecord.Kind.SALT || r.getKind() == ResizeRecord.Kind.UNSALT) {
          ro.put("hotKey", new String(r.getHotKey().toByteArray(), java.nio.charset.StandardCharsets.UTF_8))
              .put("saltFanout", r.getSaltFanout()).put("keyRequestsPerSecond", r.getKeyRequestsPerSecond());
        } else if (r.getKind() == ResizeRecord.Kind.ISOLATE) {
          ro.put("hotKey", new String(r.getHotKey().toByteArray(), java.nio.charset.StandardCharsets.UTF_8))
              .put("isolateTo", r.getIsolateTo()).put("keyRequestsPerSecond", r.getKeyRequestsPerSecond())
              .put("fromRequestsPerSecond", r.getFromRequestsPerSecond()).put("toRequestsPerSecond", r.getToRequestsPerSecond());
        } else if (r.getBySize()) {
          ro.put("bySize", true);
        } else if (r.getHasAtHash()) {
          ro.put("atHash", Long.toUnsignedString(r.getAtHash()));
        } else {
          ro.put("atPartitionKey", new String(r.getAtPartitionKey().toByteArray(), java.nio.charset.StandardCharsets.UTF_8));
        }
        if (r.getKind() == ResizeRecord.Kind.SPLIT && !r.getUpperTo().isEmpty()) {
          ro.put("upperTo", r.getUpperTo()).put("upperRequestsPerSecond", r.getKeyRequestsPerSecond())
              .put("fromRequestsPerSecond", r.getFromRequestsPerSecond()).put("toRequestsPerSecond", r.getToRequestsPerSecond());
        }
        ArrayNode made = ro.putArray("resultShards");
        r.getResultNumbersList().forEach(made::add);
        if (!r.getError().isEmpty()) {
          ro.put("error", r.getError());
        }
      }
    }
    if (p.getFinishedMillis() > 0 && p.getStartedMillis() > 0) {
      o.putObject("report").put("movesCutOver", p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.DONE).count())
          .put("movedKeys", p.getReportMovedKeys()).put("movedBytes", p.getReportMovedBytes())
          .put("durationMillis", p.getFinishedMillis() - p.getStartedMillis())
          .put("longestWritePauseMicros", p.getReportLongestPauseMicros());
    }
    o.putObject("balanceBefore").put("shardPeakToAverage", p.getShardPeakToAverageBefore())
        .put("bytesPeakToAverage", p.getBytesPeakToAverageBefore()).put("bytesWorstShareDeviation", p.getBytesWorstShareDeviationBefore());
    o.putObject("forecast").put("movedBytes", p.getMovedBytes()).put("totalBytes", p.getTotalBytes())
        .put("movedFraction", p.getMovedFraction()).put("minimumFraction", p.getMinimumFraction())
        .put("shardPeakToAverageAfter", p.getShardPeakToAverageAfter()).put("bytesPeakToAverageAfter", p.getBytesPeakToAverageAfter())
        .put("bytesWorstShareDeviationAfter", p.getBytesWorstShareDeviationAfter());
    ArrayNode notes = o.putArray("notes");
    p.getNotesList().forEach(notes::add);
    return o;
  }
}
