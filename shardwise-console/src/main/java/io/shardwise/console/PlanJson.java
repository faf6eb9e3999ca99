package io.shardwise.console;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
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
        .put("absentGraceSeconds", s.getAbsentGraceSeconds());
    ObjectNode tables = o.putObject("tableModes");
    new java.util.TreeMap<>(s.getTableModesMap()).forEach((t, m) -> tables.put(t, m.name().toLowerCase(Locale.ROOT)));
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
      if (m.hasProgress()) {
        MoveProgress pr = m.getProgress();
        mo.putObject("progress").put("phase", pr.getPhase().name().toLowerCase(Locale.ROOT)).put("copiedBytes", pr.getCopiedBytes())
            .put("totalBytes", pr.getTotalBytes()).put("caughtUpKeys", pr.getCaughtUpKeys()).put("pauseMicros", pr.getPauseMicros());
      }
      if (!m.getError().isEmpty()) {
        mo.put("error", m.getError());
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
