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
 * <p>The goal is each node's weighted share of the table's <em>bytes</em> ({@code total × weight /
 * Σ weights}), within {@link #BYTES_TOLERANCE} or one shard's size, with shard counts as the
 * tie-breaker: shards of unequal size (ring arcs, split shards) make counts a poor proxy. Only
 * what the goal needs moves: every shard of a draining or absent node, then between the nodes
 * furthest above and below their share, the shards that close the gap with the fewest bytes (see
 * {@code wholeShards}). A node at or below its share never gives a shard away, so a node that is
 * merely slow keeps everything: this planner only acts on the node list, the weights, the
 * draining flags and the measured sizes it is given.
 *
 * <p>{@code mod}, {@code jump} and {@code rendezvous} tables cannot move incrementally: changing
 * the number of buckets re-places keys everywhere, so the plan has no moves and says what a full
 * rewrite would move. A {@code ring} or {@code tokens} table of hash ranges grows as consistent
 * hashing does: once a joining node's points are on the ring ({@link
 * io.shardwise.core.map.ShardMapDelta.JoinRing}), the plan moves exactly the ranges of its arcs to
 * it and nothing else; after that it is balanced like any other table. A ring of whole arcs (made
 * before rings were hash ranges) keeps its points, and a joining node takes over existing arcs
 * whole. Deterministic and pure.
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
    if (!table.layout().ringMembers().isEmpty()) {
      java.util.Optional<Plan> arcs = ringArcs(map, table, nodes, sizes);
      if (arcs.isPresent()) {
        return arcs.get();
      }
    }
    Plan plan = wholeShards(map, table, nodes, sizes);
    if ((strategy == Strategy.RING || strategy == Strategy.TOKENS) && table.layout().ringMembers().isEmpty() && !plan.moves().isEmpty()) {
      return new Plan(plan.table(), plan.baseEpoch(), plan.moves(), plan.forecast(),
          "ring arcs change owner whole; the ring's points stay where they are");
    }
    return plan;
  }

  /**
   * A ring of ranges ({@link io.shardwise.core.partition.RingRanges}) whose members include live,
   * non-draining nodes that own none of its ranges (they joined, or came back): each takes exactly
   * the ranges its points own, from wherever they are, and nothing else moves. Empty when there is
   * no such node; the usual whole-shard balancing applies then.
   */
  private static java.util.Optional<Plan> ringArcs(ShardMap map, Table table, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    List<NodeCapacity> targets = eligible(nodes);
    java.util.Set<NodeId> owning = new java.util.TreeSet<>();
    table.shards().forEach(s -> owning.add(s.owner()));
    List<String> members = table.layout().ringMembers();
    java.util.Set<NodeId> arriving = new java.util.TreeSet<>();
    for (NodeCapacity n : targets) {
      if (members.contains(n.node().value()) && !owning.contains(n.node())) {
        arriving.add(n.node());
      }
    }
    if (arriving.isEmpty()) {
      return java.util.Optional.empty();
    }
    int[] memberOf = io.shardwise.core.partition.RingRanges.memberOfRanges(table.spec(), table.layout());
    List<Move> moves = new ArrayList<>();
    long movedBytes = 0;
    for (int position = 0; position < memberOf.length; position++) {
      NodeId to = NodeId.of(members.get(memberOf[position]));
      ShardAssignment s = table.shards().get(position);
      if (arriving.contains(to) && !s.owner().equals(to)) {
        ShardSize size = size(sizes, s);
        moves.add(new Move(s.id(), s.owner(), to, size.keys(), size.bytes()));
        movedBytes += size.bytes();
      }
    }
    if (moves.isEmpty()) {
      return java.util.Optional.empty();
    }
    String note = "the ring points of " + arriving + " take over their arcs: " + moves.size() + " ranges move to "
        + (arriving.size() == 1 ? "it" : "them") + ", and no other key moves";
    return java.util.Optional.of(new Plan(table.name(), map.epoch(), moves, forecast(table, moves, sizes, targets, movedBytes), note));
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

  /** A node may end this far from its weighted share of a table's bytes (or one shard's size, if larger). */
  public static final double BYTES_TOLERANCE = 0.05;

  /**
   * A move that evens bytes or counts may leave its destination serving at most this much more than
   * the busier of the two nodes did (requests per second of the table's shards, {@link
   * ShardSize#requestsPerSecond}); beyond it, the move would shift a load peak, not even anything.
   */
  public static final double LOAD_SLACK = 0.1;

  /**
   * Requests are rebalanced once a node serves more than this much above its weighted share of the
   * table's requests per second; a move that evens bytes or counts never takes a node past it.
   */
  public static final double LOAD_TRIGGER = 0.25;

  /**
   * A node is moved off for load only when it serves at least this many requests per second above
   * its share: a smaller difference is within the noise of a 10-second mean and not worth a copy.
   */
  public static final double LOAD_MIN_EXCESS_RPS = 500;

  /** A shard serving fewer requests per second than this is cold: any node may take it. */
  public static final double COLD_REQUESTS_PER_SECOND = 1;

  /** Bytes are rebalanced only once some node is off its share by more than this many tolerances. */
  public static final double BYTES_TRIGGER = 2;

  /**
   * Whole-shard moves, in three steps over one evolving assignment:
   *
   * <ol>
   *   <li>the shards of draining and absent nodes go, largest first, each to the node furthest
   *       below its share of bytes (then of shards);
   *   <li>bytes, once a node is off its share by more than {@link #BYTES_TRIGGER} tolerances (a
   *       tolerance: {@link #BYTES_TOLERANCE} of the share, or the table's largest shard if more):
   *       while a node is off by more than one tolerance, the node most
   *       above gives one shard to the node most below — the largest that does not overshoot
   *       their midpoint, else the smallest that still brings both closer — so that the fewest
   *       bytes move; it stops when no single move brings a pair closer;
   *   <li>shard counts, the tie-breaker: nodes above their weighted count give their smallest
   *       shards to nodes below it, as long as no node leaves (or moves further out of) its bytes
   *       tolerance.
   * </ol>
   *
   * Steps 2 and 3 never move a shard that would leave its destination serving more than {@link
   * #LOAD_SLACK} above the busier of the two nodes, or more than {@link #LOAD_TRIGGER} above its
   * weighted share of the table's requests (by the shards' measured requests per second): a hot
   * shard placed on a quiet node stays there rather than follow the byte count. (A shard that moved
   * or split within the window shows only the part of it its owner has seen, so the guard may let
   * it move on once more; keeping such shards put instead stalled the moves a returning node
   * needs.) Then, 4., once a node serves more than {@link #LOAD_TRIGGER} above its share, the busiest node gives the
   * least-loaded one the shard that lowers the busier of the two the most, as long as both stay
   * within their bytes' tolerance (or no further out of it) — so the other shards leave the node
   * that holds a hot one. Unmeasured shards count 0 requests: without rates steps 2 and 3 are as
   * they were and step 4 does nothing; step 4 also waits until every shard's rate is settled (a
   * whole window on its owner), so a shard just moved, which its new owner has seen only briefly,
   * does not make that node look idle and draw more moves.
   *
   * A node never both gives and receives, and each shard moves at most once. If any shard held by
   * a node that stays has no measured size (its node did not answer), bytes are unknown and only
   * shard counts are balanced.
   */
  private static Plan wholeShards(ShardMap map, Table table, List<NodeCapacity> nodes, Map<ShardId, ShardSize> sizes) {
    List<NodeCapacity> targets = eligible(nodes);
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("no node to place table " + table.name() + " on: every live node is draining");
    }
    Assignment a = new Assignment(table, targets, sizes);
    boolean bytesKnown = table.shards().stream().allMatch(s -> !a.held.containsKey(s.owner()) || sizes.containsKey(s.id()));
    Map<NodeId, Integer> goal = goals(table.shards().size(), targets, a.held);

    // 1. What must leave.
    a.pool.sort(Comparator.<ShardAssignment>comparingLong(s -> size(sizes, s).bytes()).reversed().thenComparing(ShardAssignment::id));
    for (ShardAssignment s : a.pool) {
      NodeId to = null;
      for (NodeCapacity n : targets) {
        NodeId id = n.node();
        if (to == null || a.excess(id) < a.excess(to)
            || (a.excess(id) == a.excess(to) && a.held.get(id).size() - goal.get(id) < a.held.get(to).size() - goal.get(to))) {
          to = id;
        }
      }
      a.move(s, to);
    }

    // 2. Bytes, once some node is off by more than twice its tolerance (hysteresis: sizes measured
    // while data is loaded or deleted wobble, and a plan must not chase them).
    double mustShed = 0; // bytes step 2 has to move at least: what nodes hold beyond one tolerance above their share
    if (bytesKnown && a.total > 0 && !a.withinTolerance(BYTES_TRIGGER)) {
      for (NodeCapacity n : targets) {
        mustShed += Math.max(0, a.excess(n.node()) - a.tolerance(n.node()));
      }
      for (int step = 0; step < table.shards().size() && !a.withinTolerance(); step++) {
        if (!a.improveBytes()) {
          break;
        }
      }
    }

    // 3. Shard counts, within the bytes' tolerance.
    for (int step = 0; step < table.shards().size(); step++) {
      if (!a.evenCounts(goal, bytesKnown)) {
        break;
      }
    }

    // 4. Requests, once a node serves more than LOAD_TRIGGER above its share of them.
    int forLoad = 0;
    for (int step = 0; step < table.shards().size() && a.overLoaded(); step++) {
      if (!a.improveLoad(bytesKnown)) {
        break;
      }
      forLoad++;
    }

    List<Move> moves = a.moves;
    moves.sort(Comparator.comparing(Move::shard));
    String note = moves.isEmpty() ? "already balanced" : forLoad > 0 ? forLoad + " of the moves take requests off the busiest node" : null;
    if (!bytesKnown) {
      note = (note == null ? "" : note + "; ") + "shard sizes unknown (a node did not answer): balanced by shard count only";
    }
    return new Plan(table.name(), map.epoch(), moves, forecast(table, moves, sizes, targets, mustShed), note);
  }

  /** The planner's working state: who holds what, and what has moved. */
  private static final class Assignment {
    final Map<NodeId, List<ShardAssignment>> held = new TreeMap<>();
    final Map<NodeId, Long> bytes = new TreeMap<>();
    final Map<NodeId, Double> load = new TreeMap<>();
    final Map<NodeId, Double> share = new TreeMap<>();
    final Map<NodeId, Double> weightShare = new TreeMap<>();
    final List<ShardAssignment> pool = new ArrayList<>();
    final java.util.Set<NodeId> givers = new java.util.TreeSet<>();
    final java.util.Set<NodeId> receivers = new java.util.TreeSet<>();
    final java.util.Set<ShardId> moved = new java.util.TreeSet<>();
    final List<Move> moves = new ArrayList<>();
    final Map<ShardId, ShardSize> sizes;
    final long total;
    final long largest;
    final double totalLoad;
    /** Every shard's rate is a mean over the whole window on its owner: only then are shards moved for load. */
    final boolean ratesSettled;

    Assignment(Table table, List<NodeCapacity> targets, Map<ShardId, ShardSize> sizes) {
      this.sizes = sizes;
      targets.forEach(n -> {
        held.put(n.node(), new ArrayList<>());
        bytes.put(n.node(), 0L);
        load.put(n.node(), 0.0);
      });
      long sum = 0;
      long max = 0;
      for (ShardAssignment s : table.shards()) {
        long b = size(sizes, s).bytes();
        sum += b;
        max = Math.max(max, b);
        List<ShardAssignment> on = held.get(s.owner());
        if (on == null) {
          pool.add(s); // draining or absent: must move
        } else {
          on.add(s);
          bytes.merge(s.owner(), b, Long::sum);
          load.merge(s.owner(), size(sizes, s).requestsPerSecond(), Double::sum);
        }
      }
      total = sum;
      largest = max;
      double rps = 0;
      for (ShardAssignment s : table.shards()) {
        rps += size(sizes, s).requestsPerSecond();
      }
      totalLoad = rps;
      boolean settled = true;
      for (ShardAssignment s : table.shards()) {
        settled &= size(sizes, s).rateSettled();
      }
      ratesSettled = settled;
      double weights = targets.stream().mapToDouble(NodeCapacity::weight).sum();
      targets.forEach(n -> share.put(n.node(), total * n.weight() / weights));
      targets.forEach(n -> weightShare.put(n.node(), n.weight() / weights));
    }

    /** Bytes above (positive) or below (negative) the node's weighted share. */
    double excess(NodeId n) {
      return bytes.get(n) - share.get(n);
    }

    /** How far from its share a node may end: 5% of it, or the table's largest shard if that is more (no move can do better). */
    double tolerance(NodeId n) {
      return Math.max(BYTES_TOLERANCE * share.get(n), largest);
    }

    boolean withinTolerance() {
      return withinTolerance(1);
    }

    boolean withinTolerance(double times) {
      return held.keySet().stream().allMatch(n -> Math.abs(excess(n)) <= times * tolerance(n));
    }

    void move(ShardAssignment s, NodeId to) {
      long b = size(sizes, s).bytes();
      double rps = size(sizes, s).requestsPerSecond();
      List<ShardAssignment> from = held.get(s.owner());
      if (from != null) {
        from.remove(s);
        bytes.merge(s.owner(), -b, Long::sum);
        load.merge(s.owner(), -rps, Double::sum);
        givers.add(s.owner());
      }
      held.get(to).add(s);
      bytes.merge(to, b, Long::sum);
      load.merge(to, rps, Double::sum);
      receivers.add(to);
      moved.add(s.id());
      ShardSize size = size(sizes, s);
      moves.add(new Move(s.id(), s.owner(), to, size.keys(), size.bytes()));
    }

    /** One move between the pair furthest apart that has one; false if no pair has. */
    boolean improveBytes() {
      List<NodeId> over = new ArrayList<>(held.keySet());
      over.removeIf(receivers::contains);
      over.sort(Comparator.comparingDouble((NodeId n) -> -excess(n)).thenComparing(n -> n));
      List<NodeId> under = new ArrayList<>(held.keySet());
      under.removeIf(givers::contains);
      under.sort(Comparator.comparingDouble(this::excess).thenComparing(n -> n));
      for (NodeId d : over) {
        if (excess(d) <= 0) {
          break;
        }
        for (NodeId r : under) {
          if (r.equals(d) || excess(r) >= 0) {
            break;
          }
          if (Math.abs(excess(d)) <= tolerance(d) && Math.abs(excess(r)) <= tolerance(r)) {
            continue;
          }
          ShardAssignment pick = pickForBytes(d, r);
          if (pick != null) {
            move(pick, r);
            return true;
          }
        }
      }
      return false;
    }

    private ShardAssignment pickForBytes(NodeId d, NodeId r) {
      double ed = excess(d);
      double er = excess(r);
      double half = (ed - er) / 2;
      ShardAssignment best = null; // the largest that does not overshoot the midpoint
      ShardAssignment smallestOver = null;
      for (ShardAssignment s : held.get(d)) {
        long b = size(sizes, s).bytes();
        if (b == 0 || moved.contains(s.id()) || !loadAllows(s, d, r)) {
          continue;
        }
        if (b <= half) {
          if (best == null || b > size(sizes, best).bytes()) {
            best = s;
          }
        } else if (smallestOver == null || b < size(sizes, smallestOver).bytes()) {
          smallestOver = s;
        }
      }
      if (best != null) {
        return best;
      }
      if (smallestOver != null) {
        long b = size(sizes, smallestOver).bytes();
        if (Math.max(Math.abs(ed - b), Math.abs(er + b)) < Math.max(Math.abs(ed), Math.abs(er))) {
          return smallestOver;
        }
      }
      return null;
    }

    /** One move from a node above its count goal to one below; false if none is allowed. */
    boolean evenCounts(Map<NodeId, Integer> goal, boolean bytesKnown) {
      List<NodeId> over = new ArrayList<>();
      List<NodeId> under = new ArrayList<>();
      for (NodeId n : held.keySet()) {
        if (held.get(n).size() > goal.get(n) && !receivers.contains(n)) {
          over.add(n);
        } else if (held.get(n).size() < goal.get(n) && !givers.contains(n)) {
          under.add(n);
        }
      }
      over.sort(Comparator.comparingInt((NodeId n) -> goal.get(n) - held.get(n).size()).thenComparing(n -> n));
      under.sort(Comparator.comparingDouble((NodeId n) -> bytes.get(n) / Math.max(share.get(n), 1e-9))
          .thenComparingInt(n -> held.get(n).size() - goal.get(n)).thenComparing(n -> n));
      for (NodeId d : over) {
        List<ShardAssignment> candidates = new ArrayList<>(held.get(d));
        candidates.removeIf(s -> moved.contains(s.id()));
        candidates.sort(Comparator.<ShardAssignment>comparingLong(s -> size(sizes, s).bytes()).thenComparing(ShardAssignment::id));
        for (ShardAssignment s : candidates) {
          long b = size(sizes, s).bytes();
          for (NodeId r : under) {
            if ((!bytesKnown || (keepsTolerance(d, -b) && keepsTolerance(r, b))) && loadAllows(s, d, r)) {
              move(s, r);
              return true;
            }
          }
        }
      }
      return false;
    }

    /**
     * Whether moving {@code s} from {@code d} to {@code r} leaves {@code r} at most {@link
     * #LOAD_SLACK} above the busier of the two now and at most {@link #LOAD_TRIGGER} above its share.
     */
    private boolean loadAllows(ShardAssignment s, NodeId d, NodeId r) {
      double rps = size(sizes, s).requestsPerSecond();
      double after = load.get(r) + rps;
      return rps < COLD_REQUESTS_PER_SECOND
          || (after <= Math.max(load.get(d), load.get(r)) * (1 + LOAD_SLACK) && after <= (1 + LOAD_TRIGGER) * loadShare(r));
    }

    /** The node's weighted share of the table's requests per second. */
    double loadShare(NodeId n) {
      return totalLoad * weightShare.get(n);
    }

    /** Whether some node serves more than {@link #LOAD_TRIGGER} above its share of the table's requests, and at least {@link #LOAD_MIN_EXCESS_RPS} more. */
    boolean overLoaded() {
      return ratesSettled && held.keySet().stream().anyMatch(this::overLoaded);
    }

    private boolean overLoaded(NodeId n) {
      return load.get(n) > (1 + LOAD_TRIGGER) * loadShare(n) && load.get(n) - loadShare(n) >= LOAD_MIN_EXCESS_RPS;
    }

    /**
     * One move of requests: the overloaded node furthest above its share of them (that has not received)
     * gives the node furthest below (that has not given) the shard that lowers the busier of the
     * two the most, within the bytes' tolerance; false if there is none.
     */
    boolean improveLoad(boolean bytesKnown) {
      Comparator<NodeId> byLoad = Comparator.comparingDouble((NodeId n) -> load.get(n) / Math.max(loadShare(n), 1e-9)).thenComparing(n -> n);
      NodeId d = held.keySet().stream().filter(n -> !receivers.contains(n) && overLoaded(n)).max(byLoad).orElse(null);
      NodeId r = held.keySet().stream().filter(n -> !givers.contains(n) && !n.equals(d)).min(byLoad).orElse(null);
      if (d == null || r == null) {
        return false;
      }
      double peak = Math.max(load.get(d), load.get(r));
      ShardAssignment best = null;
      double bestPeak = peak;
      for (ShardAssignment s : held.get(d)) {
        double rps = size(sizes, s).requestsPerSecond();
        long b = size(sizes, s).bytes();
        if (rps < COLD_REQUESTS_PER_SECOND || moved.contains(s.id()) || (bytesKnown && !(keepsTolerance(d, -b) && keepsTolerance(r, b)))) {
          continue;
        }
        double after = Math.max(load.get(d) - rps, load.get(r) + rps);
        if (after < bestPeak || (after == bestPeak && best != null && s.id().compareTo(best.id()) < 0)) {
          best = s;
          bestPeak = after;
        }
      }
      if (best == null || bestPeak >= peak) {
        return false;
      }
      move(best, r);
      return true;
    }

    /** True if adding {@code delta} bytes leaves {@code n} within its tolerance, or no further out of it than now. */
    private boolean keepsTolerance(NodeId n, long delta) {
      double after = Math.abs(excess(n) + delta);
      return after <= tolerance(n) || after <= Math.abs(excess(n));
    }
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
    return new Plan(table.name(), map.epoch(), List.of(), forecast(table, List.of(), sizes, eligible(nodes), 0), note);
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

  /** The plan's figures; {@code mustShed}: the bytes beyond tolerance the planner's bytes step had to move (0 if it did not run). */
  private static Plan.Forecast forecast(Table table, List<Move> moves, Map<ShardId, ShardSize> sizes, List<NodeCapacity> targets,
      double mustShed) {
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
    double minimum = total == 0 ? 0 : (orphaned(table, sizes, targets) + mustShed) / total;
    return new Plan.Forecast(movedKeys, movedBytes, total, total == 0 ? 0 : (double) movedBytes / total, minimum,
        shardsPerNode.length == 0 ? 1.0 : LoadStats.of(shardsPerNode).peakToAverage(),
        bytesPerNode.length == 0 ? 1.0 : LoadStats.of(bytesPerNode).peakToAverage());
  }

  /**
   * The bytes of shards whose owner is not a target (drained, or gone): every plan moves them. With
   * what the bytes step must shed, that is the plan's minimum — the least any plan by the same rule
   * (every node within one tolerance of its weighted share once some node is off by more than
   * {@link #BYTES_TRIGGER}) moves — so a plan never reports moving less than its minimum.
   */
  private static long orphaned(Table table, Map<ShardId, ShardSize> sizes, List<NodeCapacity> targets) {
    long orphaned = 0;
    for (ShardAssignment s : table.shards()) {
      if (targets.stream().noneMatch(n -> n.node().equals(s.owner()))) {
        orphaned += size(sizes, s).bytes();
      }
    }
    return orphaned;
  }
}
