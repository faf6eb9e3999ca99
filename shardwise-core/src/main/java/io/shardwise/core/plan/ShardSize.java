package io.shardwise.core.plan;

/** What a shard holds, as last measured: keys and bytes. */
public record ShardSize(long keys, long bytes) {

  public static final ShardSize UNKNOWN = new ShardSize(0, 0);

  public ShardSize {
    if (keys < 0 || bytes < 0) {
      throw new IllegalArgumentException("shard sizes must not be negative");
    }
  }
}
