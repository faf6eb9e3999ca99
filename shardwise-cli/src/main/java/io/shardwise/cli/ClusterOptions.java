package io.shardwise.cli;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.Coordinator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * How a command finds the cluster: ZooKeeper ({@code --zk}, else {@code SHARDWISE_ZK}, else the dev
 * cluster's {@code 127.0.0.1:2181}) lists the live nodes and routers, and {@code --via} picks the
 * routing mode.
 */
final class ClusterOptions {

  static final String DEFAULT_ZK = "127.0.0.1:2181";

  @Option(names = "--zk", paramLabel = "HOSTS", description = "ZooKeeper connect string. Default: $SHARDWISE_ZK or " + DEFAULT_ZK + ".")
  String zk;

  @Option(names = "--via", paramLabel = "MODE", description = "Routing: client (shard-aware, default), router, or node.", defaultValue = "client")
  String via;

  String zk() {
    return zkOrDefault(zk);
  }

  static String zkOrDefault(String given) {
    if (given != null && !given.isBlank()) {
      return given;
    }
    String env = System.getenv("SHARDWISE_ZK");
    return env == null || env.isBlank() ? DEFAULT_ZK : env;
  }

  /**
   * The ZooKeeper session of this command line (or shell) for {@code zk}: shared, never closed by
   * the command that uses it ({@link Session}).
   *
   * @throws CliException (unavailable) naming the address when ZooKeeper cannot be reached
   */
  static Coordinator coordinator(String zk) {
    String connect = zkOrDefault(zk);
    return Session.current().coordinator(connect, () -> connectCoordinator(connect));
  }

  /** A new ZooKeeper session of the caller's own, to close when done. */
  static Coordinator connectCoordinator(String zk) {
    String connect = zkOrDefault(zk);
    try {
      return Coordinator.connect(connect, Duration.ofSeconds(10), Duration.ofSeconds(5));
    } catch (CoordinationException e) {
      throw CliException.unavailable(e.getMessage() + " (is a cluster running? start one with: ./shardwise dev)", e);
    }
  }

  Routing routing() {
    return routing(via);
  }

  /** A routing mode from its --via name. */
  static Routing routing(String via) {
    switch (via) {
      case "client":
        return Routing.CLIENT;
      case "router":
        return Routing.ROUTER;
      case "node":
        return Routing.NODE;
      default:
        throw new IllegalArgumentException("--via must be client, router or node, not '" + via + "'");
    }
  }

  /**
   * The client of this command line (or shell) for the cluster, found through ZooKeeper: shared,
   * never closed by the command that uses it ({@link Session}).
   *
   * @throws CliException (unavailable) naming the address when ZooKeeper or the cluster cannot be reached
   */
  ShardwiseClient connect() {
    return connect(null);
  }

  /**
   * A client of the cluster; {@code followerStaleness} non-null: its reads of replicated tables may
   * be answered by followers at most that stale ({@link ShardwiseClient.Builder#readFromFollowers}).
   */
  ShardwiseClient connect(java.time.Duration followerStaleness) {
    Routing routing = routing();
    return Session.current().client(zk() + " " + routing + " " + followerStaleness, () -> {
      List<String> seeds = new ArrayList<>();
      try {
        Coordinator zkClient = coordinator(zk());
        Map<NodeId, NodeInfo> targets = routing == Routing.ROUTER ? zkClient.liveRoutersNow() : zkClient.liveNodesNow();
        targets.values().forEach(n -> seeds.add(n.getAddress()));
      } catch (CoordinationException e) {
        throw CliException.unavailable(e.getMessage() + " (is a cluster running? start one with: ./shardwise dev)", e);
      }
      if (seeds.isEmpty()) {
        throw CliException.unavailable("no live " + (routing == Routing.ROUTER ? "router" : "node") + " is registered in ZooKeeper at "
            + zk() + (routing == Routing.ROUTER ? " (start one with: shardwise router)" : " (start one with: shardwise node)"), null);
      }
      ShardwiseClient.Builder b = ShardwiseClient.builder().routing(routing).seeds(seeds);
      if (followerStaleness != null) {
        b.readFromFollowers(followerStaleness);
      }
      return b.build();
    });
  }
}
