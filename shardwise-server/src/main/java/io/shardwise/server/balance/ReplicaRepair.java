package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.plan.ReplicaPlacement;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.Coordinator;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps every shard of a replicated table at its table's replication factor — failover
 * rebalancing, run by the controller (the balancer's leader) at every tick after {@link Failover}:
 *
 * <ul>
 *   <li>a follower on a node absent from ZooKeeper past the grace period is removed (the node's
 *       own copy stays on its disk and goes to its trash when it returns, as for a move);
 *   <li>a shard with fewer replicas than its factor gets new followers, on live nodes that are not
 *       draining, chosen by {@link ReplicaPlacement} (distinct nodes, new zones first, the nodes
 *       holding the fewest replicas first); each is built by its leader (a snapshot, then the log)
 *       and joins the in-sync set when caught up;
 *   <li>a shard led from a draining node hands its leadership to an in-sync follower (cheap: no
 *       data moves), and a follower on a draining node is removed once the shard has its factor of
 *       in-sync replicas elsewhere;
 *   <li>a shard with more replicas than its factor (the factor was lowered) loses followers, those
 *       not in sync first.
 * </ul>
 *
 * <p>A shard with a plan's replica move under way ({@link ReplicaMoves}) is left alone: it holds
 * one replica more than its factor on purpose until the move ends.
 *
 * <p>Rate-limited: a node builds at most {@code maxBuildingPerNode} followers at once (followers not
 * yet in sync count), so a lost node's data is rebuilt a few shards at a time per node and the
 * survivors keep serving. A node that is registered but slow keeps its replicas: nothing here looks
 * at latency or load (the cascading-failure guard). A shard whose leader is not live is left to
 * {@link Failover}: there is nothing to copy from.
 */
final class ReplicaRepair {

  private static final Logger LOG = LoggerFactory.getLogger(ReplicaRepair.class);

  private final Coordinator coordinator;

  ReplicaRepair(Coordinator coordinator) {
    this.coordinator = coordinator;
  }

  /** The cluster as the repair sees it. */
  record Cluster(Set<NodeId> live, Map<NodeId, String> zones, Set<NodeId> absentPastGrace, Set<NodeId> drains, int maxBuildingPerNode,
      Set<ShardId> moving) {
    Cluster {
      moving = Set.copyOf(moving);
    }
  }

  /** The changes that bring the shards of replicated tables closer to their factors, in one delta; empty if none is due. */
  static Optional<ShardMapDelta> plan(ShardMap map, Cluster c) {
    List<NodeId> candidates = c.live().stream().filter(n -> !c.drains().contains(n)).sorted().toList();
    ReplicaPlacement placement = new ReplicaPlacement(candidates, c.zones());
    Map<NodeId, Integer> building = new HashMap<>();
    for (Table t : map.tables().values()) {
      if (!t.replication().replicated()) {
        continue;
      }
      for (ShardAssignment s : t.shards()) {
        s.replicas().forEach(placement::count);
        for (NodeId f : s.followers()) {
          if (!s.inSync().contains(f) && c.live().contains(f) && c.live().contains(s.owner())) {
            building.merge(f, 1, Integer::sum);
          }
        }
      }
    }
    ShardMapDelta.Builder delta = ShardMapDelta.on(map);
    int changes = 0;
    for (Table t : map.tables().values()) {
      if (!t.replication().replicated()) {
        continue;
      }
      int factor = t.replication().factor();
      for (ShardAssignment s : t.shards()) {
        if (!c.live().contains(s.owner())) {
          continue; // Failover's: nothing to copy from
        }
        if (c.moving().contains(s.id())) {
          continue; // a plan's replica move is under way: its extra replica is meant to be there
        }
        if (c.drains().contains(s.owner())) {
          Optional<NodeId> to = s.inSync().stream().filter(n -> c.live().contains(n) && !c.drains().contains(n)).findFirst();
          if (to.isPresent()) {
            delta.add(new ShardMapDelta.ChangeLeader(s.id(), s.owner(), to.get(), false));
            changes++;
            continue; // its followers are looked at again under the new leader
          }
        }
        List<NodeId> gone = s.followers().stream().filter(c.absentPastGrace()::contains).toList();
        for (NodeId g : gone) {
          delta.add(new ShardMapDelta.RemoveFollower(s.id(), g));
          changes++;
        }
        List<NodeId> kept = new ArrayList<>(s.replicas());
        kept.removeAll(gone);
        // Replicas that count toward the factor: not draining (a node absent within the grace may return).
        List<NodeId> staying = kept.stream().filter(n -> !c.drains().contains(n)).toList();
        if (staying.size() < factor) {
          Set<NodeId> full = new TreeSet<>();
          building.forEach((n, b) -> {
            if (b >= c.maxBuildingPerNode()) {
              full.add(n);
            }
          });
          for (NodeId n : placement.more(kept, factor - staying.size(), full)) {
            delta.add(new ShardMapDelta.AddFollower(s.id(), n));
            building.merge(n, 1, Integer::sum);
            changes++;
          }
          continue;
        }
        long inSyncStaying = s.inSyncReplicas().stream().filter(n -> staying.contains(n) && c.live().contains(n)).count();
        List<NodeId> draining = kept.stream().filter(n -> c.drains().contains(n) && !n.equals(s.owner())).toList();
        if (!draining.isEmpty() && inSyncStaying >= factor) {
          for (NodeId d : draining) {
            delta.add(new ShardMapDelta.RemoveFollower(s.id(), d));
            changes++;
          }
          continue;
        }
        if (staying.size() > factor) {
          // The factor was lowered: out-of-sync followers go first, then the last in-sync ones.
          List<NodeId> order = new ArrayList<>();
          s.followers().stream().filter(f -> staying.contains(f) && !s.inSync().contains(f)).forEach(order::add);
          List<NodeId> inSync = new ArrayList<>(s.inSync());
          java.util.Collections.reverse(inSync);
          inSync.stream().filter(staying::contains).forEach(order::add);
          for (NodeId f : order.subList(0, staying.size() - factor)) {
            delta.add(new ShardMapDelta.RemoveFollower(s.id(), f));
            changes++;
          }
        }
      }
    }
    return changes == 0 ? Optional.empty() : Optional.of(delta.build());
  }

  /** Runs the repair against the stored map; returns how many changes it made. */
  int run(Set<NodeId> absentPastGrace, Set<NodeId> drains, int maxBuildingPerNode, Set<ShardId> moving) {
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    Map<NodeId, String> zones = PlanMaker.zones(live);
    Cluster cluster = new Cluster(live.keySet(), zones, absentPastGrace, drains, Math.max(1, maxBuildingPerNode), moving);
    if (plan(coordinator.readMap().map(), cluster).isEmpty()) {
      return 0; // nothing to do: no write to ZooKeeper
    }
    int[] changed = {0};
    StringBuilder what = new StringBuilder();
    ShardMap after = coordinator.updateMap(map -> {
      Optional<ShardMapDelta> d = plan(map, cluster);
      changed[0] = d.map(x -> x.changes().size()).orElse(0);
      what.setLength(0);
      d.ifPresent(x -> x.changes().stream().limit(8).forEach(ch -> what.append(what.length() == 0 ? "" : ", ").append(ch)));
      return d;
    });
    if (changed[0] > 0) {
      LOG.info("replica repair: {} change{} (map epoch {}): {}{}", changed[0], changed[0] == 1 ? "" : "s", after.epoch(), what,
          changed[0] > 8 ? ", …" : "");
    }
    return changed[0];
  }
}
