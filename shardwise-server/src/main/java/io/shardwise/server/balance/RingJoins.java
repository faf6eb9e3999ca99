package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.RingRanges;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.ShardSplits;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts every live, non-draining node on the ring of every {@code ring} and {@code tokens} table of
 * hash ranges it is not on yet ({@link io.shardwise.core.partition.RingRanges}): a map change that
 * cuts the ranges its points fall inside and writes no data (for a replicated table, the cuts are
 * replicated splits first). The planner then moves exactly the new node's arcs to it (for a
 * replicated table, their leads). Runs before a plan is made: by the balancer for tables that are
 * not {@code manual}, and when an operator asks for a plan.
 */
final class RingJoins {

  private static final Logger LOG = LoggerFactory.getLogger(RingJoins.class);

  private RingJoins() {}

  /**
   * Joins the nodes of {@code live} that are not in {@code drains} to the rings of the tables
   * {@code include} accepts, in node order (a node's place on the ring is its order of joining).
   * Tables of one replica: one compare-and-set for every join. A replicated table: one member at a
   * time, whose cuts are first made as ordinary replicated splits at its points ({@link
   * ShardSplits#split}: each quiesced by the range's leader, so every replica cuts its log at the same
   * place), after which its join cuts nothing and only adds it to the members. A join that cannot
   * be made now (a range's leader is not live, say) is logged and tried again next time.
   *
   * @return the stored map, with the joins if there were any
   */
  static ShardMap join(Coordinator coordinator, ShardSplits splits, ShardMap current, Set<NodeId> live, Set<NodeId> drains,
      Predicate<String> include) {
    List<ShardMapDelta.JoinRing> all = missing(current, live, drains, include);
    if (all.isEmpty()) {
      return current;
    }
    ShardMap stored = current;
    if (all.stream().anyMatch(j -> !replicated(current, j))) {
      stored = coordinator.updateMap(map -> {
        List<ShardMapDelta.JoinRing> joins = missing(map, live, drains, include).stream().filter(j -> !replicated(map, j)).toList();
        if (joins.isEmpty()) {
          return Optional.empty();
        }
        ShardMapDelta.Builder delta = ShardMapDelta.on(map);
        joins.forEach(j -> delta.joinRing(j.table(), j.node()));
        return Optional.of(delta.build());
      });
    }
    for (ShardMapDelta.JoinRing j : all) {
      if (replicated(current, j)) {
        try {
          stored = joinReplicated(coordinator, splits, stored, j);
        } catch (RuntimeException e) {
          LOG.warn("ring of table {}: {} could not join now (tried again later): {}", j.table(), j.node(), e.getMessage());
          break; // members join in order: a later one must not take this one's place on the ring
        }
      }
    }
    if (stored.epoch() != current.epoch()) {
      for (Table t : stored.tables().values()) {
        Table before = current.table(t.name()).orElse(null);
        if (before != null && before.id() == t.id() && !before.layout().ringMembers().equals(t.layout().ringMembers())) {
          LOG.info("ring of table {}: {} joined (members now {}), {} ranges (was {}), map epoch {}", t.name(),
              t.layout().ringMembers().subList(before.layout().ringMembers().size(), t.layout().ringMembers().size()),
              t.layout().ringMembers(), t.shards().size(), before.shards().size(), stored.epoch());
        }
      }
    }
    return stored;
  }

  private static boolean replicated(ShardMap map, ShardMapDelta.JoinRing j) {
    return map.table(j.table()).map(t -> t.replication().replicated()).orElse(false);
  }

  /**
   * Joins {@code j.node()} to a replicated table's ring: each of the cuts its points make is a
   * replicated split of the range it falls in, one at a time against the map the last one left;
   * then one compare-and-set adds the member, made only if it cuts nothing (a merge in between
   * would undo a cut: then nothing is joined, and the next round cuts again).
   */
  private static ShardMap joinReplicated(Coordinator coordinator, ShardSplits splits, ShardMap current, ShardMapDelta.JoinRing j) {
    ShardMap map = current;
    while (true) {
      Table t = map.table(j.table()).orElse(null);
      if (t == null || t.layout().ringMembers().contains(j.node().value())) {
        return map;
      }
      long[] cuts = RingRanges.joinCuts(t.spec(), t.layout());
      if (cuts.length == 0) {
        break;
      }
      long at = cuts[0];
      ShardAssignment range = t.shards().get(t.layout().shardForHash(at));
      map = splits.split(io.shardwise.proto.v1.SplitShardRequest.newBuilder().setTable(t.name()).setShard(range.id().number())
          .setHasAtHash(true).setAtHash(at).build(), map);
    }
    return coordinator.updateMap(m -> {
      Table t = m.table(j.table()).orElse(null);
      if (t == null || !t.replication().replicated() || t.layout().ringMembers().contains(j.node().value())
          || RingRanges.joinCuts(t.spec(), t.layout()).length > 0) {
        return Optional.empty();
      }
      return Optional.of(ShardMapDelta.on(m).joinRing(j.table(), j.node()).build());
    });
  }

  /** The joins {@code map} lacks. */
  static List<ShardMapDelta.JoinRing> missing(ShardMap map, Set<NodeId> live, Set<NodeId> drains, Predicate<String> include) {
    List<ShardMapDelta.JoinRing> out = new ArrayList<>();
    for (Table t : map.tables().values()) {
      if (t.layout().ringMembers().isEmpty() || !include.test(t.name())) {
        continue;
      }
      for (NodeId n : new java.util.TreeSet<>(live)) {
        if (!drains.contains(n) && !t.layout().ringMembers().contains(n.value())) {
          out.add(new ShardMapDelta.JoinRing(t.name(), n));
        }
      }
    }
    return out;
  }
}
