package io.shardwise.core.plan;

/**
 * What a shard holds, as last measured: keys and bytes, and the requests per second it served
 * lately (0 if not measured), which the planner uses so that evening out bytes and counts never
 * makes a node much busier than the one it takes a shard from. {@code rateSettled}: the rate is a
 * mean over the whole window on its current owner (a shard just moved or split has a short
 * history there, and the planner does not move shards for load until every rate is settled).
 */
public record ShardSize(long keys, long bytes, double requestsPerSecond, boolean rateSettled) {

  public static final ShardSize UNKNOWN = new ShardSize(0, 0);

  public ShardSize {
    if (keys < 0 || bytes < 0 || !(requestsPerSecond >= 0) || Double.isInfinite(requestsPerSecond)) {
      throw new IllegalArgumentException("shard sizes must not be negative");
    }
  }

  /** Sizes without a rate. */
  public ShardSize(long keys, long bytes) {
    this(keys, bytes, 0, false);
  }

  /** Sizes with a settled rate. */
  public ShardSize(long keys, long bytes, double requestsPerSecond) {
    this(keys, bytes, requestsPerSecond, true);
  }
}
