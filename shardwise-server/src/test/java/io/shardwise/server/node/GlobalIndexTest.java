package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.shardwise.client.IndexCheck;
import io.shardwise.client.IndexInfo;
import io.shardwise.client.QueryResult;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.Table;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.server.rpc.Limits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Global secondary indexes on a real cluster: tables of their own, partitioned by the indexed
 * value, changed in one transaction with every write of a row. The <b>consistency checker</b>
 * ({@link #assertExact}) reads every row and every entry: each entry a row calls for is there and
 * none more; every query through a global index answers what a brute-force scan finds ({@link
 * LocalIndexTest#assertQueriesMatchAScan}, the same conditions).
 */
@Tag("integration")
class GlobalIndexTest {

  @TempDir Path dir;

  @Test
  void aGlobalIndexIsBuiltOnlineWhileWritesGoOnAndEveryQueryReadsOneIndexShardPerValue() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("cars", TableSpec.builder("hashrange").shards(6).replicas(2).format(ValueFormat.JSON).build());
      Random random = new Random(42);
      for (int i = 0; i < 1_000; i++) {
        client.put("cars", Key.of("car-" + random.nextInt(800)), LocalIndexTest.doc(random));
      }
      // Writes of every kind go on while the indexes are created and built: those planned on a map
      // without an index are refused where they land and planned again through it.
      AtomicBoolean writing = new AtomicBoolean(true);
      AtomicLong writes = new AtomicLong();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        Random r = new Random(7);
        try {
          while (writing.get()) {
            Key key = Key.of("car-" + r.nextInt(800));
            int op = r.nextInt(10);
            if (op < 2) {
              client.delete("cars", key);
            } else if (op < 3) {
              client.batchPut("cars", List.of(Map.entry(key, LocalIndexTest.doc(r)), Map.entry(Key.of("car-" + (800 + r.nextInt(50))),
                  LocalIndexTest.doc(r))));
            } else if (op < 4) {
              client.transact(List.of(TxnItem.put("cars", key, LocalIndexTest.doc(r)), TxnItem.delete("cars", Key.of("car-" + r.nextInt(800)))));
            } else {
              client.put("cars", key, LocalIndexTest.doc(r));
            }
            writes.incrementAndGet();
          }
        } catch (RuntimeException e) {
          failed.set(e);
        }
      }, "global-index-test-writer");
      writer.start();
      try {
        List<IndexInfo> created = client.createGlobalIndex("cars", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 0);
        assertThat(created).singleElement().satisfies(i -> {
          assertThat(i.scope()).isEqualTo("global");
          assertThat(i.indexTable()).isEqualTo("cars.color");
        });
        client.createGlobalIndex("cars", "year", io.shardwise.client.GlobalIndexMode.SYNC, "range", 0);
        client.createGlobalIndex("cars", "owner.id", io.shardwise.client.GlobalIndexMode.SYNC, "hashrange", 4);
        client.createGlobalIndex("cars", "sold", io.shardwise.client.GlobalIndexMode.SYNC, "", 0);
        client.createGlobalIndex("cars", "make", io.shardwise.client.GlobalIndexMode.SYNC, "", 0);
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null || client.indexes("cars").stream().allMatch(IndexInfo::ready));
        long during = writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || writes.get() > during + 100); // and go on after
      } finally {
        writing.set(false);
        writer.join();
      }
      assertThat(failed.get()).as("every write succeeded").isNull();
      assertThat(client.describeTable("cars.owner.id", false).shards()).hasSize(4);
      assertExact(client, "cars", 5);
      LocalIndexTest.assertQueriesMatchAScan(client, "cars");

      QueryResult red = client.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(10));
      assertThat(red.plan().access()).isEqualTo("index");
      assertThat(red.plan().index()).isEqualTo("color (global index): color = 'red'");
      // One index shard read, then the rows fetched from their shards; the entries are exactly the red rows (never stale).
      assertThat(red.plan().indexEntries()).isEqualTo(red.rows().size());
      assertThat(red.plan().rowsExamined()).isEqualTo(red.rows().size());
      assertThat(red.plan().shards()).isBetween(2, 1 + 6);
      assertThat(red.plan().indexShards()).isEqualTo(1);
      assertThat(red.plan().rowShards()).isEqualTo(red.plan().shards() - 1);
      // An AND of two global equalities: both posting lists read (each from one index shard), intersected, only the rows in both fetched.
      QueryResult redFords = client.query("cars", "color = 'red' AND make = 'ford'", 10_000, Duration.ofSeconds(10));
      assertThat(redFords.plan().index()).isEqualTo("color (global index): color = 'red' intersected with make (global index): make = 'ford'");
      assertThat(redFords.plan().postingLists()).extracting(QueryResult.PostingList::probe)
          .containsExactly("color (global index): color = 'red' intersected with make (global index): make = 'ford'",
              "make (global index): make = 'ford' (intersected)");
      assertThat(redFords.plan().postingLists().get(0).entries()).isEqualTo(red.rows().size());
      assertThat(redFords.plan().rowsExamined()).as("only rows in both lists fetched").isEqualTo(redFords.rows().size());
      assertThat(redFords.plan().indexShards()).isBetween(1, 2);
      QueryResult range = client.query("cars", "year >= 2020 AND year < 2023", 10_000, Duration.ofSeconds(10));
      assertThat(range.plan().index()).isEqualTo("year (global index): year >= 2020 AND year < 2023");
    }
  }

  /**
   * Random puts, deletes, batches, transactions (with the callers' own conditions), and splits,
   * merges and moves of the data's shards and of the index's: the index stays exact.
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2})
  void entriesFollowTheirRowsThroughWritesSplitsMergesAndMovesOfBothTables(long seed) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("fleet", TableSpec.builder("hashrange").shards(3).replicas(1).format(ValueFormat.JSON).build());
      client.createGlobalIndex("fleet", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 3);
      client.createGlobalIndex("fleet", "year", io.shardwise.client.GlobalIndexMode.SYNC, "range", 0);
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("fleet").stream().allMatch(IndexInfo::ready));
      Random random = new Random(seed);
      RandomReshapes reshapes = new RandomReshapes(cluster, client, random, "m-" + seed);
      long cancelled = 0;
      for (int step = 0; step < 600; step++) {
        Key key = Key.of("car-" + random.nextInt(200));
        int op = random.nextInt(100);
        String table = random.nextBoolean() ? "fleet" : random.nextBoolean() ? "fleet.color" : "fleet.year";
        if (op < 45) {
          client.put("fleet", key, LocalIndexTest.doc(random));
        } else if (op < 55) {
          client.delete("fleet", key);
        } else if (op < 65) {
          List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
          for (int i = 0; i < 5; i++) {
            batch.add(Map.entry(Key.of("car-" + (random.nextInt(40) * 5 + i)), LocalIndexTest.doc(random)));
          }
          client.batchPut("fleet", batch);
        } else if (op < 80) {
          int k = random.nextInt(60);
          TxnOutcome o = client.transact(List.of(TxnItem.put("fleet", Key.of("car-" + k), LocalIndexTest.doc(random)),
              TxnItem.put("fleet", Key.of("car-" + (k + 60)), LocalIndexTest.doc(random)).onlyIf(random.nextBoolean() ? TxnItem.EXISTS
                  : TxnItem.ABSENT), TxnItem.delete("fleet", Key.of("car-" + (k + 120)))));
          assertThat(o.status()).isIn(TxnOutcome.Status.COMMITTED, TxnOutcome.Status.CANCELLED);
          if (o.status() == TxnOutcome.Status.CANCELLED) {
            assertThat(o.cancellations()).singleElement().satisfies(c -> assertThat(c.item()).as("the caller's condition").isEqualTo(1));
            cancelled++;
          }
        } else if (op < 85) {
          long version = client.get("fleet", key).map(v -> v.version()).orElse(0L);
          try {
            client.putIfVersion("fleet", key, LocalIndexTest.doc(random), random.nextBoolean() ? version : version + 1);
          } catch (ShardwiseException e) {
            assertThat(e.getMessage()).contains("expected version");
          }
        } else if (op < 92) {
          reshapes.split(table);
        } else if (op < 95) {
          reshapes.merge(table);
        } else {
          reshapes.move(table);
        }
        if (step % 150 == 149) {
          assertExact(client, "fleet", 2);
        }
      }
      assertThat(cancelled).as("the callers' conditions were tried both ways").isPositive();
      assertExact(client, "fleet", 2);
      LocalIndexTest.assertQueriesMatchAScan(client, "fleet");
    }
  }

  /**
   * The fence, on a real cluster: a put routed to its shard on a map without the index is parked
   * there (a test hook) while the index is created, drained, backfilled and marked ready; released,
   * it must not land as a plain write (its entry would be missing for good) — its owner refuses it,
   * and it is planned again through the index.
   */
  @Test
  void aWriteRoutedBeforeTheIndexExistedAndLandingAfterItsBackfillIsIndexed() throws Exception {
    CutoverFenceTest.ParkOneWrite hook = new CutoverFenceTest.ParkOneWrite();
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      cluster.nodes.add(cluster.startNode(1, c -> c.withHooks(hook)));
      cluster.nodes.add(cluster.startNode(2));
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("late", TableSpec.builder("hashrange").shards(2).replicas(1).format(ValueFormat.JSON).build());
      ShardwiseNode n1 = cluster.node("n1");
      Table table = n1.map().table("late").orElseThrow();
      Key key = null;
      for (int i = 0; key == null; i++) {
        Key k = Key.of("row-" + i);
        if (table.shardFor(k.partitionKey()).owner().equals(n1.id())) {
          key = k;
        }
      }
      for (int i = 0; i < 50; i++) {
        client.put("late", Key.of("other-" + i), "{\"color\": \"blue\"}".getBytes(StandardCharsets.UTF_8));
      }
      hook.target.set(io.shardwise.server.storage.ShardRef.of(table, table.shardFor(key.partitionKey()).id().number()));
      Key parkedKey = key;
      java.util.concurrent.CompletableFuture<Long> parked = java.util.concurrent.CompletableFuture.supplyAsync(
          () -> client.put("late", parkedKey, "{\"color\": \"red\"}".getBytes(StandardCharsets.UTF_8)));
      assertThat(hook.parked.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("the put was routed to n1's shard").isTrue();

      client.createGlobalIndex("late", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 2);
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("late").get(0).ready()); // backfilled without the parked row
      hook.release.countDown();
      assertThat(parked.get(30, java.util.concurrent.TimeUnit.SECONDS)).isPositive();

      assertExact(client, "late", 1);
      QueryResult red = client.query("late", "color = 'red'", 100, Duration.ofSeconds(5));
      assertThat(red.plan().index()).isEqualTo("color (global index): color = 'red'");
      assertThat(red.rows()).singleElement().satisfies(kv -> assertThat(kv.key()).isEqualTo(parkedKey));
    }
  }

  /**
   * Several writers through different nodes and routing modes on the same few rows (conflicts,
   * wait-die aborts, writes planned again because a row changed since it was read): the index stays
   * exact, and every row's last acknowledged value is what the index finds it under.
   */
  @Test
  void contendedWritesOfTheSameRowsFromSeveralNodesKeepTheIndexExact() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient admin = cluster.client(Routing.CLIENT);
      admin.createTable("hot", TableSpec.builder("hashrange").shards(3).replicas(1).format(ValueFormat.JSON).build());
      admin.createGlobalIndex("hot", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 2);
      await().atMost(Duration.ofSeconds(30)).until(() -> admin.indexes("hot").stream().allMatch(IndexInfo::ready));
      List<Thread> writers = new ArrayList<>();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      AtomicLong writes = new AtomicLong();
      for (int w = 0; w < 4; w++) {
        ShardwiseClient client = cluster.client(w % 2 == 0 ? Routing.CLIENT : Routing.ROUTER);
        long seed = w;
        writers.add(new Thread(() -> {
          Random r = new Random(seed);
          try {
            for (int i = 0; i < 150; i++) {
              Key key = Key.of("row-" + r.nextInt(8));
              if (r.nextInt(5) == 0) {
                client.delete("hot", key);
              } else {
                client.put("hot", key, ("{\"color\": \"c" + r.nextInt(4) + "\"}").getBytes(StandardCharsets.UTF_8));
              }
              writes.incrementAndGet();
            }
          } catch (RuntimeException e) {
            failed.compareAndSet(null, e);
          }
        }, "hot-writer-" + w));
      }
      writers.forEach(Thread::start);
      for (Thread t : writers) {
        t.join();
      }
      assertThat(failed.get()).as("every contended write succeeded").isNull();
      assertThat(writes.get()).isEqualTo(600);
      assertExact(admin, "hot", 1);
      for (int c = 0; c < 4; c++) {
        String where = "color = 'c" + c + "'";
        String value = "\"c" + c + "\"";
        long byScan = QueryTest.scanAll(admin, "hot").stream().filter(kv -> kv.valueAsString().contains(value)).count();
        assertThat(admin.query("hot", where, 100, Duration.ofSeconds(5)).rows()).as(where).hasSize((int) byScan);
      }
    }
  }

  /**
   * An AND of a long posting list (every row) and a short one: the short list is shipped to the long
   * one's shard (each of its rows asked there by key) instead of reading the long list on.
   */
  @Test
  void anAndOfALongAndAShortPostingListShipsTheShortOneToTheLongOnesShard() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("items", TableSpec.builder("hashrange").shards(4).replicas(1).format(ValueFormat.JSON).build());
      List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
      for (int i = 0; i < 2_500; i++) {
        batch.add(Map.entry(Key.of(String.format("item-%05d", i)), ("{\"kind\": \"a\", \"tag\": \"" + (i % 100 == 0 ? "x" : "y" + (i % 7))
            + "\"}").getBytes(StandardCharsets.UTF_8)));
        if (batch.size() == 500) {
          client.batchPut("items", batch);
          batch.clear();
        }
      }
      client.createGlobalIndex("items", "kind", io.shardwise.client.GlobalIndexMode.SYNC, "", 2);
      client.createGlobalIndex("items", "tag", io.shardwise.client.GlobalIndexMode.SYNC, "", 2);
      await().atMost(Duration.ofSeconds(60)).until(() -> client.indexes("items").stream().allMatch(IndexInfo::ready));
      assertExact(client, "items", 2);
      QueryResult r = client.query("items", "kind = 'a' AND tag = 'x'", 1_000, Duration.ofSeconds(10));
      assertThat(r.rows()).hasSize(25).allSatisfy(kv -> assertThat(kv.valueAsString()).contains("\"x\""));
      assertThat(r.plan().postingLists()).extracting(QueryResult.PostingList::probe).containsExactly(
          "kind (global index): kind = 'a' intersected with tag (global index): tag = 'x': 25 rows of the shortest list shipped to its"
              + " shard, 25 kept",
          "tag (global index): tag = 'x' (intersected)");
      assertThat(r.plan().postingLists()).extracting(QueryResult.PostingList::entries).as("one page of the long list, all of the short one")
          .containsExactly(1_000L, 25L);
      assertThat(r.plan().rowsExamined()).as("only the 25 rows in both fetched").isEqualTo(25);
      // Paged by 10: the same rows, each once.
      List<String> paged = new ArrayList<>();
      byte[] token = new byte[0];
      do {
        QueryResult page = client.query("items", "kind = 'a' AND tag = 'x'", 10, Duration.ofSeconds(10), token);
        page.rows().forEach(kv -> paged.add(kv.key().toString()));
        token = page.truncated() ? page.nextPageToken() : null;
      } while (token != null);
      assertThat(paged).containsExactlyElementsOf(r.rows().stream().map(kv -> kv.key().toString()).toList());
    }
  }

  @Test
  void badRequestsGetOneClearErrorAndADropTakesTheIndexTableWithIt() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.ROUTER);
      client.createTable("raw", TableSpec.builder("hashrange").shards(2).replicas(1).build());
      client.createTable("docs", TableSpec.builder("hashrange").shards(2).replicas(1).format(ValueFormat.JSON).build());
      assertThatThrownBy(() -> client.createGlobalIndex("raw", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 0)).hasMessageContaining("only a table created with --format json");
      assertThatThrownBy(() -> client.createGlobalIndex("docs", "color", io.shardwise.client.GlobalIndexMode.SYNC, "ring", 0)).hasMessageContaining("hashrange or range, not 'ring'");
      assertThatThrownBy(() -> client.createGlobalIndex("docs", "color", io.shardwise.client.GlobalIndexMode.SYNC, "range", 3)).hasMessageContaining("starts as one shard");
      for (int i = 0; i < 300; i++) {
        client.put("docs", Key.of("d" + i), ("{\"color\": \"c" + (i % 7) + "\", \"n\": " + i + "}").getBytes(StandardCharsets.UTF_8));
      }
      client.createGlobalIndex("docs", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 0);
      assertThatThrownBy(() -> client.createGlobalIndex("docs", "color", io.shardwise.client.GlobalIndexMode.SYNC, "", 0)).satisfies(e ->
          assertThat(((ShardwiseException) e).code()).isEqualTo(Status.Code.ALREADY_EXISTS));
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("docs").get(0).ready());
      assertThat(client.indexes("docs").get(0).rowsIndexed()).as("the backfill's progress, as the controller reports it").isEqualTo(300);
      assertExact(client, "docs", 1);
      assertThat(client.query("docs", "color = 'c3'", 1_000, Duration.ofSeconds(5)).rows()).hasSize(43);

      // The index's table is written by the index only; it is dropped with the index, not by itself.
      assertThatThrownBy(() -> client.put("docs.color", Key.of("x"), new byte[0])).hasMessageContaining("written by the index only");
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.delete("docs.color", Key.of("x")))))
          .hasMessageContaining("written by the index only");
      assertThatThrownBy(() -> client.dropTable("docs.color")).hasMessageContaining("drop the index");
      assertThatThrownBy(() -> client.createTable("docs.size", TableSpec.builder("hashrange").shards(1).replicas(1).build()))
          .hasMessageContaining("global index's table");
      // A value too long to index is refused, and nothing is written.
      String longValue = "x".repeat(2_000);
      assertThatThrownBy(() -> client.put("docs", Key.of("d1"), ("{\"color\": \"" + longValue + "\"}").getBytes(StandardCharsets.UTF_8)))
          .hasMessageContaining("a globally indexed value is at most 1024 bytes");
      assertThat(new String(client.get("docs", Key.of("d1")).orElseThrow().value(), StandardCharsets.UTF_8)).contains("\"c1\"");
      // A conditional write keeps its meaning: a wrong version is refused, the right one written with its entries.
      long version = client.get("docs", Key.of("d2")).orElseThrow().version();
      assertThatThrownBy(() -> client.putIfVersion("docs", Key.of("d2"), "{\"color\": \"c9\"}".getBytes(StandardCharsets.UTF_8), version + 5))
          .hasMessageContaining("expected version");
      client.putIfVersion("docs", Key.of("d2"), "{\"color\": \"c9\"}".getBytes(StandardCharsets.UTF_8), version);
      assertThat(client.query("docs", "color = 'c9'", 1_000, Duration.ofSeconds(5)).rows()).hasSize(1);
      assertExact(client, "docs", 1);

      client.dropIndex("docs", "color");
      assertThat(client.indexes("docs")).isEmpty();
      assertThatThrownBy(() -> client.describeTable("docs.color", false)).hasMessageContaining("docs.color");
      QueryResult after = client.query("docs", "color = 'c3'", 1_000, Duration.ofSeconds(5));
      assertThat(after.plan().access()).isEqualTo("scan");
      assertThat(after.rows()).hasSize(43);
      client.put("docs", Key.of("d1"), ("{\"color\": \"" + longValue + "\"}").getBytes(StandardCharsets.UTF_8)); // no index: any length

      // A table dropped takes its index tables with it.
      client.createGlobalIndex("docs", "n", io.shardwise.client.GlobalIndexMode.SYNC, "range", 0);
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("docs").get(0).ready());
      assertThat(client.query("docs", "n >= 290", 1_000, Duration.ofSeconds(5)).rows()).hasSize(10);
      client.dropTable("docs");
      assertThatThrownBy(() -> client.describeTable("docs.n", false)).hasMessageContaining("docs.n");
    }
  }

  /** The consistency checker: each of the table's {@code indexes} global indexes holds exactly the entries its rows call for. */
  static void assertExact(ShardwiseClient client, String table, int indexes) {
    IndexCheck.Report report = client.checkIndexes(table);
    List<IndexCheck> global = report.checks().stream().filter(c -> c.node().equals("global")).toList();
    assertThat(global).hasSize(indexes);
    assertThat(global).allSatisfy(c -> assertThat(c.exact()).as("%s", c).isTrue());
  }
}
