package io.shardwise.server.move;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.Errors;
import io.shardwise.server.coordination.MapStore;
import io.shardwise.server.rpc.AppliedMap;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.shard.LocalShards;
import io.shardwise.server.storage.ShardEngine;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * What a move needs of the node it runs on, as the source or as the destination: no gRPC and no
 * ZooKeeper here, only their interfaces, so the move protocol runs unchanged in a node and in the
 * deterministic move simulation.
 *
 * @param map the map this node has applied (requests are routed by it)
 * @param maps the stored map: the cutover's compare-and-set and the read that decides an outcome
 * @param applyMap installs a newer map on this node (local shards first, then {@code map})
 * @param writable false while the node is fenced (lost its ZooKeeper session)
 * @param sleep waits between attempts to read the map ({@code Thread.sleep} in a node; the
 *     simulation's clock in the simulation)
 * @param workDir where snapshots are written and received
 */
record MoveNode(
    NodeId self, AppliedMap map, LocalShards shards, ShardEngine store, MapStore maps, Consumer<ShardMap> applyMap,
    BooleanSupplier writable, RequestHooks hooks, LongConsumer sleep, Path workDir) {

  /**
   * Shard {@code number} of table {@code tableId} as the store lays it out, by this node's map, or
   * by the stored map if this node has not seen the shard yet (a shard's span never changes, so
   * any map that has it gives the same one).
   *
   * @throws io.grpc.StatusRuntimeException INVALID_ARGUMENT if no map has the shard
   */
  io.shardwise.server.storage.ShardRef shardRef(long tableId, long number) {
    java.util.Optional<io.shardwise.core.map.Table> table = map.current().tableById(tableId).filter(t -> t.positionOf(number) >= 0);
    if (table.isEmpty()) {
      ShardMap stored = maps.syncedMap();
      table = stored.tableById(tableId).filter(t -> t.positionOf(number) >= 0);
    }
    return table.map(t -> io.shardwise.server.storage.ShardRef.of(t, number))
        .orElseThrow(() -> Errors.invalid("no shard " + number + " of table id " + tableId + " in the map"));
  }

  /** The replicas per shard of table {@code tableId} in this node's map (1 if it has no such table). */
  int replicationFactor(long tableId) {
    return map.current().tableById(tableId).map(t -> t.replication().factor()).orElse(1);
  }

  static MoveNode of(ClusterContext ctx, Consumer<ShardMap> applyMap, Path workDir) {
    return new MoveNode(ctx.self(), ctx.map(), ctx.shards(), ctx.store(), ctx.coordinator(), applyMap, ctx.writable(), ctx.hooks(),
        MoveNode::sleepQuietly, workDir);
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
