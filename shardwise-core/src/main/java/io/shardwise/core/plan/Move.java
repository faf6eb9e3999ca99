package io.shardwise.core.plan;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardId;

/**
 * One change of where a shard lives, with what it carries. For a table of one replica: the shard
 * moves whole from one node to another. For a replicated table: one replica moves (a follower is
 * added on {@code to}, joins the in-sync set, takes over the lead if {@code from} led, and {@code
 * from} is removed), or, if {@code leadership}, only the lead passes from {@code from} to the
 * in-sync follower {@code to} and no data moves.
 */
public record Move(ShardId shard, NodeId from, NodeId to, long keys, long bytes, boolean leadership) {

  /** A move of data (the whole shard, or one replica of it). */
  public Move(ShardId shard, NodeId from, NodeId to, long keys, long bytes) {
    this(shard, from, to, keys, bytes, false);
  }
}
