package io.shardwise.server.node;

import io.grpc.Server;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.AdminServiceImpl;
import io.shardwise.server.rpc.AppliedMap;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.DataServiceImpl;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.TableAdmin;
import java.time.Duration;

/**
 * The routing tier: holds no data, watches the map, and forwards every request to the owner of its
 * key's shard. Registers under {@code /shardwise/routers} so tools can find it.
 */
public final class ShardwiseRouter implements AutoCloseable {

  private final Coordinator coordinator;
  private final Peers peers;
  private final AppliedMap map = new AppliedMap();
  private Server server;
  private String address;

  private ShardwiseRouter(Coordinator coordinator, Peers peers) {
    this.coordinator = coordinator;
    this.peers = peers;
  }

  /** Starts a router listening on {@code host:port} (0: chosen by the OS). */
  public static ShardwiseRouter start(String id, String host, int port, String zk, Limits limits) {
    Coordinator coordinator = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(20));
    ShardwiseRouter router = new ShardwiseRouter(coordinator, new Peers(limits.maxMessageBytes()));
    try {
      ClusterContext ctx = new ClusterContext(null, router.map, coordinator, router.peers, null, null, limits, () -> true,
          new io.micrometer.core.instrument.simple.SimpleMeterRegistry(), io.shardwise.server.rpc.RequestHooks.NONE, null);
      TableAdmin tables = new TableAdmin(ctx);
      coordinator.watchMap(m -> router.map.advance(m));
      coordinator.onLiveNodesChange(router.peers::resetConnectBackoff);
      router.server = GrpcServers.start(host, port, limits.maxMessageBytes(), new DataServiceImpl(ctx, tables), new AdminServiceImpl(ctx, tables));
      router.address = host + ":" + router.server.getPort();
      coordinator.register(true, NodeInfo.newBuilder().setId(id).setAddress(router.address).build(), Duration.ofSeconds(20),
          Duration.ofSeconds(20));
      return router;
    } catch (RuntimeException e) {
      router.close();
      throw e;
    }
  }

  public String address() {
    return address;
  }

  @Override
  public void close() {
    coordinator.close();
    if (server != null) {
      GrpcServers.stop(server);
    }
    peers.close();
  }
}
