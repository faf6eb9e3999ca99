package io.shardwise.core.map;

/**
 * Who owns a shard, and since when: {@code epoch} is the map epoch at which the current owner got
 * the shard. It only rises; every ownership change raises it.
 */
public record ShardAssignment(ShardId id, NodeId owner, long epoch) {

  public ShardAssignment {
    if (epoch < 1) {
      throw new IllegalArgumentException("shard epoch must be at least 1, not " + epoch);
    }
  }

  ShardAssignment movedTo(NodeId newOwner, long newEpoch) {
    return new ShardAssignment(id, newOwner, newEpoch);
  }
}
