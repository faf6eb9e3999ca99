package io.shardwise.server.node;

import io.grpc.ServerInterceptor;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.rpc.Limits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How to run a node.
 *
 * @param id the node id, or {@code null} to use the one kept in the data directory (a new one is
 *     made on first start)
 * @param dataDir where the node keeps its RocksDB data and its id
 * @param host the address to listen on and advertise
 * @param port the data/admin port; 0 lets the OS choose
 * @param zk ZooKeeper connect string ({@code host:port,host:port})
 * @param labels free-form labels (zone, region, capacity) advertised in ZooKeeper
 * @param syncWrites fsync the write-ahead log on every write
 */
public record NodeConfig(
    String id, Path dataDir, String host, int port, String zk, Map<String, String> labels, Limits limits,
    boolean syncWrites, Duration sessionTimeout, Duration dropGrace, Duration balancerTick,
    Consumer<MoveProgress> moveListener, List<ServerInterceptor> interceptors) {

  public NodeConfig {
    labels = Map.copyOf(labels);
    interceptors = List.copyOf(interceptors);
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be in [0, 65535], not " + port);
    }
  }

  /** Defaults for everything but where to keep data and which ZooKeeper to use. */
  public static NodeConfig of(Path dataDir, String zk) {
    return new NodeConfig(null, dataDir, "127.0.0.1", 0, zk, Map.of(), Limits.DEFAULT, false, Duration.ofSeconds(10),
        Duration.ofSeconds(30), Duration.ofSeconds(1), p -> {},
        List.of());
  }

  public NodeConfig withId(String newId) {
    return new NodeConfig(newId, dataDir, host, port, zk, labels, limits, syncWrites, sessionTimeout, dropGrace, balancerTick, moveListener, interceptors);
  }

  public NodeConfig withPort(int newPort) {
    return new NodeConfig(id, dataDir, host, newPort, zk, labels, limits, syncWrites, sessionTimeout, dropGrace, balancerTick, moveListener, interceptors);
  }

  public NodeConfig withLimits(Limits newLimits) {
    return new NodeConfig(id, dataDir, host, port, zk, labels, newLimits, syncWrites, sessionTimeout, dropGrace, balancerTick, moveListener, interceptors);
  }

  /** How long a node keeps the data of a shard that moved away before dropping it. */
  public NodeConfig withDropGrace(Duration newGrace) {
    return new NodeConfig(id, dataDir, host, port, zk, labels, limits, syncWrites, sessionTimeout, newGrace, balancerTick, moveListener, interceptors);
  }

  /** How often the balancer (on the node that leads it) looks at the cluster. */
  public NodeConfig withBalancerTick(Duration newTick) {
    return new NodeConfig(id, dataDir, host, port, zk, labels, limits, syncWrites, sessionTimeout, dropGrace, newTick, moveListener, interceptors);
  }

  /**
   * Called by this node, as a move's source, with every progress report, on the moving thread
   * (before the balancer hears of it): for logs and for tests that act at a given phase.
   */
  public NodeConfig withMoveListener(Consumer<MoveProgress> listener) {
    return new NodeConfig(id, dataDir, host, port, zk, labels, limits, syncWrites, sessionTimeout, dropGrace, balancerTick, listener, interceptors);
  }

  /** Adds a gRPC interceptor in front of every service of the node (auth, metrics, fault injection). */
  public NodeConfig withInterceptor(ServerInterceptor interceptor) {
    List<ServerInterceptor> more = new ArrayList<>(interceptors);
    more.add(interceptor);
    return new NodeConfig(id, dataDir, host, port, zk, labels, limits, syncWrites, sessionTimeout, dropGrace, balancerTick, moveListener, more);
  }

  public NodeConfig withLabels(Map<String, String> newLabels) {
    return new NodeConfig(id, dataDir, host, port, zk, newLabels, limits, syncWrites, sessionTimeout, dropGrace, balancerTick, moveListener, interceptors);
  }
}
