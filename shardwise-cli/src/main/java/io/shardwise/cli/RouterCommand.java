package io.shardwise.cli;

import io.shardwise.server.node.ShardwiseRouter;
import io.shardwise.server.rpc.Limits;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise router}: run a routing tier process (no data) until Ctrl-C. */
@Command(name = "router", mixinStandardHelpOptions = true, description = "Run a router: holds no data, forwards every request to its shard's owner.")
final class RouterCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--zk", paramLabel = "HOSTS", description = "ZooKeeper connect string. Default: $SHARDWISE_ZK or 127.0.0.1:2181.")
  String zk;

  @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Address to serve on. Default: a free port on 127.0.0.1.")
  String listen;

  @Option(names = "--id", paramLabel = "ID", defaultValue = "router-1", description = "Router id. Default: ${DEFAULT-VALUE}.")
  String id;

  @Override
  public Integer call() {
    String[] hp = listen == null ? new String[] {"127.0.0.1", "0"} : Ports.hostAndPort(listen);
    Ports.requireFree(hp[0], Integer.parseInt(hp[1]), "--listen");
    ShardwiseRouter router = ShardwiseRouter.start(id, hp[0], Integer.parseInt(hp[1]), ClusterOptions.zkOrDefault(zk), Limits.DEFAULT);
    PrintWriter out = spec.commandLine().getOut();
    out.println("router " + id + " serving on " + router.address() + "; Ctrl-C stops it");
    out.flush();
    Waiting.untilInterrupted(router);
    return Main.EXIT_OK;
  }
}
