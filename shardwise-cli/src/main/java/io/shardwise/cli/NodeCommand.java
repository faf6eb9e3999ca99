package io.shardwise.cli;

import io.shardwise.console.Console;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise node}: run one node until Ctrl-C. */
@Command(
    name = "node",
    mixinStandardHelpOptions = true,
    description = {
      "Run a node: its shards in RocksDB under --data-dir, registered in ZooKeeper.",
      "With the dev cluster running, `shardwise node --data-dir data/dev/n4` joins it on a free port."
    },
    footer = {"", "Production: shardwise node --zk zk1:2181,zk2:2181,zk3:2181 --data-dir /var/lib/shardwise --listen 10.0.0.5:7101"},
    subcommands = {DrainCommand.class, DrainCommand.Undrain.class, TrashCommand.class})
final class NodeCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--zk", paramLabel = "HOSTS", description = "ZooKeeper connect string. Default: $SHARDWISE_ZK or 127.0.0.1:2181.")
  String zk;

  @Option(names = "--data-dir", paramLabel = "DIR", description = "Where the node keeps its data and its id. Required.")
  Path dataDir;

  @Option(names = "--listen", paramLabel = "HOST:PORT",
      description = "Address to serve on. Without a port (or without --listen): the port this data directory served on last, if free, else a free one; the host defaults to 127.0.0.1.")
  String listen;

  @Option(names = "--id", paramLabel = "ID", description = "Node id. Default: kept in the data directory; on first start the first nN the cluster has not had.")
  String id;

  @Option(names = "--label", paramLabel = "KEY=VALUE", description = "A label such as zone=a or capacity=2; repeatable.")
  Map<String, String> labels = new LinkedHashMap<>();

  @Option(names = "--sync-writes", description = "fsync the write-ahead log on every write.")
  boolean syncWrites;

  @Option(names = "--power-loss-on-crash", hidden = true,
      description = "Fault tests, with --sync-writes: writes that skip the fsync stay in the process, so kill -9 loses them as a "
          + "power loss would.")
  boolean powerLossOnCrash;

  @Option(names = "--drop-grace", paramLabel = "DURATION", defaultValue = "30s",
      description = "How long a shard that moved away stays in place (not served) before it goes to the trash. Default: ${DEFAULT-VALUE}.")
  String dropGrace;

  @Option(names = "--trash-grace", paramLabel = "DURATION", defaultValue = "24h",
      description = "How long trashed copies (shards moved away, foreign data, dropped tables) are kept before they are purged. "
          + "Default: ${DEFAULT-VALUE}.")
  String trashGrace;

  @Option(names = "--tombstone-grace", paramLabel = "DURATION", defaultValue = "24h",
      description = "How long a deleted key's tombstone is kept before it is purged (versions never repeat after a purge). "
          + "Keep it at least --trash-grace. Default: ${DEFAULT-VALUE}.")
  String tombstoneGrace;

  @Option(names = "--session-timeout", paramLabel = "DURATION", defaultValue = "10s",
      description = "ZooKeeper session timeout: how long a node may be cut off (or dead) before its shards' owner is gone from "
          + "ZooKeeper. Default: ${DEFAULT-VALUE}.")
  String sessionTimeout;

  @Option(names = "--txn-timeout", paramLabel = "DURATION", defaultValue = "5s",
      description = "How long a transaction this node coordinates may stay undecided; past it, a read or write that meets one of its "
          + "locks aborts it (so a coordinator that dies holds its keys about this long). Default: ${DEFAULT-VALUE}.")
  String txnTimeout;

  @Option(names = "--read-lease", paramLabel = "DURATION", defaultValue = "0",
      description = "How long a follower's answer lets its shard's leader serve linearizable reads without asking the followers "
          + "again; a new leader waits this long before it serves. Safe while the nodes' clocks run at rates within 10%% of each "
          + "other and none stands still while it runs (a suspended machine); 0 turns it off: every leader read then waits for "
          + "a round to the followers and rests on no clock. Longer than the replication heartbeat (100ms), shorter than its "
          + "lag max (5s); 500ms is a good value. Default: ${DEFAULT-VALUE} (off).")
  String readLease;

  @Option(names = "--adopt-cluster",
      description = "Let a data directory that holds data but no cluster id join the cluster this ZooKeeper holds; "
          + "shards it does not own go to its trash.")
  boolean adoptCluster;

  @Option(names = "--console-port", paramLabel = "PORT", description = "Also serve the web console on this port of the --listen host.")
  Integer consolePort;

  @Option(names = "--metrics-port", paramLabel = "PORT",
      description = "Serve Prometheus text on http://HOST:PORT/metrics (HOST: the --listen host; 0: a free port). Default: none.")
  Integer metricsPort;

  @Override
  public Integer call() {
    if (dataDir == null) {
      throw new IllegalArgumentException("--data-dir is required to run a node (e.g. --data-dir data/dev/n4)");
    }
    String[] hp = listen == null ? new String[] {"127.0.0.1", "0"} : Ports.hostAndPort(listen);
    int port = Integer.parseInt(hp[1]);
    Ports.requireFree(hp[0], port, "--listen");
    if (port == 0) {
      port = Ports.previousPort(dataDir, hp[0]);
    }
    if (consolePort != null) {
      Ports.requireFree(hp[0], consolePort, "--console-port");
    }
    if (metricsPort != null) {
      TableCommand.inRange("--metrics-port", metricsPort, 0, 65_535);
      Ports.requireFree(hp[0], metricsPort, "--metrics-port");
    }
    NodeConfig config = NodeConfig.of(dataDir, ClusterOptions.zkOrDefault(zk)).withId(id).withLabels(labels).withHost(hp[0])
        .withPort(port).withSyncWrites(syncWrites).withPowerLossOnCrash(powerLossOnCrash).withDropGrace(Durations.parse("--drop-grace", dropGrace))
        .withTrashGrace(Durations.parse("--trash-grace", trashGrace))
        .withTombstoneGrace(Durations.parse("--tombstone-grace", tombstoneGrace)).withAdoptCluster(adoptCluster)
        .withSessionTimeout(Durations.parse("--session-timeout", sessionTimeout))
        .withTxnTimeout(Durations.parse("--txn-timeout", txnTimeout))
        .withMetricsPort(metricsPort == null ? -1 : metricsPort);
    config = config.withReplication(config.replication().withReadLease(readLease(readLease)));
    ShardwiseNode node = ShardwiseNode.start(config);
    Ports.rememberPort(dataDir, Integer.parseInt(node.address().substring(node.address().lastIndexOf(':') + 1)));
    Console console;
    try {
      console = consolePort == null ? null : Console.start(hp[0], consolePort, config.zk());
    } catch (RuntimeException e) {
      node.close();
      throw e;
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println("node " + node.id() + " serving on " + node.address() + " (ZooKeeper " + config.zk() + ", data " + dataDir + "); Ctrl-C stops it");
    if (console != null) {
      out.println("console on " + console.url());
    }
    out.flush();
    if (console != null) {
      Waiting.untilInterrupted(console, node);
    } else {
      Waiting.untilInterrupted(node);
    }
    return Main.EXIT_OK;
  }

  /** A --read-lease value: 0 or a duration the replication settings accept (they name the bounds if not). */
  static Duration readLease(String text) {
    Duration lease = text.trim().equals("0") ? Duration.ZERO : Durations.parse("--read-lease", text);
    try {
      io.shardwise.server.replication.ReplicationConfig.DEFAULT.withReadLease(lease);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--read-lease: " + e.getMessage());
    }
    return lease;
  }
}
