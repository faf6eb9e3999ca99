package io.shardwise.core.plan;

import io.shardwise.core.map.NodeId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Where a shard's followers go: on nodes other than its leader and each other, on zones no replica
 * of the shard is on yet while there are such zones (nodes labelled {@code zone=…}; a node without
 * one is a zone of its own), and among those on the node holding the fewest replicas so far, then
 * the first after the leader in the given order — so the followers of consecutive shards rotate
 * over the nodes instead of piling on the first ones. Pure and deterministic.
 *
 * <p>Not thread-safe: one placement counts the replicas it has placed ({@link #followers}).
 */
public final class ReplicaPlacement {

  private final List<NodeId> nodes;
  private final Map<NodeId, String> zones;
  private final Map<NodeId, Integer> load = new HashMap<>();

  /**
   * @param nodes the nodes replicas may go on, in a fixed order (the live nodes, by id)
   * @param zones each node's zone label, if it has one
   */
  public ReplicaPlacement(List<NodeId> nodes, Map<NodeId, String> zones) {
    this.nodes = List.copyOf(nodes);
    this.zones = Map.copyOf(zones);
  }

  /** Counts {@code node} as holding one more replica (a leader placed elsewhere, say). */
  public void count(NodeId node) {
    load.merge(node, 1, Integer::sum);
  }

  private String zoneOf(NodeId n) {
    return Objects.requireNonNullElse(zones.get(n), "node:" + n.value());
  }

  /**
   * Chooses {@code count} followers for a shard led by {@code leader}, counts them, and returns
   * them in the order chosen.
   *
   * @throws IllegalArgumentException if there are not {@code count} nodes besides the leader
   */
  public List<NodeId> followers(NodeId leader, int count) {
    if (count > nodes.size() - (nodes.contains(leader) ? 1 : 0)) {
      throw new IllegalArgumentException(count + " followers need " + (count + 1) + " nodes; there are " + nodes.size());
    }
    return more(List.of(leader), count, Set.of());
  }

  /**
   * Chooses up to {@code count} more replicas for a shard whose replicas are {@code existing}
   * (its leader first; they may include nodes not among this placement's), none of them on a node
   * in {@code full}, counts them, and returns them in the order chosen — fewer if the nodes run out.
   */
  public List<NodeId> more(List<NodeId> existing, int count, Set<NodeId> full) {
    List<NodeId> chosen = new ArrayList<>(count);
    Set<String> usedZones = new HashSet<>();
    existing.forEach(n -> usedZones.add(zoneOf(n)));
    int start = existing.isEmpty() ? 0 : Math.max(0, nodes.indexOf(existing.get(0))) + 1;
    for (int k = 0; k < count; k++) {
      NodeId best = null;
      boolean bestNewZone = false;
      int bestLoad = Integer.MAX_VALUE;
      for (int i = 0; i < nodes.size(); i++) {
        NodeId n = nodes.get((start + i) % nodes.size());
        if (existing.contains(n) || chosen.contains(n) || full.contains(n)) {
          continue;
        }
        boolean newZone = !usedZones.contains(zoneOf(n));
        int l = load.getOrDefault(n, 0);
        if (best == null || (newZone && !bestNewZone) || (newZone == bestNewZone && l < bestLoad)) {
          best = n;
          bestNewZone = newZone;
          bestLoad = l;
        }
      }
      if (best == null) {
        break;
      }
      chosen.add(best);
      usedZones.add(zoneOf(best));
      count(best);
    }
    return chosen;
  }
}
