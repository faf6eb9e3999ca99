package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.proto.v1.ClusterStatusResponse;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise cluster status}. */
@Command(name = "cluster", mixinStandardHelpOptions = true, description = "Cluster-wide views.", subcommands = ClusterCommand.Status.class)
final class ClusterCommand {

  @Command(name = "status", mixinStandardHelpOptions = true, description = "Nodes and shards with owners, keys and bytes, and the map epoch.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ClusterOptions cluster;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      try (ShardwiseClient client = cluster.connect()) {
        ClusterStatusResponse status = client.clusterStatus();
        PrintWriter out = spec.commandLine().getOut();
        if (output == OutputFormat.json) {
          ObjectNode o = Output.object().put("epoch", status.getMapEpoch());
          ArrayNode nodes = o.putArray("nodes");
          for (NodeInfo n : status.getNodesList()) {
            nodes.addObject().put("id", n.getId()).put("address", n.getAddress()).put("up", n.getUp()).put("shards", n.getShards())
                .put("keys", n.getKeys()).put("bytes", n.getBytes());
          }
          ArrayNode shards = o.putArray("shards");
          for (TableInfo t : status.getTablesList()) {
            for (ShardInfo s : t.getShardsList()) {
              shards.addObject().put("table", t.getName()).put("shard", t.getName() + "/" + s.getNumber()).put("owner", s.getOwner())
                  .put("epoch", s.getEpoch()).put("keys", s.getKeys()).put("bytes", s.getBytes());
            }
          }
          Output.json(out, o);
          return Main.EXIT_OK;
        }
        out.println("map epoch " + status.getMapEpoch() + ", " + status.getNodesCount() + " nodes, " + status.getTablesCount() + " tables");
        out.println();
        List<List<String>> rows = new ArrayList<>();
        for (NodeInfo n : status.getNodesList()) {
          rows.add(List.of(n.getId(), n.getAddress(), n.getUp() ? "up" : "down", Integer.toString(n.getShards()), Long.toString(n.getKeys()),
              Long.toString(n.getBytes())));
        }
        Output.table(out, List.of("NODE", "ADDRESS", "STATE", "SHARDS", "KEYS", "BYTES"), rows);
        for (TableInfo t : status.getTablesList()) {
          out.println();
          TableCommand.print(out, OutputFormat.table, t);
        }
      }
      return Main.EXIT_OK;
    }
  }
}
