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
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The controller's failover, on maps: who leads next, who leaves the in-sync set, and who never leads. */
class FailoverTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final NodeId N3 = NodeId.of("n3");

  /** Shard 0 led by n1 (followers n2, n3), shard 1 led by n2 (followers n3, n1); all in sync; and a table of one replica on n1. */
  private static ShardMap map() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 2, 3, KeySample.empty()).layout();
    ShardMap m = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("r", spec, layout, List.of(N1, N2),
        List.of(List.of(N2, N3), List.of(N3, N1)), Replication.of(3)).build());
    return m.apply(ShardMapDelta.on(m).createTable("single", spec, ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout(), List.of(N1))
        .build());
  }

  private static ShardAssignment shard(ShardMap m, int i) {
    return m.table("r").orElseThrow().shards().get(i);
  }

  @Test
  void aDeadLeadersShardGoesToAnInSyncFollowerAndADeadFollowerLeavesTheInSyncSets() {
    ShardMap m = map();
    ShardMap after = m.apply(Failover.plan(m, Set.of(N2, N3)).orElseThrow());
    assertThat(shard(after, 0).owner()).isEqualTo(N2);
    assertThat(shard(after, 0).followers()).containsExactly(N1, N3);
    assertThat(shard(after, 0).inSync()).containsExactly(N3);
    assertThat(shard(after, 1).owner()).isEqualTo(N2);
    assertThat(shard(after, 1).inSync()).containsExactly(N3);
    assertThat(after.table("single").orElseThrow().shards().get(0).owner()).as("one replica: nowhere to fail over to").isEqualTo(N1);
    assertThat(Failover.plan(after, Set.of(N2, N3))).as("nothing more to do").isEmpty();
    assertThat(Failover.plan(m, Set.of(N1, N2, N3))).as("everyone live").isEmpty();
  }

  @Test
  void aShardWhoseInSyncFollowersAreAllGoneWaitsForItsLeader() {
    ShardMap m = map();
    // n2 and n3 go: shard 0 (n1 leads) drops them from its in-sync set; shard 1 (n2 leads) fails over to n1.
    ShardMap a = m.apply(Failover.plan(m, Set.of(N1)).orElseThrow());
    assertThat(shard(a, 0).inSync()).isEmpty();
    assertThat(shard(a, 1).owner()).isEqualTo(N1);
    // Now n1 goes too and n3 returns (out of sync): nobody in sync is live, so nobody leads in n1's place.
    assertThat(Failover.plan(a, Set.of(N3)).map(d -> d.changes().stream().filter(c -> c instanceof ShardMapDelta.ChangeLeader).count())
        .orElse(0L)).isZero();
  }

  @Test
  void aNodeOnANewStoreLeavesEveryInSyncSetAndHandsItsLeadershipsToInSyncFollowersLiveOnesFirst() {
    ShardMap m = map();
    // n2 leads shard 1 (followers n3, n1) and is in sync for shard 0; n3 is down, so n1 takes shard 1.
    Failover.Forgetting f = Failover.forget(m, N2, Set.of(N1));
    assertThat(f.stranded()).isEmpty();
    ShardMap after = m.apply(f.delta().orElseThrow());
    assertThat(shard(after, 1).owner()).isEqualTo(N1);
    assertThat(shard(after, 1).inSync()).containsExactly(N3).doesNotContain(N2);
    assertThat(shard(after, 1).followers()).contains(N2);
    assertThat(shard(after, 0).owner()).isEqualTo(N1);
    assertThat(shard(after, 0).inSync()).containsExactly(N3);
    assertThat(after.table("single").orElseThrow().shards().get(0).owner()).as("a table of one replica is not touched").isEqualTo(N1);
    // With no live in-sync follower, one that is down takes it (the shard waits for it, never for an empty leader).
    ShardMap none = m.apply(Failover.forget(m, N2, Set.of()).delta().orElseThrow());
    assertThat(shard(none, 1).owner()).isEqualTo(N3);
  }

  @Test
  void aNodeOnANewStoreThatWasAShardsOnlyInSyncReplicaIsStrandedAndNothingIsForgotten() {
    ShardMap m = map();
    ShardMap alone = m.apply(ShardMapDelta.on(m).add(new ShardMapDelta.ChangeInSync(shard(m, 1).id(), N2, shard(m, 1).epoch(), List.of()))
        .build());
    Failover.Forgetting f = Failover.forget(alone, N2, Set.of(N1, N3));
    assertThat(f.stranded()).containsExactly(shard(alone, 1).id());
  }

  @Test
  void aFollowerJoinsAnInSyncSetOnlyOnTheWordOfTheStoreItsReplicasAreGrantedTo() {
    ShardMap m = map();
    ShardMap granted = m.apply(ShardMapDelta.on(m).add(new ShardMapDelta.GrantStore(N3, "new")).build());
    ShardMap out = granted.apply(ShardMapDelta.on(granted).add(new ShardMapDelta.ChangeInSync(shard(granted, 0).id(), N1,
        shard(granted, 0).epoch(), List.of(N2))).build());
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> out.apply(ShardMapDelta.on(out).add(new ShardMapDelta.ChangeInSync(
        shard(out, 0).id(), N1, shard(out, 0).epoch(), List.of(N2, N3), java.util.Map.of(N3, "old"))).build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("granted to store new");
    ShardMap back = out.apply(ShardMapDelta.on(out).add(new ShardMapDelta.ChangeInSync(shard(out, 0).id(), N1, shard(out, 0).epoch(),
        List.of(N2, N3), java.util.Map.of(N3, "new"))).build());
    assertThat(shard(back, 0).inSync()).containsExactly(N2, N3);
  }
}
