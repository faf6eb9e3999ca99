package io.shardwise.cli;

import io.shardwise.core.map.NodeId;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise node drain NODE}: mark a node to be emptied by the balancer. */
@Command(name = "drain", mixinStandardHelpOptions = true,
    description = {"Mark NODE as draining: the balancer plans to move every shard off it (to the other nodes, evenly).",
        "In suggest mode approve the plan it proposes; see 'shardwise rebalance status'. Undo with 'shardwise node undrain'."})
final class DrainCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Parameters(paramLabel = "NODE", description = "The node id.")
  String node;

  @Mixin RebalanceCommand.Zk zk;

  @Override
  public Integer call() {
    NodeId id = NodeId.of(node);
    Coordinator c = ClusterOptions.coordinator(zk.zk);
    if (!c.liveNodesNow().containsKey(id) && c.readMap().map().shardsOf(id).isEmpty()) {
      throw new IllegalArgumentException("no node " + node + ": it is not live and owns no shard; live nodes: " + c.liveNodesNow().keySet());
    }
    new RebalanceRecords(c).drain(id);
    spec.commandLine().getOut().println("node " + node + " is draining; the balancer plans its shards' moves (shardwise rebalance status)");
    return Main.EXIT_OK;
  }

  /** {@code shardwise node undrain NODE}. */
  @Command(name = "undrain", mixinStandardHelpOptions = true, description = "Stop draining NODE: it takes shards again.")
  static final class Undrain implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "NODE", description = "The node id.")
    String node;

    @Mixin RebalanceCommand.Zk zk;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      new RebalanceRecords(c).undrain(NodeId.of(node));
      spec.commandLine().getOut().println("node " + node + " is no longer draining");
      return Main.EXIT_OK;
    }
  }
}
