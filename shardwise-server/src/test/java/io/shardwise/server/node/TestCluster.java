package io.shardwise.server.node;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.rpc.Limits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** An embedded ZooKeeper, nodes n1..nN and a router, all on loopback ports chosen by the OS. */
final class TestCluster implements AutoCloseable {

  final Path dir;
  final EmbeddedZooKeeper zk;
  final List<ShardwiseNode> nodes = new ArrayList<>();
  final ShardwiseRouter router;
  private final Limits limits;
  private final List<ShardwiseClient> clients = new ArrayList<>();

  TestCluster(Path dir, int nodeCount, Limits limits) {
    this.dir = dir;
    this.limits = limits;
    this.zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    for (int i = 1; i <= nodeCount; i++) {
      nodes.add(startNode(i));
    }
    this.router = ShardwiseRouter.start("router-1", "127.0.0.1", 0, zk.connectString(), limits);
  }

  ShardwiseNode startNode(int i) {
    return startNode(i, c -> c);
  }

  /** Starts node {@code n<i>} with a fast balancer tick and a short drop grace, as {@code tweak} adjusts. */
  ShardwiseNode startNode(int i, java.util.function.UnaryOperator<NodeConfig> tweak) {
    NodeConfig config = NodeConfig.of(dir.resolve("n" + i), zk.connectString()).withId("n" + i).withLimits(limits)
        .withBalancerTick(Duration.ofMillis(200)).withDropGrace(Duration.ofSeconds(1));
    return ShardwiseNode.start(tweak.apply(config));
  }

  /**
   * Asks {@code source} to move shard {@code shard} of {@code table} to node {@code to}, as the
   * balancer would, and returns the move's last progress report.
   */
  static io.shardwise.proto.v1.MoveProgress moveShard(ShardwiseNode source, io.shardwise.core.map.Table table,
      io.shardwise.core.map.ShardAssignment shard, String to, String moveId) throws InterruptedException {
    return moveShard(source, table, shard, to, moveId, 0);
  }

  /** {@link #moveShard}, its snapshot sent at most {@code bytesPerSecond} (0: as fast as it goes). */
  static io.shardwise.proto.v1.MoveProgress moveShard(ShardwiseNode source, io.shardwise.core.map.Table table,
      io.shardwise.core.map.ShardAssignment shard, String to, String moveId, long bytesPerSecond) throws InterruptedException {
    var request = io.shardwise.proto.v1.MoveShardRequest.newBuilder().setMoveId(moveId).setTable(table.name()).setTableId(table.id())
        .setNumber(shard.id().number()).setTo(to).setShardEpoch(shard.epoch()).setBandwidthBytesPerSecond(bytesPerSecond).build();
    io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forTarget(source.address()).usePlaintext().build();
    try {
      io.shardwise.proto.v1.MoveProgress last = null;
      for (var it = io.shardwise.proto.v1.MoveServiceGrpc.newBlockingStub(channel).moveShard(request); it.hasNext(); ) {
        last = it.next();
      }
      return last;
    } finally {
      channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  ShardwiseNode node(String id) {
    return nodes.stream().filter(n -> n.id().value().equals(id)).findFirst().orElseThrow();
  }

  ShardwiseClient client(Routing routing) {
    return client(routing, b -> b);
  }

  /** A client of this cluster, built with {@code options} besides its routing and seeds; closed with the cluster. */
  ShardwiseClient client(Routing routing, java.util.function.UnaryOperator<ShardwiseClient.Builder> options) {
    List<String> seeds = new ArrayList<>();
    if (routing == Routing.ROUTER) {
      seeds.add(router.address());
    } else {
      nodes.forEach(n -> seeds.add(n.address()));
    }
    ShardwiseClient c = options.apply(ShardwiseClient.builder().routing(routing).seeds(seeds)).build();
    clients.add(c);
    return c;
  }

  @Override
  public void close() {
    clients.forEach(ShardwiseClient::close);
    router.close();
    nodes.forEach(ShardwiseNode::close);
    zk.close();
  }
}
