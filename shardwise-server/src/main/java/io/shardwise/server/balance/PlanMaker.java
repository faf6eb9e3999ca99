package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.plan.Move;
import io.shardwise.core.plan.NodeCapacity;
import io.shardwise.core.plan.Plan;
import io.shardwise.core.plan.RebalancePlanner;
import io.shardwise.core.plan.ReplicaPlanner;
import io.shardwise.core.plan.ShardSize;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Turns the cluster as it is into a plan record: runs the core's {@link RebalancePlanner} for each
 * table over the live nodes (weight: the {@code capacity} label), with the operator's drains and
 * the nodes absent past their grace period, and adds up the forecast.
 *
 * <p>A replicated table is planned by the core's {@link ReplicaPlanner}: replicas and leads per
 * node, a replica at a time (the balancer runs such a move as add a follower, wait until it is in
 * sync, pass the lead if the source led, remove the source's replica).
 *
 * <p>Liveness comes only from ZooKeeper: a node that answers slowly, or not at all, to the size
 * request is still live and keeps its shards (its shards just count as empty for the forecast). A
 * node absent for less than its grace period freezes planning of every table it holds shards of,
 * so a restart never triggers moves.
 */
public final class PlanMaker {

  private static final Duration STATS_DEADLINE = Duration.ofSeconds(10);

  private PlanMaker() {}

  /**
   * The plan for the cluster now.
   *
   * @param absentInGrace owners absent from ZooKeeper for less than their grace period
   */
  public static PlanRecord make(ShardMap map, Map<NodeId, NodeInfo> live, Set<NodeId> drains, Set<NodeId> absentInGrace,
      Map<ShardId, ShardSize> sizes, String reason) {
    return make(map, live, drains, absentInGrace, sizes, reason, table -> true);
  }

  /** The plan for the tables {@code include} accepts. */
  public static PlanRecord make(ShardMap map, Map<NodeId, NodeInfo> live, Set<NodeId> drains, Set<NodeId> absentInGrace,
      Map<ShardId, ShardSize> sizes, String reason, Predicate<String> include) {
    List<NodeCapacity> nodes = new ArrayList<>();
    for (NodeInfo n : live.values()) {
      nodes.add(new NodeCapacity(NodeId.of(n.getId()), weight(n), drains.contains(NodeId.of(n.getId()))));
    }
    PlanRecord.Builder record = PlanRecord.newBuilder().setBaseEpoch(map.epoch()).setReason(reason)
        .setCreatedMillis(System.currentTimeMillis());
    long movedBytes = 0;
    long totalBytes = 0;
    double minimumBytes = 0;
    Balance before = new Balance(nodes);
    Balance after = new Balance(nodes);
    if (nodes.stream().allMatch(NodeCapacity::draining)) {
      record.addNotes("no plan: no live node to place shards on (live: " + live.keySet() + ", draining: " + drains + ")");
      return record.build();
    }
    for (Table table : map.tables().values()) {
      if (!include.test(table.name())) {
        continue;
      }
      List<NodeId> waitingFor = new ArrayList<>();
      for (ShardAssignment s : table.shards()) {
        if (absentInGrace.contains(s.owner()) && !waitingFor.contains(s.owner())) {
          waitingFor.add(s.owner());
        }
      }
      if (!waitingFor.isEmpty()) {
        record.addNotes("table " + table.name() + ": not planned while " + waitingFor + " may come back (absent, within the grace period)");
        continue;
      }
      if (table.replication().replicated()) {
        // Replicas and leads, a replica at a time; replicas of draining and absent nodes are replica repair's.
        List<NodeId> waitingForFollowers = new ArrayList<>();
        for (ShardAssignment s : table.shards()) {
          s.followers().stream().filter(f -> absentInGrace.contains(f) && !waitingForFollowers.contains(f)).forEach(waitingForFollowers::add);
        }
        if (!waitingForFollowers.isEmpty()) {
          record.addNotes("table " + table.name() + ": not planned while " + waitingForFollowers
              + " may come back (absent, within the grace period)");
          continue;
        }
        Plan plan = ReplicaPlanner.plan(map, table.name(), nodes, zones(live), sizes);
        if (plan.note() != null) {
          record.addNotes("table " + table.name() + ": " + plan.note());
        }
        for (Move m : plan.moves()) {
          ShardAssignment s = table.shard(m.shard().number()).orElseThrow();
          record.addMoves(MoveRecord.newBuilder().setTable(table.name()).setTableId(table.id()).setNumber(m.shard().number())
              .setShardEpoch(s.epoch()).setFrom(m.from().value()).setTo(m.to().value()).setKeys(m.keys()).setBytes(m.bytes())
              .setState(MoveRecord.State.WAITING).setReplica(true).setLeadership(m.leadership()));
        }
        Map<ShardId, List<NodeId>> placed = new HashMap<>();
        table.shards().forEach(s -> placed.put(s.id(), new ArrayList<>(s.replicas())));
        plan.moves().stream().filter(m -> !m.leadership()).forEach(m -> {
          List<NodeId> r = placed.get(m.shard());
          r.set(r.indexOf(m.from()), m.to());
        });
        for (ShardAssignment s : table.shards()) {
          long b = sizes.getOrDefault(s.id(), ShardSize.UNKNOWN).bytes();
          s.replicas().forEach(n -> before.add(n, b));
          placed.get(s.id()).forEach(n -> after.add(n, b));
        }
        Plan.Forecast f = plan.forecast();
        movedBytes += f.movedBytes();
        totalBytes += f.totalBytes();
        minimumBytes += f.minimumFraction() * f.totalBytes();
        continue;
      }
      List<String> joining = RingJoins.missing(map, live.keySet(), drains, name -> name.equals(table.name())).stream()
          .map(j -> j.node().value()).toList();
      if (!joining.isEmpty()) {
        record.addNotes("table " + table.name() + ": " + joining + " will join its ring when a plan is made"
            + " ('shardwise rebalance plan', or the balancer unless the table is manual): their points cut the ranges they fall in,"
            + " and then only their arcs move to them");
      }
      Plan plan = RebalancePlanner.plan(map, table.name(), nodes, sizes);
      if (plan.note() != null) {
        record.addNotes("table " + table.name() + ": " + plan.note());
      }
      java.util.Map<String, Integer> abandoned = new java.util.TreeMap<>();
      for (Move m : plan.moves()) {
        if (!live.containsKey(m.from())) {
          abandoned.merge(m.from().value(), 1, Integer::sum);
        }
      }
      abandoned.forEach((node, count) -> record.addNotes("table " + table.name() + ": " + count + " shards of absent node " + node
          + " go to other nodes EMPTY — their data is on " + node + " only (size unknown while it is away); approving needs"
          + " --accept-data-loss, and " + node + " keeps its copies in its trash if it returns"));
      record.setAbandonedShards(record.getAbandonedShards() + abandoned.values().stream().mapToInt(Integer::intValue).sum());
      for (Move m : plan.moves()) {
        ShardAssignment s = table.shard(m.shard().number()).orElseThrow();
        record.addMoves(MoveRecord.newBuilder().setTable(table.name()).setTableId(table.id()).setNumber(m.shard().number())
            .setShardEpoch(s.epoch()).setFrom(m.from().value()).setTo(m.to().value()).setKeys(m.keys()).setBytes(m.bytes())
            .setState(MoveRecord.State.WAITING).setSourceAbsent(!live.containsKey(m.from())));
      }
      Map<ShardId, NodeId> moved = new HashMap<>();
      plan.moves().forEach(m -> moved.put(m.shard(), m.to()));
      for (ShardAssignment s : table.shards()) {
        long b = sizes.getOrDefault(s.id(), ShardSize.UNKNOWN).bytes();
        before.add(s.owner(), b);
        after.add(moved.getOrDefault(s.id(), s.owner()), b);
      }
      Plan.Forecast f = plan.forecast();
      movedBytes += f.movedBytes();
      totalBytes += f.totalBytes();
      minimumBytes += f.minimumFraction() * f.totalBytes();
    }
    return record.setMovedBytes(movedBytes).setTotalBytes(totalBytes)
        .setMovedFraction(totalBytes == 0 ? 0 : (double) movedBytes / totalBytes)
        .setMinimumFraction(totalBytes == 0 ? 0 : minimumBytes / totalBytes)
        .setShardPeakToAverageAfter(after.shardsPeakToAverage()).setBytesPeakToAverageAfter(after.bytesPeakToAverage())
        .setShardPeakToAverageBefore(before.shardsPeakToAverage()).setBytesPeakToAverageBefore(before.bytesPeakToAverage())
        .setBytesWorstShareDeviationBefore(before.worstShareDeviation()).setBytesWorstShareDeviationAfter(after.worstShareDeviation())
        .build();
  }

  /**
   * Shards and bytes per node over every planned table, in the console's terms: peak-to-average
   * over the nodes that would hold shards (live, not draining; 1.0 is even), and each node's
   * distance from its weighted share of the bytes.
   */
  private static final class Balance {
    private final Map<NodeId, Double> weights = new java.util.TreeMap<>();
    private final Map<NodeId, long[]> perNode = new java.util.TreeMap<>();

    Balance(List<NodeCapacity> nodes) {
      for (NodeCapacity n : nodes) {
        if (!n.draining()) {
          weights.put(n.node(), n.weight());
          perNode.put(n.node(), new long[2]);
        }
      }
    }

    void add(NodeId owner, long bytes) {
      long[] acc = perNode.get(owner);
      if (acc != null) {
        acc[0]++;
        acc[1] += bytes;
      }
    }

    double shardsPeakToAverage() {
      return peakToAverage(0);
    }

    double bytesPeakToAverage() {
      return peakToAverage(1);
    }

    private double peakToAverage(int i) {
      long[] values = perNode.values().stream().mapToLong(a -> a[i]).toArray();
      return values.length == 0 ? 1.0 : io.shardwise.core.analysis.LoadStats.of(values).peakToAverage();
    }

    double worstShareDeviation() {
      double total = perNode.values().stream().mapToLong(a -> a[1]).sum();
      double weightSum = weights.values().stream().mapToDouble(Double::doubleValue).sum();
      double worst = 0;
      for (Map.Entry<NodeId, long[]> e : perNode.entrySet()) {
        double share = total * weights.get(e.getKey()) / weightSum;
        if (share > 0) {
          worst = Math.max(worst, Math.abs(e.getValue()[1] - share) / share);
        }
      }
      return worst;
    }
  }

  /** Each live node's {@code zone} label, if it has one. */
  static Map<NodeId, String> zones(Map<NodeId, NodeInfo> live) {
    Map<NodeId, String> zones = new java.util.TreeMap<>();
    live.forEach((n, info) -> {
      String zone = info.getLabelsMap().get("zone");
      if (zone != null) {
        zones.put(n, zone);
      }
    });
    return zones;
  }

  /** A node's weight: its {@code capacity} label, default 1. */
  static double weight(NodeInfo n) {
    String capacity = n.getLabelsOrDefault("capacity", "1");
    try {
      double w = Double.parseDouble(capacity);
      return w > 0 && !Double.isInfinite(w) ? w : 1;
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  /** The seconds of requests a shard's rate for the planner is the mean of. */
  static final int LOAD_SECONDS = 10;

  /**
   * Measured shard sizes, and requests per second over the last {@link #LOAD_SECONDS} s, from every
   * live node; a node that does not answer within the deadline is skipped (its shards count as
   * empty), never treated as gone. A shard reported by several replicas gets the highest rate (the
   * leader serves it).
   */
  public static Map<ShardId, ShardSize> sizes(Peers peers, Map<NodeId, NodeInfo> live) {
    Map<ShardId, ShardSize> sizes = new HashMap<>();
    // Sizes of a node that does not answer stay unknown; the node stays a node.
    NodeStatsPoll.ask(peers, live.values(), io.shardwise.proto.v1.NodeStatsRequest.newBuilder().setHistorySeconds(LOAD_SECONDS).build(),
        STATS_DEADLINE).answers().forEach(stats -> stats.getShardsList().forEach(s -> sizes.merge(new ShardId(s.getTable(), s.getNumber()),
            new ShardSize(s.getKeys(), s.getBytes(), Isolation.rate(s, LOAD_SECONDS), s.getReadsHistoryCount() >= LOAD_SECONDS),
            (was, now) -> new ShardSize(now.keys(), now.bytes(), Math.max(was.requestsPerSecond(), now.requestsPerSecond()),
                was.rateSettled() || now.rateSettled()))));
    return sizes;
  }

}
