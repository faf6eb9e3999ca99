package io.shardwise.core.map;

/** What a node does with a request, decided by {@link ShardMap#route}. Each carries the node's map epoch. */
public sealed interface Route permits Route.Serve, Route.WrongShard, Route.MapBehind, Route.NoSuchTable {

  long mapEpoch();

  /** This node owns the key's shard: serve it. */
  record Serve(long mapEpoch, ShardAssignment shard) implements Route {}

  /** Another node owns the key's shard: refuse, naming the owner this node knows. */
  record WrongShard(long mapEpoch, ShardId shard, NodeId ownerHint) implements Route {}

  /** The caller's map is newer than this node's: refuse until this node catches up. */
  record MapBehind(long mapEpoch, long requestEpoch) implements Route {}

  /** No such table in this node's map. */
  record NoSuchTable(long mapEpoch, String table) implements Route {}
}
