package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.ShardTrash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Design rule 6: nothing is deleted on the word of a map alone. A node refuses a ZooKeeper that
 * is not its cluster's, and what it no longer owns goes to its trash, purged only after a grace.
 */
@Tag("integration")
class NoDeleteOnAMapAloneTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<Key> keys(int n) {
    return IntStream.range(0, n).mapToObj(i -> Key.of(b("key-" + i))).toList();
  }

  @Test
  void aNodeStartedAgainstAnEmptyOrAnotherClustersZooKeeperRefusesAndKeepsEveryKey() throws Exception {
    Path n1Dir;
    try (TestCluster cluster = new TestCluster(dir.resolve("a"), 1, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("kept", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      keys(20).forEach(k -> client.put("kept", k, k.partitionKey()));
      n1Dir = cluster.dir.resolve("n1");
      String clusterA = cluster.node("n1").clusterId();
      cluster.node("n1").close();
      cluster.nodes.clear();

      // A typo in --zk: an empty ZooKeeper.
      try (EmbeddedZooKeeper empty = EmbeddedZooKeeper.start(0, dir.resolve("empty-zk"))) {
        assertThatThrownBy(() -> ShardwiseNode.start(NodeConfig.of(n1Dir, empty.connectString()).withId("n1")))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("belongs to cluster " + clusterA).hasMessageContaining("holds no cluster").hasMessageContaining("--zk");
        // ...and one that holds another cluster.
        try (ShardwiseNode other = ShardwiseNode.start(NodeConfig.of(dir.resolve("b1"), empty.connectString()).withId("b1"))) {
          assertThat(other.clusterId()).isNotEqualTo(clusterA);
          assertThatThrownBy(() -> ShardwiseNode.start(NodeConfig.of(n1Dir, empty.connectString()).withId("n1")))
              .isInstanceOf(IllegalStateException.class)
              .hasMessageContaining("belongs to cluster " + clusterA).hasMessageContaining("holds cluster " + other.clusterId());
        }
      }

      // Back on its own ZooKeeper: every key is there.
      cluster.nodes.add(cluster.startNode(1));
      ShardwiseClient again = cluster.client(Routing.CLIENT);
      for (Key k : keys(20)) {
        assertThat(again.get("kept", k)).as(new String(k.partitionKey(), StandardCharsets.UTF_8)).isPresent();
      }
    }
  }

  @Test
  void aDataDirectoryWithDataButNoClusterIdJoinsOnlyWhenToldAndTrashesWhatItDoesNotOwn() throws Exception {
    Path legacy = dir.resolve("legacy");
    ShardRef ref = new ShardRef(99, 0);
    try (ShardStore store = ShardStore.open(legacy.resolve("rocksdb"), false)) {
      store.put(ref, Key.of(b("orphan")).encode(), b("from an earlier life"));
    }
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"))) {
      assertThatThrownBy(() -> ShardwiseNode.start(NodeConfig.of(legacy, zk.connectString()).withId("n7")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("holds data but no cluster id").hasMessageContaining("--adopt-cluster");
      try (ShardwiseNode node = ShardwiseNode.start(NodeConfig.of(legacy, zk.connectString()).withId("n7").withAdoptCluster(true))) {
        List<ShardTrash.Entry> trash = node.store().trash().entries();
        assertThat(trash).singleElement().satisfies(e -> {
          assertThat(e.shard()).isEqualTo(ref);
          assertThat(e.liveKeys()).isEqualTo(1);
          assertThat(e.reason()).contains("not this node's");
        });
        assertThat(node.store().get(ref, Key.of(b("orphan")).encode())).as("not served").isNull();
        assertThat(node.store().trash().stored(trash.get(0).id(), ref.storeKey(Key.of(b("orphan")).encode()))).as("still on disk").isNotNull();
      }
      assertThat(Files.readString(legacy.resolve("cluster-id")).strip()).isNotEmpty();
    }
  }

  @Test
  void aShardThatMovedAwayAndADroppedTableGoToTheTrashAndArePurgedAfterTheGrace() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      cluster.nodes.add(cluster.startNode(1, c -> c.withTrashGrace(Duration.ofSeconds(3))));
      cluster.nodes.add(cluster.startNode(2));
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("moving", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      keys(200).forEach(k -> client.put("moving", k, k.partitionKey()));
      ShardwiseNode n1 = cluster.node("n1");
      Table table = n1.map().table("moving").orElseThrow();
      ShardAssignment shard = table.shards().stream().filter(s -> s.owner().equals(n1.id())).findFirst().orElseThrow();
      ShardRef ref = ShardRef.of(table, shard.id().number());
      long held = n1.store().stats(ref).keys();
      assertThat(held).isPositive();

      assertThat(TestCluster.moveShard(n1, table, shard, "n2", "away-1").getPhase()).isEqualTo(MoveProgress.Phase.DONE);

      // After the drop grace (1 s here) the old copy leaves the data, whole, for the trash. The trash
      // records its entry before it drops the live copy (a crash between leaves an empty entry, never
      // data without one), so the two are awaited together.
      await().atMost(Duration.ofSeconds(20)).until(() -> n1.store().trash().entries().stream().anyMatch(e -> e.shard().equals(ref))
          && n1.store().stats(ref).keys() == 0);
      ShardTrash.Entry entry = n1.store().trash().entries().stream().filter(e -> e.shard().equals(ref)).findFirst().orElseThrow();
      assertThat(entry.liveKeys()).isEqualTo(held);

      client.dropTable("moving");
      await().atMost(Duration.ofSeconds(20)).until(() -> n1.store().trash().entries().stream().anyMatch(e -> e.reason().contains("dropped")));

      // And after the trash grace (3 s here) they are purged.
      await().atMost(Duration.ofSeconds(30)).until(() -> n1.store().trash().entries().isEmpty());
    }
  }

  @Test
  void aDroppedTableComesBackWithEveryKeyAndVersionUntilItsNameIsTakenAgain() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("cart", TableSpec.builder("hashrange").shards(6).replicas(1).build());
      List<Key> keys = keys(60);
      keys.forEach(k -> client.put("cart", k, k.partitionKey()));
      keys.subList(0, 10).forEach(k -> client.put("cart", k, b("second")));
      keys.subList(50, 60).forEach(k -> client.delete("cart", k));
      client.dropTable("cart");
      assertThatThrownBy(() -> client.get("cart", keys.get(0))).hasMessageContaining("cart");
      // Each owner's shards of the table go to its trash.
      await().atMost(Duration.ofSeconds(20)).until(() -> cluster.nodes.stream().mapToLong(n -> n.store().trash().entries().stream()
          .filter(e -> e.kind() == ShardTrash.Kind.TABLE_DROPPED).count()).sum() == 6);
      assertThat(cluster.nodes).allMatch(n -> n.store().isEmpty());

      var back = client.undropTable("cart");
      assertThat(back.shardsFoundInTrash()).isEqualTo(6);
      assertThat(back.ownersNotAsked()).isEmpty();
      for (int i = 0; i < 60; i++) {
        var v = client.get("cart", keys.get(i));
        if (i >= 50) {
          assertThat(v).as("key-" + i + " stays deleted").isEmpty();
        } else {
          assertThat(v).as("key-" + i).isPresent();
          assertThat(v.get().version()).isEqualTo(i < 10 ? 2 : 1);
          assertThat(v.get().value()).isEqualTo(i < 10 ? b("second") : keys.get(i).partitionKey());
        }
      }
      assertThat(client.put("cart", keys.get(0), b("third"))).as("versions go on from where they were").isEqualTo(3);
      assertThat(client.put("cart", keys.get(55), b("again"))).as("after its tombstone (version 2)").isEqualTo(3);
      assertThat(cluster.nodes).allMatch(n -> n.store().trash().entries().isEmpty());
      assertThatThrownBy(() -> client.undropTable("cart")).hasMessageContaining("no dropped table cart");

      // Dropped again and the name reused: the old one cannot come back over the new one.
      client.dropTable("cart");
      client.createTable("cart", TableSpec.builder("mod").shards(2).replicas(1).build());
      assertThatThrownBy(() -> client.undropTable("cart")).hasMessageContaining("a table cart exists");
    }
  }

  @Test
  void aPlanThatAbandonsAnAbsentNodesShardsSaysSoNeedsAcceptDataLossAndTheReturningNodeKeepsItsCopiesInTheTrash() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        io.shardwise.server.coordination.Coordinator c = io.shardwise.server.coordination.Coordinator.connect(cluster.zk.connectString(),
            Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      var records = new io.shardwise.server.balance.RebalanceRecords(c);
      records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
          .setAbsentGraceSeconds(1).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("gone", TableSpec.builder("slots").slots(4).replicas(1).build());
      keys(100).forEach(k -> client.put("gone", k, k.partitionKey()));
      long onN2 = cluster.node("n1").map().shardsOf(io.shardwise.core.map.NodeId.of("n2")).size();
      assertThat(onN2).isPositive();
      cluster.node("n2").close();
      cluster.nodes.remove(cluster.node("n2"));

      await().atMost(Duration.ofSeconds(30)).until(() -> records.plans().stream().anyMatch(p -> p.getAbandonedShards() > 0));
      var plan = records.plans().stream().filter(p -> p.getAbandonedShards() > 0).findFirst().orElseThrow();
      assertThat(plan.getState()).as("auto mode never approves it").isEqualTo(io.shardwise.proto.v1.PlanRecord.State.PENDING);
      assertThat(plan.getAbandonedShards()).isEqualTo((int) onN2);
      assertThat(plan.getNotesList()).anyMatch(n -> n.contains("absent node n2 go to other nodes EMPTY"));
      var rebalancing = new io.shardwise.server.balance.Rebalancing(c);
      assertThatThrownBy(() -> rebalancing.approve(plan.getId())).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("--accept-data-loss");
      rebalancing.approve(plan.getId(), true);
      await().atMost(Duration.ofSeconds(30)).until(() -> c.readMap().map().shardsOf(io.shardwise.core.map.NodeId.of("n2")).isEmpty());

      // n2 comes back: the map gives it nothing, and what it held goes to its trash, not away.
      ShardwiseNode back = cluster.startNode(2);
      cluster.nodes.add(back);
      assertThat(back.store().trash().entries()).hasSize((int) onN2)
          .allSatisfy(e -> assertThat(e.reason()).contains("not this node's"));
      assertThat(back.store().trash().entries().stream().mapToLong(ShardTrash.Entry::liveKeys).sum()).isPositive();
      assertThat(back.store().trash().entries()).allMatch(e -> e.kind() == ShardTrash.Kind.FOREIGN_AT_START);

      // Meanwhile ten keys are written again; then an operator merges n2's copies back into the
      // shards' new owners: the rest of the keys return, and the keys written since keep their values.
      ShardwiseClient fresh = cluster.client(Routing.CLIENT);
      keys(10).forEach(k -> fresh.put("gone", k, b("new")));
      long missing = keys(100).stream().filter(k -> fresh.get("gone", k).isEmpty()).count();
      assertThat(missing).as("keys of n2's old shards, absent before the restore").isPositive();
      var admin = io.shardwise.proto.v1.AdminServiceGrpc.newBlockingStub(io.shardwise.proto.Channels.open(back.address(), 16 << 20));
      var listed = admin.listTrash(io.shardwise.proto.v1.ListTrashRequest.getDefaultInstance());
      assertThat(listed.getEntriesList()).hasSize((int) onN2).allMatch(e -> e.getKind().equals("foreign_at_start") && e.getTable().equals("gone"));
      var restored = admin.restoreTrash(io.shardwise.proto.v1.RestoreTrashRequest.newBuilder()
          .addAllIds(listed.getEntriesList().stream().map(io.shardwise.proto.v1.TrashEntry::getId).toList()).build());
      assertThat(restored.getRestoredList()).hasSize((int) onN2); // into the current owners (auto mode may have given n2 shards again)
      assertThat(restored.getRestoredList().stream().mapToLong(io.shardwise.proto.v1.RestoredEntry::getKeysMerged).sum())
          .as("the missing keys are merged; the ten written since are as new (version 1) as their trashed copies, and kept").isEqualTo(missing);
      for (Key k : keys(100)) {
        int i = Integer.parseInt(new String(k.partitionKey(), StandardCharsets.UTF_8).substring(4));
        assertThat(fresh.get("gone", k)).as("key-" + i).isPresent().get()
            .satisfies(v -> assertThat(v.value()).isEqualTo(i < 10 ? b("new") : k.partitionKey()));
      }
      assertThat(back.store().trash().entries()).as("restored entries leave the trash").isEmpty();
    }
  }
}
