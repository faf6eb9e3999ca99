package io.shardwise.core.map;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Who holds a shard, and since when.
 *
 * <ul>
 *   <li>{@code owner}: the node that serves the shard, its <em>leader</em> when it has replicas: it
 *       orders the shard's writes and is where requests are routed.
 *   <li>{@code followers}: the other nodes that keep a copy (a replica), in the order they were
 *       added; empty for a table of one replica.
 *   <li>{@code inSync}: the followers that have every write the leader acknowledged (Kafka's
 *       in-sync replicas, the leader being always in sync with itself). A write is acknowledged
 *       once every one of them has it, so any of them can take over without losing one.
 *   <li>{@code epoch}: the map epoch at which any of the above last changed. It only rises.
 *   <li>{@code leaderEpoch}: the map epoch at which the current leader took the shard over (it
 *       changes with the leader only, not with the followers or the in-sync set). It fences the
 *       replication: every entry a leader appends carries it, a follower refuses entries of an
 *       older one, and no two leaders ever have the same. A split, a merge or a ring join makes new
 *       shards, and so new leader epochs.
 * </ul>
 *
 * @param followers distinct, without the owner
 * @param inSync a subset of {@code followers}, in their order
 */
public record ShardAssignment(ShardId id, NodeId owner, long epoch, long leaderEpoch, List<NodeId> followers, List<NodeId> inSync) {

  public ShardAssignment {
    if (epoch < 1) {
      throw new IllegalArgumentException("shard epoch must be at least 1, not " + epoch);
    }
    if (leaderEpoch < 1 || leaderEpoch > epoch) {
      throw new IllegalArgumentException("shard " + id + ": leader epoch " + leaderEpoch + " is not in [1, " + epoch + "]");
    }
    followers = List.copyOf(followers);
    inSync = List.copyOf(inSync);
    Set<NodeId> seen = new HashSet<>();
    seen.add(owner);
    for (NodeId f : followers) {
      if (!seen.add(f)) {
        throw new IllegalArgumentException("shard " + id + ": " + f + " is " + (f.equals(owner) ? "its leader and a follower" : "a follower twice"));
      }
    }
    int at = 0;
    for (NodeId s : inSync) { // in the followers' order, each once
      while (at < followers.size() && !followers.get(at).equals(s)) {
        at++;
      }
      if (at == followers.size()) {
        throw new IllegalArgumentException("shard " + id + ": in-sync " + inSync + " is not an ordered subset of its followers " + followers);
      }
      at++;
    }
  }

  /** A shard of one replica: {@code owner} alone, its leader since {@code epoch}. */
  public ShardAssignment(ShardId id, NodeId owner, long epoch) {
    this(id, owner, epoch, epoch, List.of(), List.of());
  }

  /** A shard whose leader took it over at {@code epoch}, the last change of it. */
  public ShardAssignment(ShardId id, NodeId owner, long epoch, List<NodeId> followers, List<NodeId> inSync) {
    this(id, owner, epoch, epoch, followers, inSync);
  }

  /** Every replica: the owner (leader) first, then the followers. */
  public List<NodeId> replicas() {
    List<NodeId> out = new ArrayList<>(1 + followers.size());
    out.add(owner);
    out.addAll(followers);
    return out;
  }

  /** True if {@code node} keeps a replica: the owner or a follower. */
  public boolean isReplica(NodeId node) {
    return owner.equals(node) || followers.contains(node);
  }

  /** The owner (leader) and its in-sync followers: the replicas every acknowledged write is on. */
  public List<NodeId> inSyncReplicas() {
    List<NodeId> out = new ArrayList<>(1 + inSync.size());
    out.add(owner);
    out.addAll(inSync);
    return out;
  }

  /** The same replicas under a new owner at {@code newEpoch}: a move of a shard of one replica. */
  ShardAssignment movedTo(NodeId newOwner, long newEpoch) {
    return new ShardAssignment(id, newOwner, newEpoch, newEpoch, followers, inSync);
  }

  /** The same replicas as a new shard {@code newId} at {@code newEpoch}: a split's or a merge's result. */
  ShardAssignment as(ShardId newId, long newEpoch) {
    return new ShardAssignment(newId, owner, newEpoch, newEpoch, followers, inSync);
  }

  /** The same shard with these followers and in-sync set at {@code newEpoch}. */
  ShardAssignment withFollowers(List<NodeId> newFollowers, List<NodeId> newInSync, long newEpoch) {
    return new ShardAssignment(id, owner, newEpoch, leaderEpoch, newFollowers, newInSync);
  }

  /** The same leader and the same followers (in any order): what a merge requires of two neighbours. */
  public boolean sameReplicas(ShardAssignment other) {
    return owner.equals(other.owner) && Set.copyOf(followers).equals(Set.copyOf(other.followers));
  }
}
