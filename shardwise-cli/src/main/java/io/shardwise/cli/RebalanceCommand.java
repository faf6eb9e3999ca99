package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.ManagedChannel;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.plan.Move;
import io.shardwise.core.plan.NodeCapacity;
import io.shardwise.core.plan.Plan;
import io.shardwise.core.plan.RebalancePlanner;
import io.shardwise.core.plan.ShardSize;
import io.shardwise.proto.Channels;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.Coordinator;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise rebalance plan}: preview the moves that would balance each table. */
@Command(name = "rebalance", mixinStandardHelpOptions = true, description = "Rebalancing. Today: a preview of the plan.",
    subcommands = RebalanceCommand.PlanCommand.class)
final class RebalanceCommand {

  @Command(name = "plan", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Preview the moves that would give every live node its weighted share of each table's shards",
          "(weight: the node's capacity=N label, default 1), with bytes moved against the minimum and the balance after.",
          "A preview: executing moves (copy, catch-up, cutover) is not available yet."})
  static final class PlanCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(arity = "0..1", paramLabel = "TABLE", description = "One table; default: every table.")
    String table;

    @Option(names = "--zk", paramLabel = "HOSTS", description = "ZooKeeper connect string. Default: $SHARDWISE_ZK or 127.0.0.1:2181.")
    String zk;

    @Option(names = "--drain", paramLabel = "NODE", description = "Plan as if NODE were being drained; repeatable.")
    List<String> drain = new ArrayList<>();

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      String connect = ClusterOptions.zkOrDefault(zk);
      ShardMap map;
      Map<NodeId, NodeInfo> live;
      try (Coordinator c = Coordinator.connect(connect, Duration.ofSeconds(10), Duration.ofSeconds(5))) {
        map = c.readMap().map();
        live = c.liveNodesNow();
      } catch (CoordinationException e) {
        throw new IllegalStateException(e.getMessage() + " (is a cluster running? start one with: ./shardwise dev)", e);
      }
      for (String d : drain) {
        if (!live.containsKey(NodeId.of(d))) {
          throw new IllegalArgumentException("--drain " + d + ": no live node has that id; live nodes: " + live.keySet());
        }
      }
      List<NodeCapacity> nodes = new ArrayList<>();
      for (NodeInfo n : live.values()) {
        double weight = Double.parseDouble(n.getLabelsOrDefault("capacity", "1"));
        nodes.add(new NodeCapacity(NodeId.of(n.getId()), weight, drain.contains(n.getId())));
      }
      Map<ShardId, ShardSize> sizes = sizes(live);
      List<String> tables = table == null ? new ArrayList<>(map.tables().keySet()) : List.of(table);
      List<Plan> plans = new ArrayList<>();
      for (String t : tables) {
        plans.add(RebalancePlanner.plan(map, t, nodes, sizes));
      }
      print(spec.commandLine().getOut(), map.epoch(), plans);
      return Main.EXIT_OK;
    }

    private static Map<ShardId, ShardSize> sizes(Map<NodeId, NodeInfo> live) {
      Map<ShardId, ShardSize> sizes = new HashMap<>();
      for (NodeInfo n : live.values()) {
        ManagedChannel channel = Channels.open(n.getAddress(), 4 * 1024 * 1024);
        try {
          for (ShardInfo s : AdminServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
              .nodeStats(NodeStatsRequest.getDefaultInstance()).getShardsList()) {
            sizes.put(new ShardId(s.getTable(), s.getNumber()), new ShardSize(s.getKeys(), s.getBytes()));
          }
        } finally {
          Channels.closeAll(List.of(channel));
        }
      }
      return sizes;
    }

    private void print(PrintWriter out, long epoch, List<Plan> plans) {
      if (output == OutputFormat.json) {
        ObjectNode root = Output.object().put("epoch", epoch).put("preview", true);
        ArrayNode array = root.putArray("plans");
        for (Plan p : plans) {
          ObjectNode o = array.addObject().put("table", p.table()).put("baseEpoch", p.baseEpoch());
          if (p.note() != null) {
            o.put("note", p.note());
          }
          ArrayNode moves = o.putArray("moves");
          p.moves().forEach(m -> moves.addObject().put("shard", m.shard().toString()).put("from", m.from().value())
              .put("to", m.to().value()).put("keys", m.keys()).put("bytes", m.bytes()));
          Plan.Forecast f = p.forecast();
          o.putObject("forecast").put("movedKeys", f.movedKeys()).put("movedBytes", f.movedBytes()).put("totalBytes", f.totalBytes())
              .put("movedFraction", f.movedFraction()).put("minimumFraction", f.minimumFraction())
              .put("shardPeakToAverageAfter", f.shardPeakToAverageAfter()).put("bytesPeakToAverageAfter", f.bytesPeakToAverageAfter());
        }
        Output.json(out, root);
        return;
      }
      out.println("map epoch " + epoch + " (preview: moves are not executed)");
      for (Plan p : plans) {
        Plan.Forecast f = p.forecast();
        out.println();
        out.printf(Locale.ROOT, "table %s: %d moves, %,d of %,d bytes (%.1f%%; minimum %.1f%%); after: shards p/a %.3f, bytes p/a %.3f%n",
            p.table(), p.moves().size(), f.movedBytes(), f.totalBytes(), 100 * f.movedFraction(), 100 * f.minimumFraction(),
            f.shardPeakToAverageAfter(), f.bytesPeakToAverageAfter());
        if (p.note() != null) {
          out.println("  " + p.note());
        }
        if (!p.moves().isEmpty()) {
          List<List<String>> rows = new ArrayList<>();
          for (Move m : p.moves()) {
            rows.add(List.of(m.shard().toString(), m.from().value(), m.to().value(), Long.toString(m.keys()), Long.toString(m.bytes())));
          }
          Output.table(out, List.of("SHARD", "FROM", "TO", "KEYS", "BYTES"), rows);
        }
      }
    }
  }
}
