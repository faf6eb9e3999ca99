package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.Coordinator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's failover (Kafka's controller electing a partition leader): every shard of a
 * replicated table whose leader's node has left ZooKeeper gets one of its in-sync followers that is
 * live as its new leader, and every in-sync follower whose node has left drops out of the set, all
 * in one compare-and-set of the map. The balancer's leader runs
 * it as soon as the live nodes change, and at every tick (a new leader catches what the old one left).
 *
 * <p>Only an in-sync follower ever leads — it has every acknowledged write — so a shard whose only
 * in-sync replica was its leader waits for that node to come back (no unclean election); the old
 * leader, when it returns, is a follower out of sync until it has caught up. This is failover, not
 * rebalancing: a node that is registered but slow keeps its shards.
 */
public final class Failover {

  private static final Logger LOG = LoggerFactory.getLogger(Failover.class);

  private final Coordinator coordinator;

  Failover(Coordinator coordinator) {
    this.coordinator = coordinator;
  }

  /** The delta that moves the leadership of every shard led by a node not in {@code live} to a live in-sync follower, if any does. */
  public static Optional<ShardMapDelta> plan(ShardMap map, java.util.Set<NodeId> live) {
    ShardMapDelta.Builder delta = ShardMapDelta.on(map);
    int changes = 0;
    for (Table t : map.tables().values()) {
      for (ShardAssignment s : t.shards()) {
        if (s.followers().isEmpty()) {
          continue;
        }
        if (live.contains(s.owner())) {
          // A live leader's in-sync followers whose nodes are gone leave the set now, as Kafka's
          // controller drops a dead broker from every ISR: writes would otherwise wait for them for
          // the leader's lag bound, on every shard they follow.
          List<NodeId> alive = s.inSync().stream().filter(live::contains).toList();
          if (alive.size() < s.inSync().size()) {
            delta.add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(), s.epoch(), alive));
            changes++;
          }
          continue;
        }
        for (NodeId f : s.inSync()) {
          if (live.contains(f)) {
            delta.add(new ShardMapDelta.ChangeLeader(s.id(), s.owner(), f, false));
            changes++;
            List<NodeId> alive = s.inSync().stream().filter(n -> !n.equals(f) && live.contains(n)).toList();
            if (alive.size() < s.inSync().size() - 1) {
              // and, in the same change, its other in-sync followers that are gone too (the shard's epoch is the new map's then)
              delta.add(new ShardMapDelta.ChangeInSync(s.id(), f, map.epoch() + 1, alive));
            }
            break;
          }
        }
      }
    }
    return changes == 0 ? Optional.empty() : Optional.of(delta.build());
  }

  /**
   * What {@link #forget} decides: the change to store, and the shards it cannot fix — {@code node}
   * leads them and none of their followers is in sync, so {@code node}'s lost data was their only
   * copy with every acknowledged write.
   */
  public record Forgetting(Optional<ShardMapDelta> delta, List<io.shardwise.core.map.ShardId> stranded) {}

  /**
   * The change that stops the map counting on {@code node}'s replicas, for a node whose store is
   * not the one they were granted to (its data directory was wiped or replaced: Kafka's KIP-966
   * problem, where a broker that lost its disk comes back under its old id and is still in the
   * in-sync sets). Every in-sync set loses {@code node}; every shard it leads gets an in-sync
   * follower as leader (a live one if any, else one that is down: the shard then waits for that
   * node, as it would for an unclean election's refusal), and {@code node} stays a follower, out of
   * sync, to be rebuilt from its new leader. Shards it leads with no in-sync follower are {@link
   * Forgetting#stranded}.
   */
  public static Forgetting forget(ShardMap map, NodeId node, java.util.Set<NodeId> live) {
    ShardMapDelta.Builder delta = ShardMapDelta.on(map);
    int changes = 0;
    List<io.shardwise.core.map.ShardId> stranded = new java.util.ArrayList<>();
    for (Table t : map.tables().values()) {
      for (ShardAssignment s : t.shards()) {
        if (s.owner().equals(node) && !s.followers().isEmpty()) {
          Optional<NodeId> next = s.inSync().stream().filter(live::contains).findFirst().or(() -> s.inSync().stream().findFirst());
          if (next.isEmpty()) {
            stranded.add(s.id());
          } else {
            delta.add(new ShardMapDelta.ChangeLeader(s.id(), node, next.get(), false));
            changes++;
          }
        } else if (s.inSync().contains(node)) {
          delta.add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(), s.epoch(), s.inSync().stream().filter(n -> !n.equals(node)).toList()));
          changes++;
        }
      }
    }
    return new Forgetting(changes == 0 ? Optional.empty() : Optional.of(delta.build()), List.copyOf(stranded));
  }

  /** Runs the failover against the stored map and the live nodes now; returns how many shards changed. */
  int run() {
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    int[] changed = {0};
    ShardMap before = coordinator.readMap().map();
    if (plan(before, live.keySet()).isEmpty()) {
      return 0; // nothing to do: no write to ZooKeeper
    }
    ShardMap after = coordinator.updateMap(map -> {
      Optional<ShardMapDelta> d = plan(map, live.keySet());
      changed[0] = d.map(x -> x.changes().size()).orElse(0);
      return d;
    });
    if (changed[0] > 0) {
      LOG.info("failover: {} shard{} with replicas on nodes not live ({} live) have new leaders or in-sync sets (map epoch {})", changed[0],
          changed[0] == 1 ? "" : "s", live.keySet(), after.epoch());
    }
    return changed[0];
  }
}
