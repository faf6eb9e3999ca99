package io.shardwise.core.map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * The replication changes of the map (followers added and removed, the leader's in-sync set, a new
 * leader, and the splits and merges that carry replicas along), in random sequences with random
 * refusals: whatever runs, every stored map keeps the rules the replication protocol relies on.
 *
 * <ul>
 *   <li>a shard's replicas are distinct nodes, its in-sync followers a subset of its followers;
 *   <li>a shard's epoch rises with every change of its replicas, and no two maps give one shard
 *       epoch to two leaders (a follower fences by it);
 *   <li>a new leader was an in-sync replica in the map before: it has every acknowledged write;
 *   <li>only the leader at its current epoch changes the in-sync set;
 *   <li>a split gives both halves the parent's replicas; a merge needs the same replicas on both.
 * </ul>
 */
class ReplicationDeltaPropertyTest {

  private static final List<NodeId> NODES = List.of(NodeId.of("n1"), NodeId.of("n2"), NodeId.of("n3"), NodeId.of("n4"),
      NodeId.of("n5"));

  private static ShardMap create(int shards, Random random) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, shards, 3, KeySample.empty()).layout();
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    for (int i = 0; i < shards; i++) {
      List<NodeId> shuffled = new ArrayList<>(NODES);
      java.util.Collections.shuffle(shuffled, random);
      owners.add(shuffled.get(0));
      followers.add(shuffled.subList(1, 3));
    }
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, owners, followers, Replication.of(3)).build());
  }

  @Property(tries = 300)
  void anySequenceOfReplicationChangesKeepsTheRules(@ForAll long seed, @ForAll @IntRange(min = 1, max = 80) int steps) {
    Random random = new Random(seed);
    ShardMap map = create(1 + random.nextInt(4), random);
    Map<String, NodeId> leaderAtEpoch = new HashMap<>();
    record(map, leaderAtEpoch);
    for (int step = 0; step < steps; step++) {
      Table t = map.table("t").orElseThrow();
      ShardAssignment s = t.shards().get(random.nextInt(t.shards().size()));
      NodeId any = NODES.get(random.nextInt(NODES.size()));
      ShardMapDelta.Change change = switch (random.nextInt(7)) {
        case 0 -> new ShardMapDelta.AddFollower(s.id(), any);
        case 1 -> new ShardMapDelta.RemoveFollower(s.id(), any);
        case 2 -> {
          List<NodeId> inSync = new ArrayList<>();
          s.followers().forEach(f -> {
            if (random.nextBoolean()) {
              inSync.add(f);
            }
          });
          // Now and then a deposed or stale leader tries: it must be refused.
          yield new ShardMapDelta.ChangeInSync(s.id(), random.nextInt(5) == 0 ? any : s.owner(), s.epoch() - (random.nextInt(5) == 0 ? 1 : 0),
              inSync);
        }
        case 3 -> new ShardMapDelta.ChangeLeader(s.id(), s.owner(), random.nextInt(4) == 0 ? any
            : s.followers().isEmpty() ? any : s.followers().get(random.nextInt(s.followers().size())), random.nextBoolean());
        case 4 -> ShardMapDelta.SplitShard.atHash(s.id(), t.layout().shardCount() == 1 ? Long.MIN_VALUE : middle(t, s));
        case 5 -> {
          int position = t.positionOf(s.id());
          yield position + 1 < t.shards().size() ? new ShardMapDelta.MergeShards(s.id(), t.shards().get(position + 1).id())
              : new ShardMapDelta.MergeShards(s.id(), s.id());
        }
        default -> new ShardMapDelta.MoveShard(s.id(), s.owner(), any.equals(s.owner()) ? NODES.get(0).equals(any) ? NODES.get(1) : NODES.get(0) : any);
      };
      ShardMap before = map;
      try {
        map = map.apply(ShardMapDelta.on(map).add(change).build());
      } catch (IllegalArgumentException refused) {
        continue; // refused changes change nothing; the next step works on the same map
      }
      check(before, map, change, leaderAtEpoch);
    }
  }

  /** The hash in the middle of a shard's range (for a split that always falls inside it). */
  private static long middle(Table t, ShardAssignment s) {
    long[] starts = t.layout().hashValues();
    int position = t.positionOf(s.id());
    long from = starts[position];
    long to = position + 1 < starts.length ? starts[position + 1] : 0; // 0: the top, 2^64
    return from + Long.divideUnsigned(to - from, 2) + (to == from ? 1 : 0);
  }

  private static void record(ShardMap map, Map<String, NodeId> leaderAtEpoch) {
    for (ShardAssignment s : map.table("t").orElseThrow().shards()) {
      NodeId was = leaderAtEpoch.putIfAbsent(s.id().number() + "@" + s.epoch(), s.owner());
      assertThat(was == null || was.equals(s.owner())).as("shard %s epoch %d led by %s and %s", s.id(), s.epoch(), was, s.owner()).isTrue();
      was = leaderAtEpoch.putIfAbsent(s.id().number() + " leader epoch " + s.leaderEpoch(), s.owner());
      assertThat(was == null || was.equals(s.owner())).as("shard %s leader epoch %d led by %s and %s", s.id(), s.leaderEpoch(), was,
          s.owner()).isTrue();
    }
  }

  private static void check(ShardMap before, ShardMap after, ShardMapDelta.Change change, Map<String, NodeId> leaderAtEpoch) {
    record(after, leaderAtEpoch);
    Table old = before.table("t").orElseThrow();
    Table now = after.table("t").orElseThrow();
    for (ShardAssignment s : now.shards()) {
      assertThat(s.replicas()).doesNotHaveDuplicates();
      assertThat(s.followers()).containsAll(s.inSync());
      var was = old.shard(s.id().number());
      if (was.isPresent() && !was.get().equals(s)) {
        assertThat(s.epoch()).as("a changed shard gets the new epoch").isEqualTo(after.epoch());
        assertThat(s.leaderEpoch()).as("the leader epoch changes with the leader only")
            .isEqualTo(was.get().owner().equals(s.owner()) ? was.get().leaderEpoch() : after.epoch());
        if (!was.get().owner().equals(s.owner()) && !(change instanceof ShardMapDelta.MoveShard)) { // a move copies the data itself
          assertThat(was.get().inSyncReplicas()).as("the new leader of %s was in sync", s.id()).contains(s.owner());
        }
      } else if (was.isPresent()) {
        assertThat(s.epoch()).isLessThan(after.epoch());
      }
    }
    if (change instanceof ShardMapDelta.ChangeInSync isr) {
      ShardAssignment was = old.shard(isr.shard().number()).orElseThrow();
      assertThat(isr.leader()).isEqualTo(was.owner());
      assertThat(isr.shardEpoch()).isEqualTo(was.epoch());
    }
    if (change instanceof ShardMapDelta.SplitShard split) {
      ShardAssignment parent = old.shard(split.shard().number()).orElseThrow();
      assertThat(now.shards()).filteredOn(s -> old.shard(s.id().number()).isEmpty()).hasSize(2)
          .allSatisfy(half -> {
            assertThat(half.owner()).isEqualTo(parent.owner());
            assertThat(half.followers()).isEqualTo(parent.followers());
            assertThat(half.inSync()).isEqualTo(parent.inSync());
          });
    }
    if (change instanceof ShardMapDelta.MergeShards merge) {
      ShardAssignment left = old.shard(merge.left().number()).orElseThrow();
      ShardAssignment right = old.shard(merge.right().number()).orElseThrow();
      assertThat(left.owner()).isEqualTo(right.owner());
      assertThat(new java.util.HashSet<>(left.followers())).isEqualTo(new java.util.HashSet<>(right.followers()));
    }
    if (change instanceof ShardMapDelta.MoveShard move) {
      assertThat(old.shard(move.shard().number()).orElseThrow().followers()).as("only a shard of one replica moves whole").isEmpty();
    }
  }

  @Test
  void aFailoverKeepsTheOldLeaderAsAFollowerOutOfSyncAndAHandoverInSync() {
    Random random = new Random(1);
    ShardMap map = create(1, random);
    ShardAssignment s = map.table("t").orElseThrow().shards().get(0);
    NodeId next = s.inSync().get(0);
    ShardMap failover = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.ChangeLeader(s.id(), s.owner(), next, false)).build());
    ShardAssignment after = failover.table("t").orElseThrow().shards().get(0);
    assertThat(after.owner()).isEqualTo(next);
    assertThat(after.followers()).contains(s.owner()).doesNotContain(next);
    assertThat(after.inSync()).doesNotContain(s.owner());
    assertThat(after.epoch()).isEqualTo(failover.epoch());

    ShardMap handover = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.ChangeLeader(s.id(), s.owner(), next, true)).build());
    assertThat(handover.table("t").orElseThrow().shards().get(0).inSync()).contains(s.owner());
  }

  @Test
  void aFollowerOutOfSyncNeverLeadsAndADeposedLeaderNeverChangesTheInSyncSet() {
    ShardMap map = create(1, new Random(2));
    ShardAssignment s = map.table("t").orElseThrow().shards().get(0);
    NodeId lagging = s.followers().get(1);
    ShardMap shrunk = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(), s.epoch(),
        List.of(s.followers().get(0)))).build());
    assertThatThrownBy(() -> shrunk.apply(ShardMapDelta.on(shrunk).add(new ShardMapDelta.ChangeLeader(s.id(), s.owner(), lagging, false))
        .build())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not an in-sync follower");
    // The old epoch is no longer the leader's: a change made on the old map is refused.
    ShardAssignment now = shrunk.table("t").orElseThrow().shards().get(0);
    assertThatThrownBy(() -> shrunk.apply(ShardMapDelta.on(shrunk).add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(), s.epoch(),
        s.followers())).build())).hasMessageContaining("only its leader changes");
    assertThat(shrunk.apply(ShardMapDelta.on(shrunk).add(new ShardMapDelta.ChangeInSync(s.id(), s.owner(), now.epoch(), s.followers()))
        .build()).table("t").orElseThrow().shards().get(0).inSync()).isEqualTo(s.followers());
  }

  @Test
  void replicationSettingsAreValidatedAndRecordedAsATableChange() {
    assertThatThrownBy(() -> new Replication(0, 1)).hasMessageContaining("1 to 7 replicas");
    assertThatThrownBy(() -> new Replication(3, 4)).hasMessageContaining("1 to the replication factor (3), not 4");
    assertThat(Replication.of(3)).isEqualTo(new Replication(3, 2));
    assertThat(Replication.of(1)).isEqualTo(Replication.NONE);
    ShardMap map = create(2, new Random(3));
    ShardMap set = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.SetReplication("t", new Replication(5, 3))).build());
    Table t = set.table("t").orElseThrow();
    assertThat(t.replication()).isEqualTo(new Replication(5, 3));
    assertThat(t.changedAt()).as("a client that holds the earlier map must fetch the table again").isEqualTo(set.epoch());
    assertThat(t.unchangedSince(map)).isFalse();
  }
}
