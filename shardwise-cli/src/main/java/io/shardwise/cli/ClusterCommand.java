package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.ClusterStatus;
import io.shardwise.client.NodeStatus;
import io.shardwise.client.ShardDescription;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableDescription;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.Metric;
import io.shardwise.proto.v1.MetricsRequest;
import io.shardwise.proto.v1.MetricsResponse;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.io.PrintWriter;
import java.time.Duration;
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
      description = {"Every live node's meters in human units, each counter with its rate over --interval.",
          "Moves: bytes, keys, in flight, write pauses, catch-up lag; the balancer's. -o json prints the raw measurements of one reading."})
  static final class Metrics implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Option(names = "--interval", paramLabel = "DURATION", defaultValue = "1s",
        description = "Time between the two readings that rates come from, 100ms to 1h. Default: ${DEFAULT-VALUE}.")
    String interval;

    @Override
    public Integer call() throws InterruptedException {
      Duration between = Durations.parseWithin("--interval", interval, Duration.ofMillis(100), Duration.ofHours(1));
      List<MetricsResponse> first = new ArrayList<>();
      List<MetricsResponse> all = new ArrayList<>();
      long firstAt;
      long secondAt;
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      try (Peers peers = new Peers(4 << 20)) {
        List<String> addresses = c.liveNodesNow().values().stream().map(NodeInfo::getAddress).toList();
        firstAt = System.nanoTime();
        if (output != OutputFormat.json) {
          addresses.forEach(a -> first.add(read(peers, a)));
          Thread.sleep(between.toMillis());
        }
        secondAt = System.nanoTime();
        addresses.forEach(a -> all.add(read(peers, a)));
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
      for (MetricsView.Row row : MetricsView.rows(first, all, Duration.ofNanos(secondAt - firstAt))) {
        rows.add(List.of(row.node(), row.meter(), row.value(), row.rate()));
      }
      Output.table(out, List.of("NODE", "METER", "VALUE", "RATE"), rows);
      out.println();
      out.println("rates over " + Durations.format(between) + "; raw measurements with -o json");
      return Main.EXIT_OK;
    }

    private static MetricsResponse read(Peers peers, String address) {
      return AdminServiceGrpc.newBlockingStub(peers.channel(address)).withDeadlineAfter(10, TimeUnit.SECONDS)
          .metrics(MetricsRequest.getDefaultInstance());
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
      new io.shardwise.server.balance.RebalanceRecords(ClusterOptions.coordinator(cluster.zk())).drains().forEach(d -> draining.add(d.value()));
      ShardwiseClient client = cluster.connect();
      ClusterStatus status = client.clusterStatus();
      PrintWriter out = spec.commandLine().getOut();
      java.util.Set<String> unknown = new java.util.TreeSet<>();
      status.nodes().stream().filter(n -> n.keys().isEmpty()).forEach(n -> unknown.add(n.id()));
      if (output == OutputFormat.json) {
        ObjectNode o = Output.object().put("epoch", status.mapEpoch());
        ArrayNode nodes = o.putArray("nodes");
        for (NodeStatus n : status.nodes()) {
          ObjectNode node = nodes.addObject().put("id", n.id()).put("address", n.address()).put("up", n.up())
              .put("draining", draining.contains(n.id())).put("shards", n.shards());
          if (n.keys().isPresent()) {
            node.put("keys", n.keys().getAsLong()).put("bytes", n.bytes().getAsLong()).put("trash_entries", n.trashEntries())
                .put("trash_bytes", n.trashBytes());
          } else { // unknown, not zero
            node.putNull("keys").putNull("bytes").putNull("trash_entries").putNull("trash_bytes");
          }
        }
        ArrayNode shards = o.putArray("shards");
        for (TableDescription t : status.tables()) {
          for (ShardDescription s : t.shards()) {
            ObjectNode shard = shards.addObject().put("table", t.name()).put("shard", t.name() + "/" + s.number())
                .put("owner", s.owner()).put("epoch", s.epoch());
            if (unknown.contains(s.owner())) {
              shard.putNull("keys").putNull("bytes");
            } else {
              shard.put("keys", s.keys()).put("bytes", s.bytes());
            }
          }
        }
        Output.json(out, o);
        return Main.EXIT_OK;
      }
      out.println("map epoch " + status.mapEpoch() + ", " + Output.count(status.nodes().size(), "node") + ", "
          + Output.count(status.tables().size(), "table"));
      out.println();
      List<List<String>> rows = new ArrayList<>();
      for (NodeStatus n : status.nodes()) {
        String state = !n.up() ? "down" : draining.contains(n.id()) ? "draining" : "up";
        boolean known = n.keys().isPresent();
        rows.add(List.of(n.id(), n.address().isEmpty() ? "-" : n.address(), state, Integer.toString(n.shards()),
            known ? Output.number(n.keys().getAsLong()) : "?", known ? Output.number(n.bytes().getAsLong()) : "?",
            known ? n.trashEntries() + " / " + Output.number(n.trashBytes()) : "?"));
      }
      Output.table(out, List.of("NODE", "ADDRESS", "STATE", "SHARDS", "KEYS", "BYTES", "TRASH ENTRIES / BYTES"), rows);
      if (!status.tables().isEmpty()) {
        out.println();
        List<List<String>> tables = new ArrayList<>();
        for (TableDescription t : status.tables()) {
          long keys = 0;
          long bytes = 0;
          boolean partial = false;
          for (ShardDescription s : t.shards()) {
            keys += s.keys();
            bytes += s.bytes();
            partial |= unknown.contains(s.owner());
          }
          String more = partial ? "+?" : "";
          tables.add(List.of(t.name(), t.spec().strategy(), Integer.toString(t.shards().size()), Output.number(keys) + more,
              Output.number(bytes) + more));
        }
        Output.table(out, List.of("TABLE", "STRATEGY", "SHARDS", "KEYS", "BYTES"), tables);
      }
      if (!unknown.isEmpty()) {
        out.println("?: not known while " + String.join(", ", unknown) + (unknown.size() == 1 ? " does" : " do") + " not answer");
      }
      if (listShards) {
        for (TableDescription t : status.tables()) {
          out.println();
          TableCommand.print(out, OutputFormat.table, t, true, true);
        }
      } else if (!status.tables().isEmpty()) {
        out.println("every shard: 'shardwise cluster status --list-shards' or 'shardwise table describe TABLE --list-shards'");
      }
      return Main.EXIT_OK;
    }
  }
}
