package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.ClusterStatusResponse;
import io.shardwise.proto.v1.Metric;
import io.shardwise.proto.v1.MetricsRequest;
import io.shardwise.proto.v1.MetricsResponse;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise cluster status|metrics}. */
@Command(name = "cluster", mixinStandardHelpOptions = true, description = "Cluster-wide views.",
    subcommands = {ClusterCommand.Status.class, ClusterCommand.Metrics.class})
final class ClusterCommand {

  @Command(name = "metrics", mixinStandardHelpOptions = true,
      description = "Every live node's meters: moves (bytes, keys, in flight, write pause, catch-up lag) and the balancer's.")
  static final class Metrics implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      List<MetricsResponse> all = new ArrayList<>();
      try (Coordinator c = ClusterOptions.coordinator(zk.zk); Peers peers = new Peers(4 << 20)) {
        for (NodeInfo n : c.liveNodesNow().values()) {
          all.add(AdminServiceGrpc.newBlockingStub(peers.channel(n.getAddress())).withDeadlineAfter(10, TimeUnit.SECONDS)
              .metrics(MetricsRequest.getDefaultInstance()));
        }
      }
      PrintWriter out = spec.commandLine().getOut();
      if (output == OutputFormat.json) {
        ObjectNode root = Output.object();
        for (MetricsResponse r : all) {
          ArrayNode metrics = root.putArray(r.getNode());
          for (Metric m : r.getMetricsList()) {
            ObjectNode o = metrics.addObject().put("name", m.getName()).put("statistic", m.getStatistic()).put("value", m.getValue());
            if (!m.getUnit().isEmpty()) {
              o.put("unit", m.getUnit());
            }
            if (!m.getTagsMap().isEmpty()) {
              ObjectNode tags = o.putObject("tags");
              m.getTagsMap().forEach(tags::put);
            }
          }
        }
        Output.json(out, root);
        return Main.EXIT_OK;
      }
      List<List<String>> rows = new ArrayList<>();
      for (MetricsResponse r : all) {
        for (Metric m : r.getMetricsList()) {
          String tags = m.getTagsMap().isEmpty() ? "" : " " + new java.util.TreeMap<>(m.getTagsMap());
          rows.add(List.of(r.getNode(), m.getName() + tags, m.getStatistic(), String.format(java.util.Locale.ROOT, "%.6g", m.getValue()),
              m.getUnit()));
        }
      }
      Output.table(out, List.of("NODE", "METRIC", "STATISTIC", "VALUE", "UNIT"), rows);
      return Main.EXIT_OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "One line per node (state, shards, keys, bytes, trash) and per table, and the map epoch.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ClusterOptions cluster;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Option(names = "--list-shards", description = "Also print every shard of every table.")
    boolean listShards;

    @Override
    public Integer call() {
      java.util.Set<String> draining = new java.util.TreeSet<>();
      try (io.shardwise.server.coordination.Coordinator zk = ClusterOptions.coordinator(cluster.zk())) {
        new io.shardwise.server.balance.RebalanceRecords(zk).drains().forEach(d -> draining.add(d.value()));
      }
      try (ShardwiseClient client = cluster.connect()) {
        ClusterStatusResponse status = client.clusterStatus();
        PrintWriter out = spec.commandLine().getOut();
        java.util.Set<String> unknown = new java.util.TreeSet<>();
        status.getNodesList().stream().filter(n -> !n.getSizesKnown()).forEach(n -> unknown.add(n.getId()));
        if (output == OutputFormat.json) {
          ObjectNode o = Output.object().put("epoch", status.getMapEpoch());
          ArrayNode nodes = o.putArray("nodes");
          for (NodeInfo n : status.getNodesList()) {
            ObjectNode node = nodes.addObject().put("id", n.getId()).put("address", n.getAddress()).put("up", n.getUp())
                .put("draining", draining.contains(n.getId())).put("shards", n.getShards());
            if (n.getSizesKnown()) {
              node.put("keys", n.getKeys()).put("bytes", n.getBytes()).put("trash_entries", n.getTrashEntries()).put("trash_bytes", n.getTrashBytes());
            } else { // unknown, not zero
              node.putNull("keys").putNull("bytes").putNull("trash_entries").putNull("trash_bytes");
            }
          }
          ArrayNode shards = o.putArray("shards");
          for (TableInfo t : status.getTablesList()) {
            for (ShardInfo s : t.getShardsList()) {
              ObjectNode shard = shards.addObject().put("table", t.getName()).put("shard", t.getName() + "/" + s.getNumber())
                  .put("owner", s.getOwner()).put("epoch", s.getEpoch());
              if (unknown.contains(s.getOwner())) {
                shard.putNull("keys").putNull("bytes");
              } else {
                shard.put("keys", s.getKeys()).put("bytes", s.getBytes());
              }
            }
          }
          Output.json(out, o);
          return Main.EXIT_OK;
        }
        out.println("map epoch " + status.getMapEpoch() + ", " + Output.count(status.getNodesCount(), "node") + ", "
            + Output.count(status.getTablesCount(), "table"));
        out.println();
        List<List<String>> rows = new ArrayList<>();
        for (NodeInfo n : status.getNodesList()) {
          String state = !n.getUp() ? "down" : draining.contains(n.getId()) ? "draining" : "up";
          boolean known = n.getSizesKnown();
          rows.add(List.of(n.getId(), n.getAddress().isEmpty() ? "-" : n.getAddress(), state, Integer.toString(n.getShards()),
              known ? Output.number(n.getKeys()) : "?", known ? Output.number(n.getBytes()) : "?",
              known ? n.getTrashEntries() + " / " + Output.number(n.getTrashBytes()) : "?"));
        }
        Output.table(out, List.of("NODE", "ADDRESS", "STATE", "SHARDS", "KEYS", "BYTES", "TRASH ENTRIES / BYTES"), rows);
        if (status.getTablesCount() > 0) {
          out.println();
          List<List<String>> tables = new ArrayList<>();
          for (TableInfo t : status.getTablesList()) {
            long keys = 0;
            long bytes = 0;
            boolean partial = false;
            for (ShardInfo s : t.getShardsList()) {
              keys += s.getKeys();
              bytes += s.getBytes();
              partial |= unknown.contains(s.getOwner());
            }
            String more = partial ? "+?" : "";
            tables.add(List.of(t.getName(), t.getSpec().getStrategy(), Integer.toString(t.getShardsCount()), Output.number(keys) + more,
                Output.number(bytes) + more));
          }
          Output.table(out, List.of("TABLE", "STRATEGY", "SHARDS", "KEYS", "BYTES"), tables);
        }
        if (!unknown.isEmpty()) {
          out.println("?: not known while " + String.join(", ", unknown) + (unknown.size() == 1 ? " does" : " do") + " not answer");
        }
        if (listShards) {
          for (TableInfo t : status.getTablesList()) {
            out.println();
            TableCommand.print(out, OutputFormat.table, t, true, true);
          }
        } else if (status.getTablesCount() > 0) {
          out.println("every shard: 'shardwise cluster status --list-shards' or 'shardwise table describe TABLE --list-shards'");
        }
      }
      return Main.EXIT_OK;
    }
  }
}
