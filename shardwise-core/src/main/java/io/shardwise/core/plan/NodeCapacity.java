package io.shardwise.core.plan;

import io.shardwise.core.map.NodeId;

/**
 * A live node as the planner sees it: its weight (relative capacity; a node of weight 2 should
 * hold twice the shards of a node of weight 1) and whether an operator is draining it.
 */
public record NodeCapacity(NodeId node, double weight, boolean draining) {

  public NodeCapacity {
    if (!(weight > 0) || Double.isInfinite(weight)) {
      throw new IllegalArgumentException("node " + node + ": weight must be positive and finite, not " + weight);
    }
  }

  public static NodeCapacity of(String node) {
    return new NodeCapacity(NodeId.of(node), 1.0, false);
  }
}
