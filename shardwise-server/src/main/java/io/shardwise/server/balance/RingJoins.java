package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.server.coordination.Coordinator;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts every live, non-draining node on the ring of every {@code ring} and {@code tokens} table of
 * hash ranges it is not on yet ({@link io.shardwise.core.partition.RingRanges}): one map change
 * that cuts the ranges its points fall inside and writes no data. The planner then moves exactly
 * the new node's arcs to it. Runs before a plan is made: by the balancer for tables that are not
 * {@code manual}, and when an operator asks for a plan.
 */
final class RingJoins {

  private static final Logger LOG = LoggerFactory.getLogger(RingJoins.class);

  private RingJoins() {}

  /**
   * Joins the nodes of {@code live} that are not in {@code drains} to the rings of the tables
   * {@code include} accepts, in node order (a node's place on the ring is its order of joining).
   *
   * @return the stored map, with the joins if there were any
   */
  static ShardMap join(Coordinator coordinator, ShardMap current, Set<NodeId> live, Set<NodeId> drains, Predicate<String> include) {
    if (missing(current, live, drains, include).isEmpty()) {
      return current;
    }
    ShardMap stored = coordinator.updateMap(map -> {
      List<ShardMapDelta.JoinRing> joins = missing(map, live, drains, include);
      if (joins.isEmpty()) {
        return Optional.empty();
      }
      ShardMapDelta.Builder delta = ShardMapDelta.on(map);
      joins.forEach(j -> delta.joinRing(j.table(), j.node()));
      return Optional.of(delta.build());
    });
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

  /** The joins {@code map} lacks. */
  static List<ShardMapDelta.JoinRing> missing(ShardMap map, Set<NodeId> live, Set<NodeId> drains, Predicate<String> include) {
    List<ShardMapDelta.JoinRing> out = new ArrayList<>();
    for (Table t : map.tables().values()) {
      if (t.layout().ringMembers().isEmpty() || !include.test(t.name()) || t.replication().replicated()) {
        // (a replicated ring's cut ranges would start new logs on every replica: not done yet)
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
