package io.shardwise.bench;

import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import io.shardwise.server.node.ShardwiseRouter;
import io.shardwise.server.rpc.Limits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A cluster for one benchmark run ({@code shardwise bench --dev}): an embedded ZooKeeper, nodes
 * n1…nN and a router, in this process, on loopback ports chosen by the OS, data under a directory
 * of the caller's. Nodes can be added during the run (a rebalance under load).
 */
public final class EmbeddedCluster implements AutoCloseable {

  private final Path dir;
  private final EmbeddedZooKeeper zk;
  private final List<ShardwiseNode> nodes = new ArrayList<>();
  private final ShardwiseRouter router;
  private final java.util.function.UnaryOperator<NodeConfig> tune;

  public EmbeddedCluster(Path dir, int nodeCount) {
    this(dir, nodeCount, c -> c);
  }

  /**
   * @param tune changes every node's configuration from the defaults, to measure what a setting
   *     costs (hot-key sampling off, another read lease)
   */
  public EmbeddedCluster(Path dir, int nodeCount, java.util.function.UnaryOperator<NodeConfig> tune) {
    this.dir = dir;
    this.tune = tune;
    this.zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    try {
      for (int i = 1; i <= nodeCount; i++) {
        addNode();
      }
      this.router = ShardwiseRouter.start("router-1", "127.0.0.1", 0, zk.connectString(), Limits.DEFAULT);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Starts the next node, n(N+1). */
  public synchronized ShardwiseNode addNode() {
    int i = nodes.size() + 1;
    ShardwiseNode node = ShardwiseNode.start(tune.apply(NodeConfig.of(dir.resolve("n" + i), zk.connectString()).withId("n" + i)
        .withBalancerTick(Duration.ofMillis(500)).withDropGrace(Duration.ofSeconds(5))));
    nodes.add(node);
    return node;
  }

  /**
   * Stops node {@code id} for good (its process would be gone: it leaves ZooKeeper at once and
   * never returns in this run); its data stays in its directory.
   */
  public synchronized void stopNode(String id) {
    for (ShardwiseNode n : nodes) {
      if (n.id().value().equals(id)) {
        n.close();
        nodes.remove(n);
        return;
      }
    }
    throw new IllegalArgumentException("no running node " + id);
  }

  public String zk() {
    return zk.connectString();
  }

  public synchronized List<String> nodeAddresses() {
    return nodes.stream().map(ShardwiseNode::address).toList();
  }

  public String routerAddress() {
    return router.address();
  }

  public synchronized int size() {
    return nodes.size();
  }

  /** What the running nodes sent their followers so far, as leaders: append messages and the entries in them. */
  public synchronized io.shardwise.server.replication.Replicator.Sent replicationSent() {
    return nodes.stream().map(n -> n.replicator().sent())
        .reduce(io.shardwise.server.replication.Replicator.Sent.NONE, io.shardwise.server.replication.Replicator.Sent::plus);
  }

  @Override
  public synchronized void close() {
    if (router != null) {
      router.close();
    }
    nodes.forEach(ShardwiseNode::close);
    zk.close();
  }
}
