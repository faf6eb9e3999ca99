package io.shardwise.cli;

import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code shardwise zookeeper}: ZooKeeper's embedded single server as a process of its own, the one
 * {@code dev} runs inside its JVM. For trying a cluster of separate processes and for the fault
 * suite (which pauses and kills it); production runs against an ensemble.
 */
@Command(
    name = "zookeeper",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run a single ZooKeeper server on 127.0.0.1 until Ctrl-C, for a cluster of separate processes on one machine.",
      "Production runs against a ZooKeeper ensemble instead."
    })
final class ZooKeeperCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "2181", description = "Client port (0: one chosen by the OS). Default: ${DEFAULT-VALUE}.")
  int port;

  @Option(names = "--data-dir", paramLabel = "DIR", defaultValue = "data/zk", description = "Snapshots and transaction log. Default: ${DEFAULT-VALUE}.")
  Path dataDir;

  @Override
  public Integer call() {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("--port must be between 0 and 65535, not " + port);
    }
    if (port != 0) {
      Ports.requireFree("127.0.0.1", port, "--port");
    }
    EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(port, dataDir);
    PrintWriter out = spec.commandLine().getOut();
    out.println("zookeeper serving on " + zk.connectString() + " (data " + dataDir + "); Ctrl-C stops it");
    out.flush();
    Waiting.untilInterrupted(zk);
    return Main.EXIT_OK;
  }
}
