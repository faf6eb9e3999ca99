package io.shardwise.core.plan;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardId;

/** One shard moving whole from one node to another, with what it carries. */
public record Move(ShardId shard, NodeId from, NodeId to, long keys, long bytes) {}
