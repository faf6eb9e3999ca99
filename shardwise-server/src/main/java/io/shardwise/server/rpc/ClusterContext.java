package io.shardwise.server.rpc;

import io.micrometer.core.instrument.MeterRegistry;
import io.shardwise.core.map.NodeId;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.shard.LocalShards;
import io.shardwise.server.storage.ShardStore;
import java.util.function.BooleanSupplier;

/**
 * What a request handler works with: who this process is (a node, or a router that owns nothing),
 * the map it has applied, ZooKeeper, its peers, and for a node its store and whether it may write.
 *
 * @param self this node's id, or {@code null} in a router
 * @param store this node's storage engine, or {@code null} in a router
 * @param shards the shards this node holds, the only way requests reach the store ({@code null} in a router)
 * @param writable false while the node is fenced (lost its ZooKeeper session)
 * @param metrics this process's meters (served by the admin API)
 * @param hooks test hooks on the request path ({@link RequestHooks#NONE} in production)
 * @param heat the hot keys of the shards this node owns, sampled on the request path ({@code null} in a router)
 */
public record ClusterContext(
    NodeId self, AppliedMap map, Coordinator coordinator, Peers peers, ShardStore store, LocalShards shards, Limits limits, BooleanSupplier writable,
    MeterRegistry metrics, RequestHooks hooks, io.shardwise.server.hot.ShardHeat heat) {

  public boolean isRouter() {
    return self == null;
  }

  /** The data address of a live node, or {@code null} if it is not live. */
  public String addressOf(NodeId node) {
    var info = coordinator.liveNodes().get(node);
    return info == null ? null : info.getAddress();
  }
}
