package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.storage.ShardStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node starting on a store the map does not grant its replicas to, against a real ZooKeeper: the
 * map forgets the node's in-sync memberships and leaderships in the change that grants the new
 * store, before the node serves; the node that was a shard's only in-sync copy refuses to start and
 * changes nothing; the same store, or one written before store ids, changes nothing.
 */
class StoreTrustTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final NodeId N3 = NodeId.of("n3");

  @TempDir Path dir;

  /** Shard 0 led by n1 (n2, n3 in sync), shard 1 and shard 2 led by n2 (their followers in sync); every node's store granted. */
  private static Optional<ShardMapDelta> seed(ShardMap m) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 3, KeySample.empty()).layout();
    ShardMapDelta.Builder d = ShardMapDelta.on(m).createTable("r", spec, layout, List.of(N1, N2, N2),
        List.of(List.of(N2, N3), List.of(N3, N1), List.of(N1, N3)), Replication.of(3));
    for (NodeId n : List.of(N1, N2, N3)) {
      d.add(new ShardMapDelta.GrantStore(n, "old-" + n.value()));
    }
    return Optional.of(d.build());
  }

  @Test
  void aNodeOnANewStoreLeavesEveryInSyncSetAndLeadershipBeforeItServes() {
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
        Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      c.updateMap(m -> seed(m));
      StoreTrust.establish(c, N1, new ShardStore.Identity("old-n1", false, false));
      long before = c.readMap().map().epoch();
      assertThat(c.readMap().map().epoch()).as("the granted store changes nothing").isEqualTo(before);

      StoreTrust.establish(c, N2, new ShardStore.Identity("new-n2", true, false));
      ShardMap after = c.readMap().map();
      assertThat(after.epoch()).as("one change").isEqualTo(before + 1);
      assertThat(after.storeOf(N2)).contains("new-n2");
      for (ShardAssignment s : after.table("r").orElseThrow().shards()) {
        assertThat(s.owner()).as("shard %s", s.id()).isNotEqualTo(N2);
        assertThat(s.inSync()).as("shard %s", s.id()).doesNotContain(N2);
        assertThat(s.followers()).as("shard %s: still a replica, rebuilt from its leader", s.id()).contains(N2);
      }
      StoreTrust.establish(c, N2, new ShardStore.Identity("new-n2", false, false));
      assertThat(c.readMap().map().epoch()).as("a restart on the new store changes nothing").isEqualTo(after.epoch());
    }
  }

  @Test
  void aNodeThatWasAShardsOnlyInSyncCopyRefusesToStartAndChangesNothing() {
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
        Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      c.updateMap(m -> seed(m));
      c.updateMap(m -> {
        ShardAssignment s2 = m.table("r").orElseThrow().shards().get(2);
        return Optional.of(ShardMapDelta.on(m).add(new ShardMapDelta.ChangeInSync(s2.id(), N2, s2.epoch(), List.of())).build());
      });
      ShardMap before = c.readMap().map();
      assertThatThrownBy(() -> StoreTrust.establish(c, N2, new ShardStore.Identity("new-n2", true, false)))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("r/2").hasMessageContaining("Nothing was changed");
      assertThat(c.readMap().map().epoch()).isEqualTo(before.epoch());
      assertThat(c.readMap().map().storeOf(N2)).contains("old-n2");
    }
  }

  @Test
  void aDirectoryWrittenBeforeStoreIdsIsTrustedWithTheReplicasItHas() {
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
        Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
      c.updateMap(m -> Optional.of(ShardMapDelta.on(m).createTable("r", spec, ShardLayout.initial(spec, 1, 3, KeySample.empty()).layout(),
          List.of(N1), List.of(List.of(N2, N3)), Replication.of(3)).build()));
      StoreTrust.establish(c, N2, new ShardStore.Identity("adopted-n2", true, true));
      ShardMap after = c.readMap().map();
      assertThat(after.storeOf(N2)).contains("adopted-n2");
      assertThat(after.table("r").orElseThrow().shards().get(0).inSync()).containsExactly(N2, N3);
    }
  }
}
