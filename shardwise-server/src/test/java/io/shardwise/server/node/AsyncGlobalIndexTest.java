package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.GlobalIndexMode;
import io.shardwise.client.IndexInfo;
import io.shardwise.client.KeyValue;
import io.shardwise.client.QueryResult;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.key.Key;
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
 * Global secondary indexes kept <b>asynchronously</b>, on a real cluster: a write commits in its
 * row's shard alone with a pending marker, and the shard's leader moves the row's entries after it.
 * The consistency checker ({@link GlobalIndexTest#assertExact}: every entry a row calls for, none
 * more, every reverse entry right) runs once the index reports no pending row (lag zero); a
 * consistent query must see every write acknowledged before it began.
 */
@Tag("integration")
class AsyncGlobalIndexTest {

  @TempDir Path dir;

  @Test
  void anAsyncIndexIsBuiltOnlineCatchesUpWithTheWritesAndAConsistentQuerySeesEveryAcknowledgedWrite() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("cars", TableSpec.builder("hashrange").shards(6).replicas(2).format(ValueFormat.JSON).build());
      Random random = new Random(42);
      for (int i = 0; i < 1_000; i++) {
        client.put("cars", Key.of("car-" + random.nextInt(800)), LocalIndexTest.doc(random));
      }
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
      }, "async-index-test-writer");
      writer.start();
      try {
        List<IndexInfo> created = client.createGlobalIndex("cars", "color", "", 0);
        assertThat(created).singleElement().satisfies(i -> {
          assertThat(i.mode()).isEqualTo("async");
          assertThat(i.indexTable()).isEqualTo("cars.color");
        });
        client.createGlobalIndex("cars", "year", GlobalIndexMode.ASYNC, "range", 0);
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null || client.indexes("cars").stream().allMatch(IndexInfo::ready));
        long during = writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || writes.get() > during + 200); // and go on after
      } finally {
        writing.set(false);
        writer.join();
      }
      assertThat(failed.get()).as("every write succeeded").isNull();
      awaitCaughtUp(client, "cars");
      GlobalIndexTest.assertExact(client, "cars", 2);
      LocalIndexTest.assertQueriesMatchAScan(client, "cars");

      // Read your writes through the index: each write acknowledged, then a consistent query of its new value finds it.
      for (int i = 0; i < 40; i++) {
        Key key = Key.of("car-" + random.nextInt(800));
        String color = "fresh-" + i;
        long version = client.put("cars", key, ("{\"color\": \"" + color + "\", \"year\": " + (3000 + i) + "}").getBytes(StandardCharsets.UTF_8));
        QueryResult r = client.query("cars", null, "color = '" + color + "'", 10, Duration.ofSeconds(10), new byte[0], true);
        assertThat(r.rows()).as("write %d seen by a consistent query", i).singleElement().satisfies(kv -> {
          assertThat(kv.key()).isEqualTo(key);
          assertThat(kv.version()).isEqualTo(version);
        });
        assertThat(r.plan().stalePossible()).isFalse();
        QueryResult byYear = client.query("cars", null, "year >= " + (3000 + i), 10, Duration.ofSeconds(10), new byte[0], true);
        assertThat(byYear.rows()).extracting(KeyValue::key).contains(key);
      }
      QueryResult loose = client.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(10));
      assertThat(loose.plan().index()).isEqualTo("color (global index): color = 'red'");
      assertThat(loose.plan().stalePossible()).as("an async index without consistent may miss the newest writes").isTrue();
      awaitCaughtUp(client, "cars");
      GlobalIndexTest.assertExact(client, "cars", 2);
    }
  }

  /**
   * Random puts, deletes, batches, transactions and conditional puts, with splits, merges and moves
   * of the data's shards and of both indexes' tables (markers move, split and merge with their
   * rows; a moved shard's new leader drains them): once caught up, the indexes are exact.
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2})
  void entriesFollowTheirRowsThroughWritesSplitsMergesAndMoves(long seed) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("fleet", TableSpec.builder("hashrange").shards(3).replicas(1).format(ValueFormat.JSON).build());
      client.createGlobalIndex("fleet", "color", GlobalIndexMode.ASYNC, "", 3);
      client.createGlobalIndex("fleet", "year", GlobalIndexMode.ASYNC, "range", 0);
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("fleet").stream().allMatch(IndexInfo::ready));
      Random random = new Random(seed);
      RandomReshapes reshapes = new RandomReshapes(cluster, client, random, "a-" + seed);
      for (int step = 0; step < 500; step++) {
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
        } else if (op < 92) {
          reshapes.split(table);
        } else if (op < 95) {
          reshapes.merge(table);
        } else {
          reshapes.move(table);
        }
        if (step % 125 == 124) {
          awaitCaughtUp(client, "fleet");
          GlobalIndexTest.assertExact(client, "fleet", 2);
        }
      }
      awaitCaughtUp(client, "fleet");
      GlobalIndexTest.assertExact(client, "fleet", 2);
      LocalIndexTest.assertQueriesMatchAScan(client, "fleet");
    }
  }

  @Test
  void badRequestsAreRefusedWithNothingWritten() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("docs", TableSpec.builder("hashrange").shards(2).format(ValueFormat.JSON).build());
      client.createGlobalIndex("docs", "color", "", 0);
      client.createGlobalIndex("docs", "make", GlobalIndexMode.SYNC, "", 0); // beside it, one kept in sync: writes are transactions
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("docs").stream().allMatch(IndexInfo::ready));
      for (int i = 0; i < 20; i++) {
        client.put("docs", Key.of("d-" + i), ("{\"color\": \"c" + (i % 3) + "\", \"make\": \"m" + (i % 4) + "\"}").getBytes(StandardCharsets.UTF_8));
      }
      assertThat(client.query("docs", "make = 'm1'", 100, Duration.ofSeconds(10)).plan().stalePossible()).as("a sync index").isFalse();
      assertThat(client.query("docs", null, "color = 'c1'", 100, Duration.ofSeconds(10), new byte[0], true).rows()).hasSize(7);
      // A value too long to index: refused before anything is written (its entry could never be written after).
      String longColor = "x".repeat(2_000);
      assertThatThrownBy(() -> client.put("docs", Key.of("a"), ("{\"color\": \"" + longColor + "\"}").getBytes(StandardCharsets.UTF_8)))
          .hasMessageContaining("a globally indexed value is at most 1024 bytes");
      assertThatThrownBy(() -> client.batchPut("docs", List.of(Map.entry(Key.of("b"), "{\"color\": \"red\"}".getBytes(StandardCharsets.UTF_8)),
          Map.entry(Key.of("c"), ("{\"color\": \"" + longColor + "\"}").getBytes(StandardCharsets.UTF_8)))))
          .hasMessageContaining("field color is 2003 bytes encoded");
      assertThat(client.get("docs", Key.of("a"))).isEmpty();
      assertThat(client.get("docs", Key.of("c"))).isEmpty();
      // The index's table is the index's alone.
      assertThatThrownBy(() -> client.put("docs.color", Key.of("x"), new byte[0])).hasMessageContaining("written by the index only");
      awaitCaughtUp(client, "docs");
      GlobalIndexTest.assertExact(client, "docs", 2);
    }
  }

  /**
   * A covering index (both modes): a query needing only the covered fields — its answer's and its
   * condition's — is answered from the entries, no row fetched; a change of a covered field alone
   * reaches the entries; a query needing another field fetches the rows; the checker compares each
   * entry's fields with its row's.
   */
  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.EnumSource(GlobalIndexMode.class)
  void aCoveringIndexAnswersFromItsEntriesAndFollowsChangesOfCoveredFieldsAlone(GlobalIndexMode mode) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("items", TableSpec.builder("hashrange").shards(3).format(ValueFormat.JSON).build());
      for (int i = 0; i < 60; i++) {
        client.put("items", Key.of("item-" + i), item(i % 3, i));
      }
      List<IndexInfo> created = client.createGlobalIndex("items", "color", mode, "", 2, List.of("size", "owner.id"));
      assertThat(created.get(0).covering()).containsExactly("size", "owner.id");
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("items").get(0).ready());
      for (int i = 60; i < 90; i++) { // written once the index exists: by the writes, not the backfill
        client.put("items", Key.of("item-" + i), item(i % 3, i));
      }
      QueryResult r = client.query("items", null, "color = 'c1'", 100, Duration.ofSeconds(10), new byte[0], true, List.of("size", "owner.id"));
      assertThat(r.plan().covered()).as("every field asked is in the entries").isTrue();
      assertThat(r.plan().rowShards()).as("no row fetched").isZero();
      assertThat(r.rows()).hasSize(30).allSatisfy(kv -> {
        int n = Integer.parseInt(kv.key().toString().replaceAll("\\D", ""));
        assertThat(kv.valueAsString()).isEqualTo("{\"size\":" + n + ",\"owner\":{\"id\":\"o" + (n % 5) + "\"}}");
        assertThat(kv.version()).as("an entry holds fields, not versions").isZero();
      });
      QueryResult big = client.query("items", null, "color = 'c1' AND size >= 70", 100, Duration.ofSeconds(10), new byte[0], true,
          List.of("size"));
      assertThat(big.plan().covered()).isTrue();
      assertThat(big.rows()).extracting(KeyValue::valueAsString).containsExactlyInAnyOrder("{\"size\":70}", "{\"size\":73}",
          "{\"size\":76}", "{\"size\":79}", "{\"size\":82}", "{\"size\":85}", "{\"size\":88}");
      QueryResult pad = client.query("items", null, "color = 'c1'", 100, Duration.ofSeconds(10), new byte[0], true, List.of("pad"));
      assertThat(pad.plan().covered()).as("pad is not covered: the rows are fetched").isFalse();
      assertThat(pad.plan().rowShards()).isPositive();
      assertThat(pad.rows()).hasSize(30).allSatisfy(kv -> assertThat(kv.valueAsString()).isEqualTo("{\"pad\":\"xxxx\"}"));

      // A covered field changed alone (the indexed value stays): the entry follows.
      client.put("items", Key.of("item-1"), item(1, 1_000));
      QueryResult after = client.query("items", null, "color = 'c1' AND size >= 1000", 100, Duration.ofSeconds(10), new byte[0], true,
          List.of("size"));
      assertThat(after.rows()).extracting(kv -> kv.key().toString()).containsExactly(Key.of("item-1").toString());
      Random random = new Random(3);
      for (int i = 0; i < 200; i++) {
        int n = random.nextInt(100);
        if (random.nextInt(5) == 0) {
          client.delete("items", Key.of("item-" + n));
        } else {
          client.put("items", Key.of("item-" + n), item(random.nextInt(3), random.nextInt(50)));
        }
      }
      awaitCaughtUp(client, "items");
      GlobalIndexTest.assertExact(client, "items", 1);

      assertThatThrownBy(() -> client.createGlobalIndex("items", "size", mode, "", 0, List.of("color", "color")))
          .hasMessageContaining("named twice");
      assertThatThrownBy(() -> client.createGlobalIndex("items", "size", mode, "", 0, List.of("size")))
          .hasMessageContaining("named twice");
    }
  }

  private static byte[] item(int color, int size) {
    return ("{\"color\": \"c" + color + "\", \"size\": " + size + ", \"owner\": {\"id\": \"o" + (size % 5) + "\", \"name\": \"n\"},"
        + " \"pad\": \"xxxx\"}").getBytes(StandardCharsets.UTF_8);
  }

  /** Waits until every async index of {@code table} reports no pending row (lag zero). */
  static void awaitCaughtUp(ShardwiseClient client, String table) {
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> client.indexes(table).stream()
        .filter(i -> "async".equals(i.mode())).allMatch(i -> i.pendingRows() == 0));
  }
}
