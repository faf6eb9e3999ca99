package io.shardwise.core.plan;

import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import java.util.List;

/**
 * A rebalance plan for one table, computed against the map at {@code baseEpoch}: the moves, what
 * they cost, and how balanced the table is after them. A plan with no moves may carry a
 * {@code note} saying why (already balanced; a strategy that cannot move incrementally).
 */
public record Plan(String table, long baseEpoch, List<Move> moves, Forecast forecast, String note) {

  public Plan {
    moves = List.copyOf(moves);
  }

  /**
   * What moving and balance look like: bytes moved against the least any balanced placement must
   * move, and peak-to-average shard count and bytes per node after the plan (1.0 is perfect).
   */
  public record Forecast(
      long movedKeys, long movedBytes, long totalBytes, double movedFraction, double minimumFraction,
      double shardPeakToAverageAfter, double bytesPeakToAverageAfter) {}

  /**
   * The plan as one delta of ownership changes (each move's {@code from} must still own the
   * shard, so a plan that went stale is refused when applied).
   *
   * @throws IllegalStateException if the map is not at the plan's base epoch
   */
  public ShardMapDelta toDelta(ShardMap map) {
    if (map.epoch() != baseEpoch) {
      throw new IllegalStateException("plan for " + table + " was made at map epoch " + baseEpoch + "; the map is at " + map.epoch());
    }
    ShardMapDelta.Builder b = ShardMapDelta.on(map);
    moves.forEach(m -> b.moveShard(m.shard(), m.from(), m.to()));
    return b.build();
  }
}
