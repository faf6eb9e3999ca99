package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableDescription;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.RestoreTrashRequest;
import io.shardwise.proto.v1.RestoredEntry;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardTrash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Splits and merges on a real cluster while a client writes: only the map changes, every
 * acknowledged write reads back through every split, merge and move of a half, and once the drop
 * grace has passed the owner still serves the halves it kept (the replaced shard's span is theirs,
 * and is not trashed) while the half that moved away is in its trash.
 */
@org.junit.jupiter.api.Tag("integration")
class SplitMergeTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "hashrange"})
  void splitsMergesAndAMovedHalfLoseNoAcknowledgedWrite(String strategy) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder(strategy).shards(1).replicas(1).build());
      Map<String, String> acknowledged = new ConcurrentHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        try {
          for (int i = 0; !stop.get() || i < 600; i++) {
            String key = String.format("k%04d", (i * 7919L) % 2000); // all over the key range from the start
            String value = "v" + i;
            client.put("t", Key.of(key), b(value));
            acknowledged.put(key, value);
          }
        } catch (Throwable t) {
          failed.set(t);
        }
      }, "split-test-writer");
      writer.start();

      await().atMost(Duration.ofSeconds(20)).until(() -> acknowledged.size() >= 200);
      Table t = cluster.nodes.get(0).map().table("t").orElseThrow();
      long first = t.shards().get(0).id().number();
      TableDescription two = client.splitShard("t", first); // by size: the owner finds the point
      assertThat(two.shards()).hasSize(2);
      assertThat(two.shards()).allMatch(s -> s.number() != first);
      long lower = two.shards().get(0).number();
      TableDescription three = strategy.equals("range")
          ? client.splitShard("t", lower, b("k0100"))
          : client.splitShardAtHash("t", lower, two.shards().get(0).hashFirst() + Long.divideUnsigned(two.shards().get(0).hashLast() - two.shards().get(0).hashFirst(), 3));
      assertThat(three.shards()).hasSize(3);
      TableDescription merged = client.mergeShards("t", three.shards().get(0).number());
      assertThat(merged.shards()).hasSize(2);
      assertThatThrownBy(() -> client.splitShard("t", first, b("k0001"))).as("a replaced shard is gone")
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("no shard " + first);

      // The upper half moves to the other node, writes going on.
      Table now = cluster.nodes.get(0).map().table("t").orElseThrow();
      ShardAssignment upper = now.shards().get(1);
      ShardwiseNode owner = cluster.node(upper.owner().value());
      ShardwiseNode other = cluster.nodes.stream().filter(n -> n != owner).findFirst().orElseThrow();
      MoveProgress last = TestCluster.moveShard(owner, now, upper, other.id().value(), "split-move-" + strategy);
      assertThat(last.getPhase()).isEqualTo(MoveProgress.Phase.DONE);

      stop.set(true);
      writer.join(60_000);
      assertThat(failed.get()).as("the writer's first failure").isNull();
      checkReadBack(client, acknowledged);

      // After the drop grace: the moved half is in the old owner's trash, the kept half still served.
      await().atMost(Duration.ofSeconds(20)).until(() -> owner.store().trash().entries().stream()
          .anyMatch(e -> e.kind() == ShardTrash.Kind.MOVED_AWAY && e.shard().shardNumber() == upper.id().number()));
      assertThat(owner.store().trash().entries()).as("nothing of the shards it kept went to the trash")
          .allMatch(e -> e.shard().shardNumber() == upper.id().number());
      checkReadBack(client, acknowledged);
      long stored = client.describeTable("t", true).shards().stream().mapToLong(s -> s.keys()).sum();
      assertThat(stored).isEqualTo(acknowledged.size());

      // The moved half splits on its new node; the old owner's trashed copy of it is then restored
      // key by key into both of its halves: keys deleted since stay deleted, and every other key is
      // as new there already, so nothing is written.
      client.splitShard("t", upper.id().number());
      List<String> deleted = acknowledged.keySet().stream().sorted().limit(40).toList();
      deleted.forEach(k -> {
        client.delete("t", Key.of(k));
        acknowledged.remove(k);
      });
      ShardTrash.Entry copy = owner.store().trash().entries().stream()
          .filter(e -> e.kind() == ShardTrash.Kind.MOVED_AWAY && e.shard().shardNumber() == upper.id().number()).findFirst().orElseThrow();
      io.grpc.ManagedChannel channel = io.shardwise.proto.Channels.open(owner.address(), 16 << 20);
      try {
        RestoredEntry restored = AdminServiceGrpc.newBlockingStub(channel)
            .restoreTrash(RestoreTrashRequest.newBuilder().addIds(copy.id()).build()).getRestored(0);
        assertThat(restored.getOwner()).isEqualTo(other.id().value());
        assertThat(restored.getKeysMerged()).as("nothing older comes back").isZero();
        assertThat(restored.getKeysNewerKept()).isEqualTo(copy.liveKeys());
      } finally {
        channel.shutdownNow();
      }
      deleted.forEach(k -> assertThat(client.get("t", Key.of(k))).as("deleted %s", k).isEmpty());
      checkReadBack(client, acknowledged);
    }
  }

  /** The growth test's split size. */
  private static final long SPLIT_BYTES = 256 << 10;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "hashrange"})
  void aTableOfOneShardGrowsPastSixteenShardsSpreadOverThreeNodesAndKeepsEveryKey(String strategy) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new RebalanceRecords(admin).updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1)
          .putTableSplitBytes("grow", SPLIT_BYTES).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("grow", TableSpec.builder(strategy).shards(1).build());
      client.createTable("fixed", TableSpec.builder(strategy).shards(1).build()); // the cluster's 512 MiB: never reached here
      Map<String, String> acknowledged = new ConcurrentHashMap<>();
      // Values of one RocksDB block each, incompressible: the size estimates the balancer splits by
      // are block-grained, and shards of a few blocks (a 16 KiB split size) were estimated far
      // under their bytes and never split again.
      byte[] filler = new byte[4 << 10];
      new java.util.SplittableRandom(17).nextBytes(filler);
      for (int i = 0; i < 2_000; i++) { // about 8 MiB: 32 times the split size
        String key = String.format("user%05d", i);
        client.put("grow", Key.of(key), filler);
        client.put("fixed", Key.of(key), filler);
        acknowledged.put(key, "");
      }
      AtomicReference<String> seen = new AtomicReference<>("nothing yet");
      try {
        await().atMost(Duration.ofSeconds(120)).until(() -> {
          Table t = admin.syncedMap().table("grow").orElseThrow();
          Map<String, Long> perNode = new java.util.TreeMap<>();
          t.shards().forEach(s -> perNode.merge(s.owner().value(), 1L, Long::sum));
          long largest = client.describeTable("grow", true).shards().stream().mapToLong(s -> s.bytes()).max().orElse(0);
          List<String> plans = new java.util.ArrayList<>();
          new RebalanceRecords(admin).plans().stream().skip(Math.max(0, new RebalanceRecords(admin).plans().size() - 3))
              .forEach(p -> plans.add(p.getId() + " " + p.getState() + " moves " + p.getMovesCount() + " resizes " + p.getResizesCount()
                  + " " + p.getError()));
          seen.set(t.shards().size() + " shards, per node " + perNode + ", largest " + largest + " bytes; last plans " + plans);
          return t.shards().size() > 16 && perNode.size() == 3 && perNode.values().stream().allMatch(n -> n >= 4)
              && largest < 4 * SPLIT_BYTES; // none left far past the split size
        });
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        throw new AssertionError("the table did not grow and spread within 2 minutes; last seen: " + seen.get(), e);
      }
      assertThat(admin.syncedMap().table("fixed").orElseThrow().shards()).hasSize(1);
      for (String key : acknowledged.keySet()) {
        if (client.get("grow", Key.of(key)).isEmpty()) {
          // Say where the key should be, and whether it comes back once any cutover has settled:
          // an acknowledged key absent here is the open bug of docs/reliability.md (issue 12).
          Table t = admin.syncedMap().table("grow").orElseThrow();
          String where = t.shardFor(Key.of(key).partitionKey()).id() + " on " + t.shardFor(Key.of(key).partitionKey()).owner();
          Thread.sleep(5_000);
          boolean later = client.get("grow", Key.of(key)).isPresent();
          Table t2 = admin.syncedMap().table("grow").orElseThrow();
          throw new AssertionError("acknowledged key " + key + " read as absent; it belongs to " + where + "; 5 s later present=" + later + " now in "
              + t2.shardFor(Key.of(key).partitionKey()).id() + " on " + t2.shardFor(Key.of(key).partitionKey()).owner()
              + "; plans " + new RebalanceRecords(admin).plans().stream().map(p -> p.getId() + ":" + p.getState() + ":m" + p.getMovesCount()
                  + ":r" + p.getResizesCount()).toList());
        }
      }
      // The owners' counts, polled one node after another, can miss or double a shard whose move
      // cuts over between two polls (auto mode still spreads shards): the count settles at the keys.
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(client.describeTable("grow", true).shards().stream()
          .mapToLong(s -> s.keys()).sum()).as("no key in two shards, none in none").isEqualTo(2_000));
      assertThat(new RebalanceRecords(admin).plans()).as("the splits were plans of the balancer, run in auto mode")
          .anySatisfy(p -> assertThat(p.getResizesList()).isNotEmpty()
              .allMatch(r -> r.getState() == ResizeRecord.State.DONE && r.getBySize() && r.getResultNumbersCount() == 2));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "hashrange"})
  void aBusyShardSplitsByLoadAndItsHalvesMergeBackWhenTheLoadStops(String strategy) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 1, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new RebalanceRecords(admin).updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setSplitBytes(-1)
          .setSplitRps(300).setSplitRpsSeconds(2).setMergeSeconds(3).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("busy", TableSpec.builder(strategy).shards(1).build());
      Map<String, String> acknowledged = new ConcurrentHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread load = new Thread(() -> {
        java.util.SplittableRandom random = new java.util.SplittableRandom(11);
        try {
          for (int i = 0; !stop.get(); i++) {
            String key = String.format("user%04d", random.nextInt(1_000));
            if (i % 4 == 0) {
              String value = "v" + i;
              client.put("busy", Key.of(key), b(value));
              acknowledged.put(key, value);
            } else {
              client.get("busy", Key.of(key));
            }
          }
        } catch (Throwable t) {
          failed.set(t);
        }
      });
      load.start();
      try {
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null
            || admin.syncedMap().table("busy").orElseThrow().shards().size() >= 2);
      } finally {
        stop.set(true);
        load.join();
      }
      assertThat(failed.get()).isNull();
      RebalanceRecords records = new RebalanceRecords(admin);
      assertThat(records.plans()).anySatisfy(p -> assertThat(p.getResizesList()).anySatisfy(r -> {
        assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.SPLIT);
        assertThat(r.getBySize()).isFalse();
        assertThat(r.getWhy()).startsWith("load: ");
      }));
      // Quiet now: the halves (the balancer's own) merge back, in rounds, to one shard.
      await().atMost(Duration.ofSeconds(90)).until(() -> admin.syncedMap().table("busy").orElseThrow().shards().size() == 1);
      assertThat(records.plans()).anySatisfy(p -> assertThat(p.getResizesList())
          .anySatisfy(r -> assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.MERGE)));
      for (var e : acknowledged.entrySet()) {
        var got = client.get("busy", Key.of(e.getKey()));
        assertThat(got).as(e.getKey()).isPresent();
        assertThat(new String(got.get().value(), StandardCharsets.UTF_8)).as(e.getKey()).isEqualTo(e.getValue());
      }
    }
  }

  @org.junit.jupiter.api.Test
  void neighboursOnTwoNodesMergeAfterTheBalancerMovesOneToTheOthersNode() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("hashrange").shards(1).replicas(1).build());
      Map<String, String> acknowledged = new ConcurrentHashMap<>();
      for (int i = 0; i < 300; i++) {
        client.put("t", Key.of("user" + i), b("v" + i));
        acknowledged.put("user" + i, "v" + i);
      }
      // Two halves, made as the balancer makes them (so they may merge), then one moved to the other node.
      long before = admin.syncedMap().table("t").orElseThrow().shards().get(0).id().number();
      TableDescription halves = client.splitShardAtHash("t", before, Long.MIN_VALUE);
      Table table = admin.syncedMap().table("t").orElseThrow();
      records.addResized(table.id(), halves.shards().stream().map(d -> d.number()).toList(),
          new java.util.TreeSet<>(halves.shards().stream().map(d -> d.number()).toList()));
      ShardAssignment upper = table.shards().get(1);
      String other = upper.owner().value().equals("n1") ? "n2" : "n1";
      TestCluster.moveShard(cluster.node(upper.owner().value()), table, upper, other, "apart");
      assertThat(admin.syncedMap().table("t").orElseThrow().shards()).extracting(ShardAssignment::owner).doesNotHaveDuplicates();

      // Quiet and small: in auto mode the balancer moves the smaller next to the other and merges them, under writes.
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        try {
          for (int i = 0; !stop.get(); i++) {
            String key = "user" + (i % 300);
            client.put("t", Key.of(key), b("w" + i));
            acknowledged.put(key, "w" + i);
            Thread.sleep(20); // a trickle, far under the merge's quarter of the split rate
          }
        } catch (Throwable t) {
          failed.set(t);
        }
      });
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1).setSplitBytes(1 << 20)
          .setSplitRps(2_000).setMergeSeconds(2).build());
      writer.start();
      try {
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null || admin.syncedMap().table("t").orElseThrow().shards().size() == 1);
      } finally {
        stop.set(true);
        writer.join();
      }
      assertThat(failed.get()).isNull();
      ResizeRecord merge = records.plans().stream().flatMap(p -> p.getResizesList().stream())
          .filter(r -> r.getKind() == ResizeRecord.Kind.MERGE).findFirst().orElseThrow();
      assertThat(merge.getState()).isEqualTo(ResizeRecord.State.DONE);
      assertThat(merge.getMovesFirst()).isTrue();
      assertThat(merge.getMovedBytes()).isPositive();
      assertThat(merge.getWhy()).contains("moves from").contains("first");
      checkReadBack(client, acknowledged);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "hashrange"})
  void aPagedScanReturnsEveryRowOnceWhileTheShardsItCrossesSplitAndMerge(String strategy) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new RebalanceRecords(admin).updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", strategy.equals("range") ? TableSpec.builder("range").splitPoints("user0100").build()
          : TableSpec.builder("hashrange").shards(2).build());
      List<Map.Entry<Key, byte[]>> rows = new java.util.ArrayList<>();
      for (int i = 0; i < 300; i++) {
        rows.add(Map.entry(Key.of(String.format("user%04d", i)), b("v" + i)));
      }
      client.batchPut("t", rows);
      List<String> seen = new java.util.ArrayList<>();
      io.shardwise.client.Scan scan = io.shardwise.client.Scan.all("t").limit(17);
      io.shardwise.client.ScanPage page;
      int pages = 0;
      do {
        page = client.scan(scan);
        page.rows().forEach(r -> seen.add(new String(r.key().partitionKey(), StandardCharsets.UTF_8)));
        scan = page.hasMore() ? scan.after(page) : scan;
        pages++;
        // Between pages: split the shard that holds the next row (at its middle), or merge two neighbours of one node.
        Table now = admin.syncedMap().table("t").orElseThrow();
        if (page.hasMore() && !page.rows().isEmpty()) {
          byte[] last = page.rows().get(page.rows().size() - 1).key().partitionKey();
          ShardAssignment holding = now.shardFor(last);
          if (pages % 3 == 0) {
            mergeAnyPair(client, now);
          } else {
            try {
              client.splitShard("t", holding.id().number()); // by size: the owner's middle of the shard's bytes
            } catch (ShardwiseException oneKey) {
              // a shard of one partition key does not split; the next page tries again
            }
          }
        }
      } while (page.hasMore());
      assertThat(pages).isGreaterThan(10);
      assertThat(admin.syncedMap().table("t").orElseThrow().shards().size()).as("the table split meanwhile").isGreaterThan(2);
      assertThat(seen).as("every row once").hasSize(300).doesNotHaveDuplicates();
      if (strategy.equals("range")) {
        assertThat(seen).isSorted();
      }
    }
  }

  /** Merges the first two neighbours that are on one node, if any. */
  private static void mergeAnyPair(ShardwiseClient client, Table table) {
    for (int i = 0; i + 1 < table.shards().size(); i++) {
      if (table.shards().get(i).owner().equals(table.shards().get(i + 1).owner())) {
        client.mergeShards("t", table.shards().get(i).id().number());
        return;
      }
    }
  }

  @org.junit.jupiter.api.Test
  void inSuggestModeASplitWaitsForApprovalAsAPlan() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 1, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().putTableSplitBytes("t", 64 << 10).build()); // the mode stays suggest
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("range").shards(1).build());
      byte[] filler = new byte[200];
      for (int i = 0; i < 1_000; i++) {
        client.put("t", Key.of(String.format("user%05d", i)), filler);
      }
      PlanRecord pending = await().atMost(Duration.ofSeconds(30)).until(() -> records.plans().stream()
          .filter(p -> p.getState() == PlanRecord.State.PENDING && p.getResizesCount() > 0).findFirst(), java.util.Optional::isPresent).get();
      assertThat(pending.getResizes(0).getWhy()).contains("past the split size of 64.0 KiB");
      assertThat(admin.syncedMap().table("t").orElseThrow().shards()).as("nothing runs before approval").hasSize(1);
      new io.shardwise.server.balance.Rebalancing(admin).approve(pending.getId());
      PlanRecord done = await().atMost(Duration.ofSeconds(30)).until(() -> records.plan(pending.getId()).orElseThrow(),
          p -> p.getState() == PlanRecord.State.DONE);
      assertThat(done.getResizes(0).getResultNumbersCount()).isEqualTo(2);
      assertThat(admin.syncedMap().table("t").orElseThrow().shards()).hasSize(2);
      assertThat(client.describeTable("t", true).shards().stream().mapToLong(s -> s.keys()).sum()).isEqualTo(1_000);
    }
  }

  @org.junit.jupiter.api.Test
  void presplitCutsATableIntoShardsOfEqualBytesFromItsLiveKeys() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("range").shards(1).build());
      client.createTable("h", TableSpec.builder("hashrange").shards(2).build());
      assertThatThrownBy(() -> client.presplitTable("r", 8)).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("no keys to split at");
      byte[] filler = new byte[100];
      for (int from = 0; from < 2_000; from += 100) {
        List<Map.Entry<Key, byte[]>> rows = new ArrayList<>();
        for (int i = from; i < from + 100; i++) {
          rows.add(Map.entry(Key.of(String.format("user%05d", i)), filler));
        }
        client.batchPut("r", rows);
      }
      TableDescription r = client.presplitTable("r", 8); // replicated (two nodes: two replicas), so each split is quiesced first
      assertThat(r.shards()).hasSize(8);
      TableDescription measured = client.describeTable("r", true);
      assertThat(measured.shards().stream().mapToLong(s -> s.keys()).sum()).isEqualTo(2_000);
      assertThat(measured.shards()).as("pieces of equal bytes").allMatch(s -> s.keys() >= 200 && s.keys() <= 300);
      for (int i = 0; i < 2_000; i += 7) {
        assertThat(client.get("r", Key.of(String.format("user%05d", i)))).isPresent();
      }
      TableDescription h = client.presplitTable("h", 8); // empty: equal hash ranges
      assertThat(h.shards()).hasSize(8);
      assertThatThrownBy(() -> client.presplitTable("h", 8)).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("must be more than that");
    }
  }

  @org.junit.jupiter.api.Test
  void aScheduledPresplitRunsAtItsTimeAndACancelledOneNever() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 1, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("launch", TableSpec.builder("hashrange").shards(1).build());
      io.shardwise.server.balance.Schedule schedule = new io.shardwise.server.balance.Schedule(admin);
      long soon = System.currentTimeMillis() + 1_500;
      var cancelled = schedule.add(io.shardwise.proto.v1.ScheduledAction.newBuilder()
          .setKind(io.shardwise.proto.v1.ScheduledAction.Kind.PRESPLIT).setTable("launch").setShards(32).setAtMillis(soon).build());
      var presplit = schedule.add(io.shardwise.proto.v1.ScheduledAction.newBuilder()
          .setKind(io.shardwise.proto.v1.ScheduledAction.Kind.PRESPLIT).setTable("launch").setShards(8).setAtMillis(soon).setNote("launch")
          .build());
      var plan = schedule.add(io.shardwise.proto.v1.ScheduledAction.newBuilder()
          .setKind(io.shardwise.proto.v1.ScheduledAction.Kind.PLAN).setAtMillis(soon + 500).build());
      schedule.cancel(cancelled.getId());
      assertThatThrownBy(() -> schedule.cancel(cancelled.getId())).hasMessageContaining("not waiting");
      assertThat(admin.syncedMap().table("launch").orElseThrow().shards()).as("not before its time").hasSize(1);
      var done = await().atMost(Duration.ofSeconds(30)).until(() -> schedule.get(presplit.getId()).orElseThrow(),
          a -> a.getState() != io.shardwise.proto.v1.ScheduledAction.State.WAITING
              && a.getState() != io.shardwise.proto.v1.ScheduledAction.State.RUNNING);
      assertThat(done.getState()).as(done.getResult()).isEqualTo(io.shardwise.proto.v1.ScheduledAction.State.DONE);
      assertThat(done.getRanMillis()).isGreaterThanOrEqualTo(soon);
      assertThat(done.getResult()).startsWith("table launch has 8 shards");
      assertThat(admin.syncedMap().table("launch").orElseThrow().shards()).hasSize(8);
      var planned = await().atMost(Duration.ofSeconds(30)).until(() -> schedule.get(plan.getId()).orElseThrow(),
          a -> a.getState() == io.shardwise.proto.v1.ScheduledAction.State.DONE);
      assertThat(planned.getResult()).contains("no plan"); // one node: nothing to move
      assertThat(schedule.get(cancelled.getId()).orElseThrow().getState()).isEqualTo(io.shardwise.proto.v1.ScheduledAction.State.CANCELLED);
    }
  }

  private static void checkReadBack(ShardwiseClient client, Map<String, String> acknowledged) {
    for (var e : acknowledged.entrySet()) {
      var got = client.get("t", Key.of(e.getKey()));
      assertThat(got).as("key %s", e.getKey()).isPresent();
      assertThat(new String(got.get().value(), StandardCharsets.UTF_8)).as("key %s", e.getKey()).isEqualTo(e.getValue());
    }
  }
}
