package io.shardwise.cli;

import io.shardwise.console.Console;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import io.shardwise.server.node.ShardwiseRouter;
import io.shardwise.server.rpc.Limits;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise dev}: an embedded ZooKeeper, N nodes and a router on loopback, until Ctrl-C. */
@Command(
    name = "dev",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run a whole cluster on loopback: ZooKeeper's embedded server, --nodes nodes and a router.",
      "Data stays under --data-dir, so a restart brings tables and data back. Ctrl-C stops everything."
    })
final class DevCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--data-dir", paramLabel = "DIR", defaultValue = "data/dev", description = "Default: ${DEFAULT-VALUE}.")
  Path dataDir;

  @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "Default: ${DEFAULT-VALUE}.")
  int nodes;

  @Option(names = "--zk-port", paramLabel = "PORT", defaultValue = "2181", description = "Default: ${DEFAULT-VALUE}.")
  int zkPort;

  @Option(names = "--router-port", paramLabel = "PORT", defaultValue = "7100", description = "Default: ${DEFAULT-VALUE}.")
  int routerPort;

  @Option(names = "--node-port", paramLabel = "PORT", defaultValue = "7101", description = "First node's port; the others follow. Default: ${DEFAULT-VALUE}.")
  int nodePort;

  @Option(names = "--console-port", paramLabel = "PORT", defaultValue = "8080", description = "The web console's port (0: none). Default: ${DEFAULT-VALUE}.")
  int consolePort;

  @Override
  public Integer call() {
    if (nodes < 1 || nodes > 64) {
      throw new IllegalArgumentException("--nodes must be between 1 and 64, not " + nodes);
    }
    String host = "127.0.0.1";
    Ports.requireFree(host, zkPort, "--zk-port");
    Ports.requireFree(host, routerPort, "--router-port");
    for (int i = 0; i < nodes; i++) {
      Ports.requireFree(host, nodePort + i, "--node-port");
    }
    if (consolePort != 0) {
      Ports.requireFree(host, consolePort, "--console-port");
    }
    List<AutoCloseable> started = new ArrayList<>();
    try {
      EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(zkPort, dataDir.resolve("zk"));
      started.add(zk);
      List<ShardwiseNode> running = new ArrayList<>();
      for (int i = 1; i <= nodes; i++) {
        ShardwiseNode node = ShardwiseNode.start(
            NodeConfig.of(dataDir.resolve("n" + i), zk.connectString()).withId("n" + i).withPort(nodePort + i - 1));
        running.add(node);
        started.add(0, node);
      }
      ShardwiseRouter router = ShardwiseRouter.start("router-1", host, routerPort, zk.connectString(), Limits.DEFAULT);
      started.add(0, router);
      Console console = null;
      if (consolePort != 0) {
        console = Console.start(host, consolePort, zk.connectString());
        started.add(0, console);
      }

      PrintWriter out = spec.commandLine().getOut();
      out.println("Shardwise dev cluster is up (data in " + dataDir + "):");
      out.println("  zookeeper  " + zk.connectString());
      out.println("  router     " + router.address());
      for (ShardwiseNode n : running) {
        out.println("  node " + n.id() + (n.id().value().length() < 3 ? " " : "") + "   " + n.address());
      }
      if (console != null) {
        out.println("  console    " + console.url() + "  (the lab: " + console.url() + "lab)");
      }
      out.println();
      out.println("Try this, in another terminal:");
      out.println("  ./shardwise table create users --strategy ring");
      out.println("  ./shardwise kv put users alice '{\"name\": \"Alice\"}' && ./shardwise kv get users alice");
      out.println();
      out.println("Ctrl-C stops the cluster.");
      out.flush();
    } catch (RuntimeException e) {
      closeAll(started);
      throw e;
    }
    Waiting.untilInterrupted(started.toArray(new AutoCloseable[0]));
    return Main.EXIT_OK;
  }

  private static void closeAll(List<AutoCloseable> started) {
    for (AutoCloseable c : started) {
      try {
        c.close();
      } catch (Exception e) {
        // already failing; the first error is the one to report
      }
    }
  }
}
