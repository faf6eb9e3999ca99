package io.shardwise.server.balance;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Failover rebalancing on maps: which followers are removed, where new ones go, how many are built at once. */
class ReplicaRepairTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final NodeId N3 = NodeId.of("n3");
  private static final NodeId N4 = NodeId.of("n4");
  private static final NodeId N5 = NodeId.of("n5");

  /** Three shards of three replicas on n1-n3 (all in sync), and a table of one replica on n3. */
  private static ShardMap map() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 3, KeySample.empty()).layout();
    ShardMap m = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("r", spec, layout, List.of(N1, N2, N3),
        List.of(List.of(N2, N3), List.of(N3, N1), List.of(N1, N2)), Replication.of(3)).build());
    return m.apply(ShardMapDelta.on(m).createTable("single", spec, ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout(), List.of(N3))
        .build());
  }

  private static ShardAssignment shard(ShardMap m, int i) {
    return m.table("r").orElseThrow().shards().get(i);
  }

  private static ReplicaRepair.Cluster cluster(Set<NodeId> live, Set<NodeId> gone, Set<NodeId> drains, int maxBuilding) {
    return new ReplicaRepair.Cluster(live, Map.of(), gone, drains, maxBuilding, Set.of());
  }

  /** n3 has failed over (it led shard 2) and is gone past the grace: its followers are replaced on n4, n5. */
  @Test
  void followersOfANodeGonePastTheGraceAreReplacedOnTheNodesWithFewestReplicas() {
    ShardMap m = map();
    m = m.apply(Failover.plan(m, Set.of(N1, N2, N4, N5)).orElseThrow());
    ReplicaRepair.Cluster c = cluster(Set.of(N1, N2, N4, N5), Set.of(N3), Set.of(), 2);
    ShardMap after = m.apply(ReplicaRepair.plan(m, c).orElseThrow());
    for (int i = 0; i < 3; i++) {
      assertThat(shard(after, i).replicas()).as("shard %d", i).hasSize(3).doesNotContain(N3).doesNotHaveDuplicates();
    }
    long onN4 = after.table("r").orElseThrow().shards().stream().filter(s -> s.isReplica(N4)).count();
    long onN5 = after.table("r").orElseThrow().shards().stream().filter(s -> s.isReplica(N5)).count();
    assertThat(onN4 + onN5).isEqualTo(3);
    assertThat(Math.abs(onN4 - onN5)).as("spread, not piled on one node").isLessThanOrEqualTo(1);
    assertThat(shard(after, 0).inSync()).as("new followers are not in sync until built").containsExactly(N2);
    assertThat(after.table("single").orElseThrow().shards().get(0).owner()).as("one replica: nothing to rebuild from").isEqualTo(N3);
    assertThat(ReplicaRepair.plan(after, c)).as("nothing more to do while they are built").isEmpty();
  }

  @Test
  void aNodeBuildsAtMostItsLimitOfFollowersAtOnce() {
    ShardMap m = map();
    m = m.apply(Failover.plan(m, Set.of(N1, N2, N4)).orElseThrow());
    ReplicaRepair.Cluster c = cluster(Set.of(N1, N2, N4), Set.of(N3), Set.of(), 1);
    ShardMap after = m.apply(ReplicaRepair.plan(m, c).orElseThrow());
    long onN4 = after.table("r").orElseThrow().shards().stream().filter(s -> s.isReplica(N4)).count();
    assertThat(onN4).isEqualTo(1);
    assertThat(ReplicaRepair.plan(after, c)).as("n4 is building one: the rest wait").isEmpty();
    // It joins the in-sync set: the next one starts.
    ShardAssignment built = after.table("r").orElseThrow().shards().stream().filter(s -> s.isReplica(N4)).findFirst().orElseThrow();
    List<NodeId> inSync = new java.util.ArrayList<>(built.inSync());
    inSync.add(N4);
    ShardMap caughtUp = after.apply(ShardMapDelta.on(after).add(new ShardMapDelta.ChangeInSync(built.id(), built.owner(), built.epoch(), inSync))
        .build());
    ShardMap next = caughtUp.apply(ReplicaRepair.plan(caughtUp, c).orElseThrow());
    assertThat(next.table("r").orElseThrow().shards().stream().filter(s -> s.isReplica(N4)).count()).isEqualTo(2);
  }

  @Test
  void aNodeAbsentWithinTheGraceKeepsItsReplicasAndASlowOneIsNeverLookedAt() {
    ShardMap m = map();
    m = m.apply(Failover.plan(m, Set.of(N1, N2, N4)).orElseThrow());
    assertThat(ReplicaRepair.plan(m, cluster(Set.of(N1, N2, N4), Set.of(), Set.of(), 2))).as("n3 may come back").isEmpty();
  }

  @Test
  void aDrainingNodeHandsOverLeadershipThenItsFollowersGoOnceTheShardIsWholeElsewhere() {
    ShardMap m = map();
    ReplicaRepair.Cluster c = cluster(Set.of(N1, N2, N3, N4), Set.of(), Set.of(N1), 3);
    ShardMap a = m.apply(ReplicaRepair.plan(m, c).orElseThrow());
    assertThat(shard(a, 0).owner()).as("leadership moves first: no data copied").isEqualTo(N2);
    assertThat(shard(a, 0).followers()).contains(N1);
    // Shards 1 and 2, whose followers include n1, get a follower on n4 (not yet in sync: n1 stays for now).
    assertThat(shard(a, 1).replicas()).contains(N1, N4);
    ShardMap b = a.apply(ReplicaRepair.plan(a, c).orElseThrow());
    assertThat(shard(b, 0).replicas()).contains(N1, N4);
    // Everyone catches up: n1's followers are removed.
    ShardMap synced = b;
    for (ShardAssignment s : b.table("r").orElseThrow().shards()) {
      synced = synced.apply(ShardMapDelta.on(synced).add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(),
          synced.table("r").orElseThrow().shard(s.id().number()).orElseThrow().epoch(), s.followers())).build());
    }
    ShardMap done = synced.apply(ReplicaRepair.plan(synced, c).orElseThrow());
    assertThat(done.table("r").orElseThrow().shards()).allSatisfy(s -> assertThat(s.replicas()).hasSize(3).doesNotContain(N1));
  }

  @Test
  void aLoweredFactorRemovesFollowersNotInSyncFirst() {
    ShardMap m = map();
    ShardAssignment s0 = shard(m, 0);
    m = m.apply(ShardMapDelta.on(m).add(new ShardMapDelta.ChangeInSync(s0.id(), N1, s0.epoch(), List.of(N3))).build()); // n2 behind
    m = m.apply(ShardMapDelta.on(m).add(new ShardMapDelta.SetReplication("r", Replication.of(2))).build());
    ShardMap after = m.apply(ReplicaRepair.plan(m, cluster(Set.of(N1, N2, N3), Set.of(), Set.of(), 2)).orElseThrow());
    assertThat(shard(after, 0).replicas()).containsExactly(N1, N3);
    assertThat(after.table("r").orElseThrow().shards()).allSatisfy(s -> assertThat(s.replicas()).hasSize(2));
  }

  @Test
  void followersGoToZonesTheShardIsNotInYet() {
    ShardMap m = map();
    m = m.apply(Failover.plan(m, Set.of(N1, N2, N4, N5)).orElseThrow());
    // n1 in zone a, n2 in zone b, n4 in zone a, n5 in zone c: every shard's new follower goes to zone c.
    ReplicaRepair.Cluster c = new ReplicaRepair.Cluster(Set.of(N1, N2, N4, N5), Map.of(N1, "a", N2, "b", N4, "a", N5, "c"), Set.of(N3),
        Set.of(), 5, Set.of());
    ShardMap after = m.apply(ReplicaRepair.plan(m, c).orElseThrow());
    assertThat(after.table("r").orElseThrow().shards()).allSatisfy(s -> assertThat(s.replicas()).contains(N5).doesNotContain(N4));
  }

  /** A plan's replica move adds a fourth replica on purpose: repair leaves that shard alone, and trims it once the move is given up. */
  @Test
  void aShardWithAReplicaMoveUnderWayKeepsItsExtraReplicaUntilTheMoveEnds() {
    ShardMap m = map();
    ShardAssignment s0 = shard(m, 0);
    m = m.apply(ShardMapDelta.on(m).add(new ShardMapDelta.AddFollower(s0.id(), N4)).build());
    Set<NodeId> live = Set.of(N1, N2, N3, N4);

    ReplicaRepair.Cluster moving = new ReplicaRepair.Cluster(live, Map.of(), Set.of(), Set.of(), 2, Set.of(s0.id()));
    assertThat(ReplicaRepair.plan(m, moving)).isEmpty();

    ShardMap trimmed = m.apply(ReplicaRepair.plan(m, cluster(live, Set.of(), Set.of(), 2)).orElseThrow());
    assertThat(shard(trimmed, 0).replicas()).as("the follower not in sync goes first").containsExactly(N1, N2, N3);
  }
}
