package io.shardwise.console;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** An embedded ZooKeeper, nodes n1..nN and a console, all on loopback ports chosen by the OS. */
final class LocalCluster implements AutoCloseable {

  final Path dir;
  final EmbeddedZooKeeper zk;
  final List<ShardwiseNode> nodes = new ArrayList<>();
  final Console console;
  private final List<ShardwiseClient> clients = new ArrayList<>();

  LocalCluster(Path dir, int nodeCount) {
    this.dir = dir;
    this.zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    for (int i = 1; i <= nodeCount; i++) {
      addNode(i);
    }
    this.console = Console.start("127.0.0.1", 0, zk.connectString());
  }

  /** Starts node {@code n<i>} with a fast balancer tick and a short drop grace. */
  ShardwiseNode addNode(int i) {
    ShardwiseNode node = ShardwiseNode.start(NodeConfig.of(dir.resolve("n" + i), zk.connectString()).withId("n" + i)
        .withBalancerTick(Duration.ofMillis(200)).withDropGrace(Duration.ofSeconds(1)));
    nodes.add(node);
    return node;
  }

  ShardwiseClient client() {
    List<String> seeds = new ArrayList<>();
    nodes.forEach(n -> seeds.add(n.address()));
    ShardwiseClient c = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(seeds).build();
    clients.add(c);
    return c;
  }

  @Override
  public void close() {
    clients.forEach(ShardwiseClient::close);
    console.close();
    nodes.forEach(ShardwiseNode::close);
    zk.close();
  }
}
