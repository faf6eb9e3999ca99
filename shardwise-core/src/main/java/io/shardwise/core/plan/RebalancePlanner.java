package io.shardwise.core.plan;

import io.shardwise.core.analysis.LoadStats;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Plans how a table's shards should move when nodes join, leave or are drained, moving whole
 * shards: slots ({@code slots}), key ranges ({@code range}), hash ranges ({@code hashrange}) and
 * ring arcs ({@code ring}, {@code tokens}).
 *
 * <p>The goal is each node's weighted share of the shards: {@code shards × weight / Σ weights},
 * rounded so the counts add up (the extra shards go to the nodes already holding the most, so the
 * fewest move). Then only what the goal needs moves: every shard of a draining or absent node, and
 * from each node above its goal, its smallest shards (fewest bytes) until it is at its goal. The
 * freed shards are handed out largest first, each to the under-goal node holding the fewest bytes
 * for its weight, which keeps bytes balanced too. A node at or below its goal never gives a shard
 * away, so a node that is merely slow keeps everything: this planner only acts on the node list
 * and the draining flags it is given.
 *
 * <p>{@code mod}, {@code jump} and {@code rendezvous} tables cannot move incrementally: changing
 * the number of buckets re-places keys everywhere, so the plan has no moves and says what a full
 * rewrite would move. A {@code ring} or {@code tokens} table keeps its points: its arcs (one shard
 * each, many per node) change owner whole, so a joining node takes over existing arcs instead of
 * adding points that would split them; with tens of arcs per node the shares come out as even as
 * with slots, and only the arcs that change owner move. Deterministic and pure.
 */
public final class RebalancePlanner {

  private RebalancePlanner() {}

  /**
   * A plan for {@code tableName} in {@code map}.
   *
   * @param nodes the live nodes; shards of nodes not listed (absent past their grace period) move
   * @param sizes measured shard sizes; missing shards count as empty
   * @throws IllegalArgumentException for an unknown table or no node to place shards on
   */
  public static Plan plan(ShardMap map, String tableName, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    Table table = map.table(tableName).orElseThrow(() -> new IllegalArgumentException("no table named '" + tableName + "'"));
    Strategy strategy = table.layout().strategy();
    if (strategy == Strategy.MOD || strategy == Strategy.JUMP || strategy == Strategy.RENDEZVOUS) {
      return rewriteOnly(map, table, nodes, sizes);
    }
    Plan plan = wholeShards(map, table, nodes, sizes);
    if ((strategy == Strategy.RING || strategy == Strategy.TOKENS) && !plan.moves().isEmpty()) {
      return new Plan(plan.table(), plan.baseEpoch(), plan.moves(), plan.forecast(),
          "ring arcs change owner whole; the ring's points stay where they are");
    }
    return plan;
  }

  /**
   * The table's balance as it is, over the nodes that would hold it ({@code nodes} not draining):
   * a forecast of moving nothing.
   */
  public static Plan.Forecast balanceNow(ShardMap map, String tableName, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    Table table = map.table(tableName).orElseThrow(() -> new IllegalArgumentException("no table named '" + tableName + "'"));
    return forecast(table, List.of(), sizes, eligible(nodes));
  }

  private static List<NodeCapacity> eligible(List<NodeCapacity> nodes) {
    List<NodeCapacity> out = new ArrayList<>();
    for (NodeCapacity n : nodes) {
      if (!n.draining()) {
        out.add(n);
      }
    }
    out.sort(Comparator.comparing(NodeCapacity::node));
    return out;
  }

  private static Plan wholeShards(ShardMap map, Table table, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    List<NodeCapacity> targets = eligible(nodes);
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("no node to place table " + table.name() + " on: every live node is draining");
    }
    Map<NodeId, List<ShardAssignment>> held = new TreeMap<>();
    targets.forEach(n -> held.put(n.node(), new ArrayList<>()));
    List<ShardAssignment> pool = new ArrayList<>();
    for (ShardAssignment s : table.shards()) {
      List<ShardAssignment> on = held.get(s.owner());
      if (on == null) {
        pool.add(s); // draining or absent: must move
      } else {
        on.add(s);
      }
    }
    Map<NodeId, Integer> goal = goals(table.shards().size(), targets, held);

    Comparator<ShardAssignment> smallestFirst = Comparator.<ShardAssignment>comparingLong(s -> size(sizes, s).bytes())
        .thenComparing(ShardAssignment::id);
    for (NodeCapacity n : targets) {
      List<ShardAssignment> on = held.get(n.node());
      on.sort(smallestFirst);
      while (on.size() > goal.get(n.node())) {
        pool.add(on.remove(0));
      }
    }

    Map<NodeId, Long> bytes = new TreeMap<>();
    Map<NodeId, Double> weight = new TreeMap<>();
    for (NodeCapacity n : targets) {
      weight.put(n.node(), n.weight());
      bytes.put(n.node(), held.get(n.node()).stream().mapToLong(s -> size(sizes, s).bytes()).sum());
    }
    pool.sort(smallestFirst.reversed());
    List<Move> moves = new ArrayList<>();
    for (ShardAssignment s : pool) {
      NodeId to = null;
      for (NodeCapacity n : targets) {
        NodeId id = n.node();
        if (held.get(id).size() >= goal.get(id)) {
          continue;
        }
        if (to == null || bytes.get(id) / weight.get(id) < bytes.get(to) / weight.get(to)) {
          to = id;
        }
      }
      ShardSize size = size(sizes, s);
      held.get(to).add(s);
      bytes.merge(to, size.bytes(), Long::sum);
      moves.add(new Move(s.id(), s.owner(), to, size.keys(), size.bytes()));
    }
    moves.sort(Comparator.comparing(Move::shard));
    return new Plan(table.name(), map.epoch(), moves, forecast(table, moves, sizes, targets),
        moves.isEmpty() ? "already balanced" : null);
  }

  /**
   * Shards per node: the weighted share, rounded down, plus one for the nodes with the largest
   * remainders (ties: more shards held now, then node id) until the counts add up.
   */
  private static Map<NodeId, Integer> goals(int shards, List<NodeCapacity> targets, Map<NodeId, List<ShardAssignment>> held) {
    double total = targets.stream().mapToDouble(NodeCapacity::weight).sum();
    Map<NodeId, Integer> goal = new TreeMap<>();
    List<NodeCapacity> byRemainder = new ArrayList<>(targets);
    int assigned = 0;
    Map<NodeId, Double> remainder = new TreeMap<>();
    for (NodeCapacity n : targets) {
      double share = shards * n.weight() / total;
      int base = (int) Math.floor(share + 1e-9);
      goal.put(n.node(), base);
      remainder.put(n.node(), share - base);
      assigned += base;
    }
    byRemainder.sort(Comparator.<NodeCapacity>comparingDouble(n -> -remainder.get(n.node()))
        .thenComparing(n -> -held.get(n.node()).size())
        .thenComparing(NodeCapacity::node));
    for (int i = 0; assigned < shards; i++, assigned++) {
      goal.merge(byRemainder.get(i % byRemainder.size()).node(), 1, Integer::sum);
    }
    return goal;
  }

  private static Plan rewriteOnly(ShardMap map, Table table, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    int before = table.shards().size();
    int after = eligible(nodes).size();
    String note = table.layout().strategy() + " cannot move incrementally: its bucket count is its node count, and changing "
        + before + " to " + after + " buckets re-places keys everywhere";
    if (table.layout().strategy() == Strategy.MOD && after > 0) {
      note += String.format(java.util.Locale.ROOT, "; a rewrite would move %.1f%% of the data (the minimum for a balanced move is %.1f%%)",
          100 * modMovedFraction(before, after), 100.0 * Math.abs(after - before) / Math.max(before, after));
    }
    return new Plan(table.name(), map.epoch(), List.of(), forecast(table, List.of(), sizes, eligible(nodes)), note);
  }

  /** The exact share of uniformly hashed keys with {@code h mod n != h mod m}. */
  static double modMovedFraction(int n, int m) {
    long lcm = (long) n / gcd(n, m) * m;
    long stay = 0;
    for (long h = 0; h < lcm; h++) {
      if (h % n == h % m) {
        stay++;
      }
    }
    return 1.0 - (double) stay / lcm;
  }

  private static long gcd(long a, long b) {
    return b == 0 ? a : gcd(b, a % b);
  }

  private static ShardSize size(Map<ShardId, ShardSize> sizes, ShardAssignment s) {
    return sizes.getOrDefault(s.id(), ShardSize.UNKNOWN);
  }

  private static Plan.Forecast forecast(Table table, List<Move> moves, Map<ShardId, ShardSize> sizes, List<NodeCapacity> targets) {
    Map<ShardId, NodeId> owner = new TreeMap<>();
    table.shards().forEach(s -> owner.put(s.id(), s.owner()));
    moves.forEach(m -> owner.put(m.shard(), m.to()));
    Map<NodeId, long[]> perNode = new TreeMap<>();
    targets.forEach(n -> perNode.put(n.node(), new long[2]));
    long total = 0;
    for (ShardAssignment s : table.shards()) {
      long b = size(sizes, s).bytes();
      total += b;
      long[] acc = perNode.computeIfAbsent(owner.get(s.id()), k -> new long[2]);
      acc[0]++;
      acc[1] += b;
    }
    long movedKeys = moves.stream().mapToLong(Move::keys).sum();
    long movedBytes = moves.stream().mapToLong(Move::bytes).sum();
    long[] shardsPerNode = perNode.values().stream().mapToLong(a -> a[0]).toArray();
    long[] bytesPerNode = perNode.values().stream().mapToLong(a -> a[1]).toArray();
    double minimum = minimumFraction(table, sizes, targets, total);
    return new Plan.Forecast(movedKeys, movedBytes, total, total == 0 ? 0 : (double) movedBytes / total, minimum,
        shardsPerNode.length == 0 ? 1.0 : LoadStats.of(shardsPerNode).peakToAverage(),
        bytesPerNode.length == 0 ? 1.0 : LoadStats.of(bytesPerNode).peakToAverage());
  }

  /** The least share of bytes any plan must move to reach every node's weighted share of bytes. */
  private static double minimumFraction(Table table, Map<ShardId, ShardSize> sizes, List<NodeCapacity> targets, long total) {
    if (total == 0 || targets.isEmpty()) {
      return 0;
    }
    double weights = targets.stream().mapToDouble(NodeCapacity::weight).sum();
    Map<NodeId, Long> now = new TreeMap<>();
    long orphaned = 0;
    for (ShardAssignment s : table.shards()) {
      long b = size(sizes, s).bytes();
      boolean staying = targets.stream().anyMatch(n -> n.node().equals(s.owner()));
      if (staying) {
        now.merge(s.owner(), b, Long::sum);
      } else {
        orphaned += b;
      }
    }
    double excess = orphaned;
    for (NodeCapacity n : targets) {
      excess += Math.max(0, now.getOrDefault(n.node(), 0L) - total * n.weight() / weights);
    }
    return excess / total;
  }
}
