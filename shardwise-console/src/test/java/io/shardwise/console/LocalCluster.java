package io.shardwise.console;

import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The bench's embedded cluster (ZooKeeper, nodes n1..nN, a router; OS-chosen ports) with a console. */
final class LocalCluster implements AutoCloseable {

  final EmbeddedCluster cluster;
  final Console console;
  private final List<ShardwiseClient> clients = new ArrayList<>();

  LocalCluster(Path dir, int nodeCount) {
    this.cluster = new EmbeddedCluster(dir, nodeCount);
    this.console = Console.start("127.0.0.1", 0, cluster.zk());
  }

  /** Starts the next node, n(N+1). */
  void addNode() {
    cluster.addNode();
  }

  int size() {
    return cluster.size();
  }

  ShardwiseClient client() {
    ShardwiseClient c = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(cluster.nodeAddresses()).build();
    clients.add(c);
    return c;
  }

  @Override
  public void close() {
    clients.forEach(ShardwiseClient::close);
    console.close();
    cluster.close();
  }
}
