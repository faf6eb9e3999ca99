package io.shardwise.server.node;

import io.shardwise.client.KeyValue;
import io.shardwise.client.Scan;
import io.shardwise.client.ScanPage;
import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.VersionMismatchException;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three nodes, a router and clients in every routing mode, on real RocksDB, a real embedded
 * ZooKeeper and real gRPC on loopback. Each test uses its own tables.
 */
@Tag("integration")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterTest {

  /** Small batch-bytes limit so the test can cross it cheaply; the other limits are the defaults. */
  private static final Limits LIMITS = new Limits(8 * 1024, 4 * 1024 * 1024, 1000, 2L * 1024 * 1024, 1000);

  private TestCluster cluster;

  @BeforeAll
  void start(@TempDir Path dir) {
    cluster = new TestCluster(dir, 3, LIMITS);
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String pk(KeyValue row) {
    return new String(row.key().partitionKey(), StandardCharsets.UTF_8);
  }

  private static TableSpec rangeSpec(String... splits) {
    return TableSpec.builder("range").splitPoints(splits).replicas(1).build();
  }

  private static List<String> names(int n) {
    List<String> out = new ArrayList<>();
    String letters = "abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < n; i++) {
      out.add(letters.charAt(i % 26) + String.format(Locale.ROOT, "-user-%04d", i));
    }
    return out;
  }

  @Test
  void everyRoutingModeGivesTheSameAnswers() {
    ShardwiseClient direct = cluster.client(Routing.CLIENT);
    direct.createTable("modes_range", rangeSpec("g", "n", "t"));
    direct.createTable("modes_hash", TableSpec.builder("ring").vnodes(16).replicas(1).build());
    Map<Routing, ShardwiseClient> clients = Map.of(Routing.CLIENT, direct, Routing.ROUTER, cluster.client(Routing.ROUTER), Routing.NODE, cluster.client(Routing.NODE));

    for (String table : List.of("modes_range", "modes_hash")) {
      List<String> keys = names(150);
      for (int i = 0; i < keys.size(); i++) {
        Routing writer = Routing.values()[i % 3];
        clients.get(writer).put(table, Key.of(keys.get(i)), b("v-" + keys.get(i)));
      }
      for (Routing reader : Routing.values()) {
        for (String k : keys) {
          Optional<Versioned> v = clients.get(reader).get(table, Key.of(k));
          assertThat(v).as("%s read %s of %s", reader, k, table).isPresent();
          assertThat(new String(v.get().value(), StandardCharsets.UTF_8)).isEqualTo("v-" + k);
        }
        assertThat(clients.get(reader).get(table, Key.of("absent"))).isEmpty();
      }
    }
  }

  @Test
  void aKeyIsStoredOnlyOnItsOwner() {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    client.createTable("owners", TableSpec.builder("slots").slots(64).replicas(1).build());
    List<String> keys = names(200);
    for (String k : keys) {
      client.put("owners", Key.of(k), b(k));
    }
    ShardMap map = cluster.nodes.get(0).map();
    Table table = map.table("owners").orElseThrow();
    for (String k : keys) {
      ShardAssignment shard = table.shardFor(b(k));
      ShardRef ref = ShardRef.of(table, shard.id().number());
      for (ShardwiseNode node : cluster.nodes) {
        boolean stored = node.store().get(ref, Key.of(k).encode()) != null;
        assertThat(stored).as("%s on %s (owner %s)", k, node.id(), shard.owner()).isEqualTo(node.id().equals(shard.owner()));
      }
    }
  }

  @Test
  void rangeScansTouchOnlyTheOverlappingShards() {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    client.createTable("scans", rangeSpec("g", "n", "t"));
    List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
    for (String k : names(104)) {
      batch.add(new AbstractMap.SimpleEntry<>(Key.of(k), b(k)));
    }
    client.batchPut("scans", batch);

    ScanPage one = client.scan(Scan.range("scans", b("h"), b("m")).limit(1000));
    assertThat(one.shardsTouched()).isEqualTo(1);
    assertThat(one.rows()).hasSize(4 * 5).allMatch(r -> pk(r).compareTo("h") >= 0 && pk(r).compareTo("m") < 0);

    ScanPage two = client.scan(Scan.range("scans", b("k"), b("p")).limit(1000));
    assertThat(two.shardsTouched()).isEqualTo(2);

    // Paging over everything returns every row once, in key order.
    List<String> all = new ArrayList<>();
    int touched = 0;
    Scan scan = Scan.all("scans").limit(30);
    ScanPage page;
    do {
      page = client.scan(scan);
      page.rows().forEach(r -> all.add(pk(r)));
      touched += page.shardsTouched();
      scan = page.hasMore() ? scan.after(page) : scan;
    } while (page.hasMore());
    assertThat(all).hasSize(104).isSorted().doesNotHaveDuplicates();
    assertThat(touched).isGreaterThanOrEqualTo(4);
  }

  @Test
  void aSortKeyScanStaysInOnePartitionInOrder() {
    ShardwiseClient client = cluster.client(Routing.ROUTER);
    client.createTable("timeline", TableSpec.builder("hashrange").shards(6).replicas(1).build());
    for (long t = 0; t < 50; t++) {
      client.put("timeline", Key.of("user-1", t * 10), b("event-" + t));
      client.put("timeline", Key.of("user-2", t), b("other"));
    }
    ScanPage page = client.scan(Scan.partition("timeline", "user-1").sortKeys(Key.orderedLong(100), Key.orderedLong(200)).limit(1000));
    assertThat(page.shardsTouched()).isEqualTo(1);
    assertThat(page.rows()).extracting(KeyValue::valueAsString)
        .containsExactly("event-10", "event-11", "event-12", "event-13", "event-14", "event-15", "event-16", "event-17", "event-18", "event-19");
  }

  @Test
  void conditionalPutsCompareVersions() {
    ShardwiseClient client = cluster.client(Routing.NODE);
    client.createTable("cas", TableSpec.builder("mod").replicas(1).build());
    long v1 = client.putIfVersion("cas", Key.of("k"), b("one"), 0);
    assertThat(v1).isEqualTo(1);
    assertThatThrownBy(() -> client.putIfVersion("cas", Key.of("k"), b("again"), 0))
        .isInstanceOfSatisfying(VersionMismatchException.class, e -> assertThat(e.currentVersion()).isEqualTo(1));
    assertThat(client.putIfVersion("cas", Key.of("k"), b("two"), 1)).isEqualTo(2);
    assertThat(client.delete("cas", Key.of("k"))).isTrue();
    assertThat(client.get("cas", Key.of("k"))).isEmpty();
  }

  @Test
  void aStaleEpochGetsWrongShardAndTheClientRecoversByItself() throws Exception {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    // Two shards per node, so a batch grouped for the old owner spans two owners after the move.
    client.createTable("stale", TableSpec.builder("mod").shards(6).replicas(1).build());
    ShardwiseClient staleBatcher = cluster.client(Routing.CLIENT); // also keeps the pre-move map
    byte[] pk = b("moving-key");
    ShardAssignment before = cluster.nodes.get(0).map().table("stale").orElseThrow().shardFor(pk);
    NodeId newOwner = cluster.nodes.stream().map(ShardwiseNode::id).filter(n -> !n.equals(before.owner())).findFirst().orElseThrow();

    // Reassign the (empty) shard in ZooKeeper; the client's cached map still names the old owner.
    try (Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      ShardMap moved = admin.updateMap(map -> Optional.of(ShardMapDelta.on(map).moveShard(before.id(), before.owner(), newOwner).build()));
      cluster.nodes.forEach(n -> org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> n.map().epoch() >= moved.epoch()));
    }

    // The old owner refuses, naming the new one and its epoch.
    ManagedChannel channel = NettyChannelBuilder.forTarget(cluster.node(before.owner().value()).address()).usePlaintext().build();
    try {
      PutRequest put = PutRequest.newBuilder().setHeader(RequestHeader.newBuilder().setMapEpoch(client.mapEpoch())).setTable("stale")
          .setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(pk))).setValue(ByteString.copyFromUtf8("x")).build();
      assertThatThrownBy(() -> DataServiceGrpc.newBlockingStub(channel).put(put))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            ErrorInfo info = Errors.info(e).orElseThrow();
            assertThat(info.getCode()).isEqualTo(ErrorInfo.Code.WRONG_SHARD);
            assertThat(info.getOwnerNode()).isEqualTo(newOwner.value());
            assertThat(info.getMapEpoch()).isGreaterThan(client.mapEpoch());
          });
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    // A stale batch spanning the moved shard and the others lands too, each key on its owner.
    List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
    batch.add(new AbstractMap.SimpleEntry<>(Key.of("batch-first"), b("1")));
    batch.add(new AbstractMap.SimpleEntry<>(Key.of(pk), b("from the stale batch")));
    for (int i = 0; i < 200; i++) { // enough that every shard of the old owner holds some
      batch.add(new AbstractMap.SimpleEntry<>(Key.of("batch-" + i), b("v")));
    }
    staleBatcher.batchPut("stale", batch);
    assertThat(new String(staleBatcher.get("stale", Key.of(pk)).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("from the stale batch");

    long staleEpoch = client.mapEpoch();
    client.put("stale", Key.of(pk), b("landed"));
    assertThat(client.mapEpoch()).isGreaterThan(staleEpoch);
    Table table = cluster.node(newOwner.value()).map().table("stale").orElseThrow();
    ShardRef ref = ShardRef.of(table, before.id().number());
    assertThat(cluster.node(newOwner.value()).store().get(ref, Key.of(pk).encode())).isNotNull();
    assertThat(cluster.node(before.owner().value()).store().get(ref, Key.of(pk).encode())).isNull();
  }

  @Test
  void aClientThatHasAMapFetchesOnlyTheTablesChangedSince() throws Exception {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    client.createTable("inc_still", TableSpec.builder("hashrange").shards(4).replicas(1).build());
    client.createTable("inc_moved", TableSpec.builder("hashrange").shards(4).replicas(1).build());
    ShardwiseNode n1 = cluster.node("n1");
    ManagedChannel channel = NettyChannelBuilder.forTarget(n1.address()).usePlaintext().build();
    try {
      var admin = io.shardwise.proto.v1.AdminServiceGrpc.newBlockingStub(channel);
      var before = admin.getShardMap(io.shardwise.proto.v1.GetShardMapRequest.newBuilder().setKnownEpoch(0).setChangesOnly(true).build());
      assertThat(before.getChangesOnly()).as("a caller with no map gets all of it").isFalse();
      ShardMap base = io.shardwise.proto.MapCodec.fromProto(before.getMap());
      ShardAssignment s = base.table("inc_moved").orElseThrow().shards().get(1);
      NodeId to = cluster.nodes.stream().map(ShardwiseNode::id).filter(n -> !n.equals(s.owner())).findFirst().orElseThrow();
      try (Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        ShardMap moved = c.updateMap(map -> Optional.of(ShardMapDelta.on(map).moveShard(s.id(), s.owner(), to).build()));
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> n1.map().epoch() >= moved.epoch());
      }

      var changes = admin.getShardMap(
          io.shardwise.proto.v1.GetShardMapRequest.newBuilder().setKnownEpoch(base.epoch()).setChangesOnly(true).build());

      assertThat(changes.getChangesOnly()).isTrue();
      assertThat(changes.getBaseEpoch()).isEqualTo(base.epoch());
      assertThat(changes.getMap().getTablesList()).as("no table is sent whole").isEmpty();
      assertThat(changes.getShardChangesList()).singleElement().satisfies(c -> {
        assertThat(c.getTable().getName()).isEqualTo("inc_moved");
        assertThat(c.getPositionsList()).containsExactly(1);
      });
      assertThat(changes.getUnchangedTablesList()).contains("inc_still").doesNotContain("inc_moved");
      List<Table> rebuilt = new ArrayList<>();
      changes.getUnchangedTablesList().forEach(name -> rebuilt.add(base.table(name).orElseThrow()));
      changes.getShardChangesList().forEach(c -> rebuilt.add(
          io.shardwise.proto.MapCodec.applyShardChanges(base.table(c.getTable().getName()).orElseThrow(), c).orElseThrow()));
      assertThat(io.shardwise.proto.MapCodec.toProto(ShardMap.restore(changes.getMap().getEpoch(), rebuilt)))
          .as("the base map's unchanged tables plus the changed ones are the node's map")
          .isEqualTo(io.shardwise.proto.MapCodec.toProto(n1.map()));
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    // The client, still on the map before the move, is refused, fetches the change and lands the write.
    long stale = client.mapEpoch();
    for (int i = 0; i < 40; i++) {
      client.put("inc_moved", Key.of("k" + i), b("v"));
    }
    assertThat(client.mapEpoch()).isGreaterThan(stale);
    for (int i = 0; i < 40; i++) {
      assertThat(client.get("inc_moved", Key.of("k" + i))).isPresent();
    }

    // Changes that do not fit a client's map (a table it lacks, back from the trash with an old id):
    // the client fetches the whole map instead.
    client.put("inc_still", Key.of("kept"), b("v"));
    client.dropTable("inc_still");
    ShardwiseClient lacking = cluster.client(Routing.CLIENT);
    long before = lacking.mapEpoch(); // before the undrop (read after it, a map update may already have brought it)
    client.undropTable("inc_still");
    // Explicitly: a lookup of a table it lacks refreshes only if it has not just done so. A refresh takes the
    // first nodes' answers, and a node's map may trail ZooKeeper's by a watch, so ask until one has the undrop.
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> {
      lacking.refreshMap();
      return lacking.mapEpoch() > before;
    });
    assertThat(lacking.get("inc_still", Key.of("kept"))).isPresent();
  }

  @Test
  void aNearCacheAnswersReadHotKeysInTheClientAndAlwaysSeesItsOwnWrites() {
    ShardwiseClient writer = cluster.client(Routing.CLIENT);
    writer.createTable("near", TableSpec.builder("hashrange").shards(4).replicas(1).build());
    Key hot = Key.of("celebrity");
    writer.put("near", hot, b("v1"));
    List<String> seeds = new ArrayList<>();
    cluster.nodes.forEach(n -> seeds.add(n.address()));
    try (ShardwiseClient cached = ShardwiseClient.builder().seeds(seeds).nearCache(Duration.ofSeconds(10), 100).build()) {
      long servedBefore = servedReads();
      for (int i = 0; i < 200; i++) {
        assertThat(new String(cached.get("near", hot).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v1");
      }
      assertThat(cached.getAsync("near", hot).join()).isPresent();
      assertThat(cached.nearCacheStats().orElseThrow()).satisfies(s -> {
        assertThat(s.misses()).isEqualTo(1);
        assertThat(s.hits()).isEqualTo(200);
      });
      assertThat(servedReads() - servedBefore).as("reads the nodes served").isEqualTo(1);

      writer.put("near", hot, b("v2")); // another client's write: missed for up to the TTL, the price of the cache
      assertThat(new String(cached.get("near", hot).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v1");
      cached.put("near", hot, b("v3")); // its own write: seen at once
      assertThat(new String(cached.get("near", hot).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v3");
      cached.delete("near", hot);
      assertThat(cached.get("near", hot)).isEmpty();
    }
    assertThat(writer.nearCacheStats()).isEmpty();
  }

  /** Reads the nodes have served since they started, over every shard. */
  private long servedReads() {
    long reads = 0;
    for (ShardwiseNode n : cluster.nodes) {
      for (Table t : n.map().tables().values()) {
        for (ShardAssignment s : t.shards()) {
          reads += n.store().traffic().counts(ShardRef.of(t, s.id().number())).reads();
        }
      }
    }
    return reads;
  }

  @Test
  void aRestartedNodeServesItsDataAgain() {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    client.createTable("durable", TableSpec.builder("jump").replicas(1).build());
    List<String> keys = names(60);
    keys.forEach(k -> client.put("durable", Key.of(k), b(k)));

    ShardwiseNode n2 = cluster.node("n2");
    cluster.nodes.remove(n2);
    n2.close();
    ShardwiseNode again = cluster.startNode(2);
    cluster.nodes.add(again);
    client.refreshMap();
    for (String k : keys) {
      assertThat(client.get("durable", Key.of(k))).as(k).isPresent();
    }
  }

  @Test
  void limitsAcceptJustUnderAndRejectJustOverWritingNothing() {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    client.createTable("limits", TableSpec.builder("mod").replicas(1).build());

    byte[] pk = new byte[8 * 1024];
    java.util.Arrays.fill(pk, (byte) 'k');
    client.put("limits", Key.of(pk), b("ok"));
    byte[] tooLong = java.util.Arrays.copyOf(pk, pk.length + 1);
    assertThatThrownBy(() -> client.put("limits", Key.of(tooLong), b("no")))
        .isInstanceOf(ShardwiseException.class).hasMessageContaining("key is 8193 bytes; the limit is 8192 bytes");
    assertThat(client.get("limits", Key.of(java.util.Arrays.copyOf(tooLong, 100)))).isEmpty();

    client.put("limits", Key.of("big"), new byte[4 * 1024 * 1024]);
    assertThatThrownBy(() -> client.put("limits", Key.of("bigger"), new byte[4 * 1024 * 1024 + 1]))
        .hasMessageContaining("value is 4194305 bytes; the limit is 4194304 bytes");
    assertThat(client.get("limits", Key.of("bigger"))).isEmpty();

    List<Map.Entry<Key, byte[]>> thousand = new ArrayList<>();
    for (int i = 0; i < 1001; i++) {
      thousand.add(new AbstractMap.SimpleEntry<>(Key.of("batch-" + i), b("v")));
    }
    ShardwiseClient viaRouter = cluster.client(Routing.ROUTER);
    assertThatThrownBy(() -> viaRouter.batchPut("limits", thousand)).hasMessageContaining("batch has 1001 keys; the limit is 1000 keys");
    assertThat(viaRouter.get("limits", Key.of("batch-0"))).isEmpty();
    viaRouter.batchPut("limits", thousand.subList(0, 1000));
    assertThat(viaRouter.get("limits", Key.of("batch-999"))).isPresent();

    List<Map.Entry<Key, byte[]>> heavy = List.of(
        new AbstractMap.SimpleEntry<>(Key.of("h1"), new byte[1024 * 1024]),
        new AbstractMap.SimpleEntry<>(Key.of("h2"), new byte[1024 * 1024]));
    assertThatThrownBy(() -> viaRouter.batchPut("limits", heavy)).hasMessageContaining("the limit is 2097152 bytes");
    assertThat(viaRouter.get("limits", Key.of("h1"))).isEmpty();
  }

  @Test
  void badRequestsGetClearStatuses() {
    ShardwiseClient client = cluster.client(Routing.ROUTER);
    assertThatThrownBy(() -> client.get("no_such_table", Key.of("k"))).hasMessage("NOT_FOUND: no table named 'no_such_table'");
    assertThatThrownBy(() -> client.createTable("bad", TableSpec.builder("zigzag").build()))
        .hasMessageContaining("INVALID_ARGUMENT: unknown strategy 'zigzag'");
    assertThatThrownBy(() -> client.createTable("9bad", TableSpec.builder("mod").build()))
        .hasMessageContaining("must start with a letter");
    assertThatThrownBy(() -> client.createTable("r", rangeSpec("m", "f"))).hasMessageContaining("split points are not sorted");
    assertThatThrownBy(() -> client.createTable("r2", TableSpec.builder("range").shards(3).build()))
        .hasMessageContaining("needs split points or sample keys to pre-split from (--split-points or --sample-keys-file)");
    client.createTable("dup", TableSpec.builder("mod").replicas(1).build());
    assertThatThrownBy(() -> client.createTable("dup", TableSpec.builder("mod").build()))
        .hasMessageContaining("ALREADY_EXISTS: table dup already exists");
    assertThatThrownBy(() -> client.put("dup", Key.of(new byte[0]), b("v"))).hasMessageContaining("the partition key is empty");
  }
}
