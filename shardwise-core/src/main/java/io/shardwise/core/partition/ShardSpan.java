package io.shardwise.core.partition;

/** The shards {@code first..last} (inclusive) of a range-partitioned table, in key order. */
public record ShardSpan(int first, int last) {

  public ShardSpan {
    if (first < 0 || last < first) {
      throw new IllegalArgumentException("invalid shard span " + first + ".." + last);
    }
  }

  public int count() {
    return last - first + 1;
  }
}
