package io.shardwise.core.plan;

import io.shardwise.core.analysis.LoadStats;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Plans how a replicated table's replicas and leaders should spread over the live nodes that are
 * not draining: each node's weighted share of the table's replicas ({@code replicas × weight / Σ
 * weights}) and of its leaders ({@code shards × weight / Σ weights}).
 *
 * <p>Two passes over one evolving assignment, each moving only while a move narrows the gap between
 * the node furthest above its share and one below it by more than one (a move of one replica when
 * two nodes are less than one apart would only swap them):
 *
 * <ol>
 *   <li><b>Replicas.</b> From the node with the most replicas above its share to the one furthest
 *       below, a replica of a shard the receiver does not hold and whose move keeps the shard on as
 *       many zones as before (nodes labelled {@code zone=…}; a node without one is its own zone). A
 *       follower moves rather than a leader, unless the donor leads more shards than its share and
 *       the receiver fewer: then the leader's replica moves and the lead goes with it. Among
 *       equals, the shard whose bytes come closest to what would even the two nodes' bytes. At most
 *       one replica of a shard moves per plan.
 *   <li><b>Leaders</b>, cheaply: no data moves. From the node leading the most shards above its
 *       share to one below, the lead of a shard not moved by the first pass passes to a follower
 *       that is in sync now.
 * </ol>
 *
 * <p>A {@code ring} or {@code tokens} table whose ring has a member that leads none of its shards
 * (it joined) first gives that member the leads of its arcs, and nothing else moves in that plan
 * ({@link State#takeRingArcs}); the passes above balance it afterwards like any other table.
 *
 * <p>Replicas on nodes that are draining or absent are not placed here: replica repair, which runs
 * in every mode, replaces them (new followers first, then their removal). Like the whole-shard
 * planner, a node at or below its share never gives anything away and nothing here looks at
 * latency or load, so a node that is merely slow keeps its replicas. Pure and deterministic.
 */
public final class ReplicaPlanner {

  private ReplicaPlanner() {}

  /**
   * A plan for the replicated table {@code tableName}.
   *
   * @param nodes the live nodes (draining ones included, flagged)
   * @param zones each node's zone label, if it has one
   * @param sizes measured shard sizes; missing shards count as empty
   * @throws IllegalArgumentException for an unknown table, or one that is not replicated
   */
  public static Plan plan(ShardMap map, String tableName, List<NodeCapacity> nodes, Map<NodeId, String> zones,
      Map<ShardId, ShardSize> sizes) {
    Table table = map.table(tableName).orElseThrow(() -> new IllegalArgumentException("no table named '" + tableName + "'"));
    if (!table.replication().replicated()) {
      throw new IllegalArgumentException("table " + tableName + " keeps one replica of each shard: its shards move whole");
    }
    List<NodeCapacity> targets = nodes.stream().filter(n -> !n.draining()).sorted(Comparator.comparing(NodeCapacity::node)).toList();
    State st = new State(table, targets, zones, sizes);
    if (targets.isEmpty()) {
      return new Plan(table.name(), map.epoch(), List.of(), st.forecast(0), "no live node that is not draining");
    }
    if (!table.layout().ringMembers().isEmpty() && st.takeRingArcs()) {
      List<Move> moves = new ArrayList<>(st.moves);
      moves.sort(Comparator.comparing(Move::shard).thenComparing(Move::leadership));
      return new Plan(table.name(), map.epoch(), moves, st.forecast(0), "the ring points of " + st.arriving + " take over the leads of their"
          + " arcs: " + moves.stream().filter(Move::leadership).count() + " leads pass, " + moves.stream().filter(m -> !m.leadership()).count()
          + " replicas move, and nothing else moves");
    }
    int mustMove = st.replicasAboveCeiling();
    while (st.moveOneReplica()) {
      // each step moves one replica; a shard moves at most once, so this ends
    }
    while (st.moveOneLead()) {
      // each step passes one lead; a shard's lead passes at most once
    }
    List<Move> moves = new ArrayList<>(st.moves);
    moves.sort(Comparator.comparing(Move::shard).thenComparing(Move::leadership));
    String note = moves.isEmpty() ? "already balanced (replicas and leaders per node)" : null;
    if (!st.bytesKnown) {
      note = (note == null ? "" : note + "; ") + "shard sizes unknown (a node did not answer): bytes are not balanced";
    }
    return new Plan(table.name(), map.epoch(), moves, st.forecast(mustMove), note);
  }

  /** The planner's working state: each shard's replicas and leader as the moves so far leave them. */
  private static final class State {
    final Table table;
    final List<NodeCapacity> targets;
    final Map<NodeId, String> zones;
    final Map<ShardId, ShardSize> sizes;
    final Map<ShardId, List<NodeId>> replicas = new LinkedHashMap<>();
    final Map<ShardId, NodeId> leader = new TreeMap<>();
    final Map<ShardId, ShardAssignment> byId = new TreeMap<>();
    final Map<NodeId, Double> replicaShare = new TreeMap<>();
    final Map<NodeId, Double> leaderShare = new TreeMap<>();
    final Map<NodeId, Double> byteShare = new TreeMap<>();
    final Set<ShardId> moved = new TreeSet<>();
    final List<Move> moves = new ArrayList<>();
    final boolean bytesKnown;

    State(Table table, List<NodeCapacity> targets, Map<NodeId, String> zones, Map<ShardId, ShardSize> sizes) {
      this.table = table;
      this.targets = targets;
      this.zones = zones;
      this.sizes = sizes;
      Set<NodeId> eligible = new HashSet<>();
      targets.forEach(n -> eligible.add(n.node()));
      long placedReplicas = 0;
      long ledShards = 0;
      long placedBytes = 0;
      boolean known = true;
      for (ShardAssignment s : table.shards()) {
        byId.put(s.id(), s);
        replicas.put(s.id(), new ArrayList<>(s.replicas()));
        leader.put(s.id(), s.owner());
        for (NodeId r : s.replicas()) {
          if (eligible.contains(r)) {
            placedReplicas++;
            placedBytes += bytes(s.id());
            known &= sizes.containsKey(s.id());
          }
        }
        if (eligible.contains(s.owner())) {
          ledShards++;
        }
      }
      bytesKnown = known;
      double weights = targets.stream().mapToDouble(NodeCapacity::weight).sum();
      for (NodeCapacity n : targets) {
        replicaShare.put(n.node(), placedReplicas * n.weight() / weights);
        leaderShare.put(n.node(), ledShards * n.weight() / weights);
        byteShare.put(n.node(), placedBytes * n.weight() / weights);
      }
    }

    long bytes(ShardId s) {
      return sizes.getOrDefault(s, ShardSize.UNKNOWN).bytes();
    }

    String zoneOf(NodeId n) {
      return Objects.requireNonNullElse(zones.get(n), "node:" + n.value());
    }

    int replicasOn(NodeId n) {
      int c = 0;
      for (List<NodeId> r : replicas.values()) {
        c += r.contains(n) ? 1 : 0;
      }
      return c;
    }

    int leadersOn(NodeId n) {
      int c = 0;
      for (NodeId l : leader.values()) {
        c += l.equals(n) ? 1 : 0;
      }
      return c;
    }

    long bytesOn(NodeId n) {
      long b = 0;
      for (Map.Entry<ShardId, List<NodeId>> e : replicas.entrySet()) {
        b += e.getValue().contains(n) ? bytes(e.getKey()) : 0;
      }
      return b;
    }

    double replicaExcess(NodeId n) {
      return replicasOn(n) - replicaShare.get(n);
    }

    double leaderExcess(NodeId n) {
      return leadersOn(n) - leaderShare.get(n);
    }

    /** Nodes by how far above their share they are (of replicas, or of leads), most first; ties by id. */
    List<NodeId> byExcess(boolean leads) {
      List<NodeId> out = new ArrayList<>();
      targets.forEach(n -> out.add(n.node()));
      out.sort(Comparator.<NodeId>comparingDouble(n -> -(leads ? leaderExcess(n) : replicaExcess(n))).thenComparing(n -> n));
      return out;
    }

    /** Moves the replica that most helps, if any narrows a gap by more than one; returns whether one moved. */
    boolean moveOneReplica() {
      List<NodeId> order = byExcess(false);
      for (NodeId donor : order) {
        if (replicaExcess(donor) <= 1e-9) {
          return false; // a node at or below its share gives nothing away
        }
        for (int i = order.size() - 1; i >= 0; i--) {
          NodeId receiver = order.get(i);
          if (replicaExcess(donor) - replicaExcess(receiver) <= 1 + 1e-9) {
            break; // receivers further down are closer to their share still
          }
          ShardId best = null;
          double bestScore = Double.MAX_VALUE;
          boolean leadHelps = leaderExcess(donor) - leaderExcess(receiver) > 1 + 1e-9;
          long wantBytes = Math.max(0, Math.min(bytesOn(donor) - Math.round(byteShare.get(donor)),
              Math.round(byteShare.get(receiver)) - bytesOn(receiver)));
          for (Map.Entry<ShardId, List<NodeId>> e : replicas.entrySet()) {
            ShardId s = e.getKey();
            List<NodeId> on = e.getValue();
            if (moved.contains(s) || !on.contains(donor) || on.contains(receiver) || !keepsZones(on, donor, receiver)) {
              continue;
            }
            boolean leads = leader.get(s).equals(donor);
            // Lower is better: the right role first (a leader when leads should move too, else a
            // follower), then the bytes closest to what evens the two nodes.
            double score = (leads == leadHelps ? 0 : 1e18) + Math.abs(bytes(s) - wantBytes);
            if (score < bestScore) {
              best = s;
              bestScore = score;
            }
          }
          if (best != null) {
            List<NodeId> on = replicas.get(best);
            on.set(on.indexOf(donor), receiver);
            boolean leads = leader.get(best).equals(donor);
            if (leads) {
              leader.put(best, receiver);
            }
            moved.add(best);
            ShardSize size = sizes.getOrDefault(best, ShardSize.UNKNOWN);
            moves.add(new Move(best, donor, receiver, size.keys(), size.bytes()));
            return true;
          }
        }
      }
      return false;
    }

    /** The shard is on as many distinct zones after {@code from} gives its replica to {@code to} as before. */
    boolean keepsZones(List<NodeId> on, NodeId from, NodeId to) {
      Set<String> before = new HashSet<>();
      on.forEach(n -> before.add(zoneOf(n)));
      Set<String> after = new HashSet<>();
      on.stream().filter(n -> !n.equals(from)).forEach(n -> after.add(zoneOf(n)));
      after.add(zoneOf(to));
      return after.size() >= before.size();
    }

    /** Passes one lead to an in-sync follower, if any narrows a gap by more than one; returns whether one passed. */
    boolean moveOneLead() {
      List<NodeId> order = byExcess(true);
      for (NodeId donor : order) {
        if (leaderExcess(donor) <= 1e-9) {
          return false;
        }
        for (int i = order.size() - 1; i >= 0; i--) {
          NodeId receiver = order.get(i);
          if (leaderExcess(donor) - leaderExcess(receiver) <= 1 + 1e-9) {
            break;
          }
          for (ShardAssignment s : byId.values()) {
            if (!moved.contains(s.id()) && leader.get(s.id()).equals(donor) && s.inSync().contains(receiver)) {
              leader.put(s.id(), receiver);
              moved.add(s.id());
              moves.add(new Move(s.id(), donor, receiver, 0, 0, true));
              return true;
            }
          }
        }
      }
      return false;
    }

    /** Ring members that lead none of the table's shards: they joined (or came back) and take their arcs. */
    final Set<NodeId> arriving = new TreeSet<>();

    /**
     * A ring table's arcs whose member leads none of the table's shards go to it, as consistent
     * hashing gives a joining node its arcs: the lead passes to it where it holds an in-sync
     * replica; where it holds none, the leader's replica moves to it and the lead goes with it (a
     * follower's instead, if the leader's would leave the shard on fewer zones: the lead passes in a
     * later plan). A replica it holds that is not in sync yet is waited for. Returns whether anything moved.
     */
    boolean takeRingArcs() {
      List<String> members = table.layout().ringMembers();
      Set<NodeId> leading = new HashSet<>(leader.values());
      for (NodeCapacity n : targets) {
        if (members.contains(n.node().value()) && !leading.contains(n.node())) {
          arriving.add(n.node());
        }
      }
      if (arriving.isEmpty()) {
        return false;
      }
      int[] memberOf = io.shardwise.core.partition.RingRanges.memberOfRanges(table.spec(), table.layout());
      for (int position = 0; position < memberOf.length; position++) {
        NodeId to = NodeId.of(members.get(memberOf[position]));
        ShardAssignment s = table.shards().get(position);
        if (!arriving.contains(to) || s.owner().equals(to)) {
          continue;
        }
        List<NodeId> on = replicas.get(s.id());
        ShardSize size = sizes.getOrDefault(s.id(), ShardSize.UNKNOWN);
        if (on.contains(to)) {
          if (s.inSync().contains(to)) {
            leader.put(s.id(), to);
            moves.add(new Move(s.id(), s.owner(), to, 0, 0, true));
            moved.add(s.id());
          }
          continue;
        }
        NodeId from = keepsZones(on, s.owner(), to) ? s.owner()
            : on.stream().filter(f -> !f.equals(s.owner()) && keepsZones(on, f, to)).findFirst().orElse(null);
        if (from == null) {
          continue;
        }
        on.set(on.indexOf(from), to);
        if (from.equals(s.owner())) {
          leader.put(s.id(), to);
        }
        moves.add(new Move(s.id(), from, to, size.keys(), size.bytes()));
        moved.add(s.id());
      }
      return !moves.isEmpty();
    }

    /** Replicas that must move for every node to be within one of its share: those above the rounded-up share. */
    int replicasAboveCeiling() {
      int must = 0;
      for (NodeCapacity n : targets) {
        must += (int) Math.max(0, replicasOn(n.node()) - Math.ceil(replicaShare.get(n.node()) - 1e-9));
      }
      return must;
    }

    /**
     * The figures, after the moves: per node, replicas and their bytes; moved bytes against all
     * the table's placed replica bytes, and the least a balanced placement must move ({@code
     * mustMove} replicas of average size).
     */
    Plan.Forecast forecast(int mustMove) {
      long[] counts = new long[targets.size()];
      long[] bytesPer = new long[targets.size()];
      long total = 0;
      long placed = 0;
      for (int i = 0; i < targets.size(); i++) {
        NodeId n = targets.get(i).node();
        counts[i] = replicasOn(n);
        bytesPer[i] = bytesOn(n);
        total += bytesPer[i];
        placed += counts[i];
      }
      long movedKeys = moves.stream().mapToLong(Move::keys).sum();
      long movedBytes = moves.stream().mapToLong(Move::bytes).sum();
      double minimum = total == 0 || placed == 0 ? 0 : Math.min(1.0, mustMove * ((double) total / placed) / total);
      return new Plan.Forecast(movedKeys, movedBytes, total, total == 0 ? 0 : (double) movedBytes / total, minimum,
          counts.length == 0 ? 1.0 : LoadStats.of(counts).peakToAverage(), bytesPer.length == 0 ? 1.0 : LoadStats.of(bytesPer).peakToAverage());
    }
  }
}
