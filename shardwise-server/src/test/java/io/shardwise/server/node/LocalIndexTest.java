package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.shardwise.client.IndexInfo;
import io.shardwise.client.KeyValue;
import io.shardwise.client.QueryResult;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableDescription;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.doc.Where;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.proto.Documents;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Local secondary indexes on a real cluster. The <b>consistency checker</b> ({@link #assertExact}):
 * on every node, every entry of every index is exactly what the node's rows call for — none
 * missing, none left over — read by {@link ShardStore#checkIndexes}; and every query through an
 * index answers what a brute-force scan of the whole table with the same condition finds.
 */
@Tag("integration")
class LocalIndexTest {

  @TempDir Path dir;

  private static final String[] COLORS = {"red", "blue", "green", "silver", "zwart\u0000", "\uD83D\uDE97"};
  private static final String[] MAKES = {"ford", "fiat", "volvo"};

  static byte[] doc(Random random) {
    StringBuilder b = new StringBuilder("{");
    if (random.nextInt(10) > 0) {
      b.append("\"color\": \"").append(COLORS[random.nextInt(COLORS.length)].replace("\u0000", "\\u0000")).append("\", ");
    }
    b.append("\"make\": \"").append(MAKES[random.nextInt(MAKES.length)]).append("\", ");
    if (random.nextBoolean()) {
      b.append("\"sold\": ").append(random.nextBoolean()).append(", ");
    }
    switch (random.nextInt(6)) {
      case 0 -> b.append("\"year\": \"unknown\"");
      case 1 -> b.append("\"year\": ").append(2010 + random.nextInt(15)).append(".5");
      case 2 -> b.append("\"year\": null");
      default -> b.append("\"year\": ").append(2010 + random.nextInt(15));
    }
    if (random.nextInt(4) > 0) {
      b.append(", \"owner\": {\"id\": ").append(random.nextInt(20)).append("}");
    }
    return b.append("}").toString().getBytes(StandardCharsets.UTF_8);
  }

  private static final List<String> QUERIES = List.of("color = 'red'", "color = 'red' AND make = 'ford'",
      "year >= 2020 AND year < 2023", "year > 2015.5 AND (owner.id = 7 OR owner.id = 9)", "color = 'blue' OR year = 2024",
      "owner.id <= 3", "year = null", "color > 'silver'", "color = 'zwart\u0000'", "color = '\uD83D\uDE97'", "year = 'unknown'",
      "color != 'red' AND year < 2012", "make = 'tesla'", "sold = true", "sold <= true AND color = 'blue'", "sold > false");

  @Test
  void anIndexIsBuiltOnlineWhileWritesGoOnAndQueriesReadThroughItOnceReady() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("cars", TableSpec.builder("hashrange").shards(6).replicas(2).format(ValueFormat.JSON).build());
      Random random = new Random(42);
      for (int i = 0; i < 1_500; i++) {
        client.put("cars", Key.of("car-" + random.nextInt(1_200)), doc(random));
      }
      // Writes go on while the indexes are built: every row written before, during and after is indexed exactly.
      AtomicBoolean writing = new AtomicBoolean(true);
      AtomicLong writes = new AtomicLong();
      Thread writer = new Thread(() -> {
        Random r = new Random(7);
        while (writing.get()) {
          Key key = Key.of("car-" + r.nextInt(1_200));
          if (r.nextInt(5) == 0) {
            client.delete("cars", key);
          } else {
            client.put("cars", key, doc(r));
          }
          writes.incrementAndGet();
        }
      }, "index-test-writer");
      writer.start();
      try {
        List<IndexInfo> created = client.createIndex("cars", "color");
        assertThat(created).singleElement().satisfies(i -> assertThat(i.state()).isEqualTo("building"));
        client.createIndex("cars", "year");
        client.createIndex("cars", "owner.id");
        client.createIndex("cars", "sold");
        await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("cars").stream().allMatch(IndexInfo::ready));
        long during = writes.get();
        await().atMost(Duration.ofSeconds(10)).until(() -> writes.get() > during + 200); // and go on after
      } finally {
        writing.set(false);
        writer.join();
      }
      assertThat(client.indexes("cars")).allSatisfy(i -> {
        assertThat(i.replicasBuilt()).isEqualTo(i.replicas()).isEqualTo(12);
        assertThat(i.buildingOn()).isEmpty();
      });
      assertExact(cluster, "cars");
      assertQueriesMatchAScan(client, "cars");
      QueryResult red = client.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(10));
      assertThat(red.plan().access()).isEqualTo("index");
      assertThat(red.plan().index()).isEqualTo("color (local index): color = 'red'");
      // Only red entries read: a shard's rows of a value lie together; an entry before them and one after tell where they are.
      assertThat(red.plan().indexEntries()).as("only red entries read").isBetween((long) red.rows().size(), red.rows().size() + 2 * 6L);
      assertThat(red.plan().postingLists()).singleElement().satisfies(l -> {
        assertThat(l.probe()).isEqualTo("color (local index): color = 'red'");
        assertThat(l.entries()).isEqualTo(red.plan().indexEntries());
      });
      QueryResult either = client.query("cars", "color = 'blue' OR year = 2024", 10_000, Duration.ofSeconds(10));
      assertThat(either.plan().postingLists()).extracting(QueryResult.PostingList::probe)
          .containsExactly("color (local index): color = 'blue'", "year (local index): year = 2024");
      assertThat(either.plan().postingLists().stream().mapToLong(QueryResult.PostingList::entries).sum()).isEqualTo(either.plan().indexEntries());
      QueryResult notRed = client.query("cars", "color != 'red'", 10_000, Duration.ofSeconds(10));
      assertThat(notRed.plan().access()).as("!= holds for missing fields: no index serves it").isEqualTo("scan");
    }
  }

  /**
   * Random writes, deletes, batches, transactions, splits, merges and moves (a move's destination
   * indexes the rows it ingests and the writes it copies; its source's copy leaves with its entries):
   * every index stays exact on every node.
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2})
  void entriesFollowTheirRowsThroughEveryKindOfWriteSplitMergeAndMove(long seed) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("fleet", TableSpec.builder("hashrange").shards(3).replicas(1).format(ValueFormat.JSON).build());
      client.createIndex("fleet", "color");
      client.createIndex("fleet", "year");
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("fleet").stream().allMatch(IndexInfo::ready));
      Random random = new Random(seed);
      RandomReshapes reshapes = new RandomReshapes(cluster, client, random, "m-" + seed);
      for (int step = 0; step < 1_200; step++) {
        Key key = Key.of("car-" + random.nextInt(300));
        int op = random.nextInt(100);
        if (op < 55) {
          client.put("fleet", key, doc(random));
        } else if (op < 70) {
          client.delete("fleet", key);
        } else if (op < 80) {
          List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
          for (int i = 0; i < 5; i++) {
            batch.add(Map.entry(Key.of("car-" + (random.nextInt(60) * 5 + i)), doc(random)));
          }
          client.batchPut("fleet", batch);
        } else if (op < 95) {
          int k = random.nextInt(100);
          client.transact(List.of(TxnItem.put("fleet", Key.of("car-" + k), doc(random)), TxnItem.put("fleet", Key.of("car-" + (k + 100)),
              doc(random)), TxnItem.delete("fleet", Key.of("car-" + (k + 200)))));
        } else if (op < 97) {
          reshapes.split("fleet");
        } else if (op < 98) {
          reshapes.merge("fleet");
        } else {
          reshapes.move("fleet");
        }
      }
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertExact(cluster, "fleet")); // followers apply their logs
      assertQueriesMatchAScan(client, "fleet");
    }
  }

  /** A query that names the partition key asks the one shard that holds it, without and with an index, pages included. */
  @Test
  void aQueryOfOnePartitionKeyAsksOneShard() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.ROUTER);
      client.createTable("orders", TableSpec.builder("hashrange").shards(6).replicas(1).format(ValueFormat.JSON).build());
      Random random = new Random(5);
      List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
      for (int i = 0; i < 900; i++) {
        String status = random.nextInt(3) == 0 ? "open" : "closed";
        batch.add(Map.entry(Key.of("customer-" + (i % 30), String.format("order-%04d", i)),
            ("{\"status\": \"" + status + "\", \"total\": " + random.nextInt(500) + "}").getBytes(StandardCharsets.UTF_8)));
        if (batch.size() == 100) {
          client.batchPut("orders", batch);
          batch.clear();
        }
      }
      for (boolean indexed : new boolean[] {false, true}) {
        if (indexed) {
          client.createIndex("orders", "status");
          await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("orders").stream().allMatch(IndexInfo::ready));
        }
        for (int c : new int[] {0, 7, 29}) {
          byte[] pk = ("customer-" + c).getBytes(StandardCharsets.UTF_8);
          TreeSet<String> expected = new TreeSet<>();
          QueryTest.scanAll(client, "orders").stream().filter(kv -> java.util.Arrays.equals(kv.key().partitionKey(), pk))
              .filter(kv -> Documents.matches(kv.value(), Where.parse("status = 'open'"))).forEach(kv -> expected.add(kv.key().toString()));
          assertThat(expected).isNotEmpty();
          QueryResult r = client.query("orders", pk, "status = 'open'", 10_000, Duration.ofSeconds(5), new byte[0]);
          assertThat(r.complete()).as("%s", r.plan()).isTrue();
          assertThat(r.plan().shards()).isEqualTo(1);
          assertThat(r.plan().access()).isEqualTo(indexed ? "index" : "scan");
          assertThat(r.plan().rowsExamined()).as("only the partition's rows or entries read")
              .isLessThanOrEqualTo(indexed ? expected.size() + 2 : 30);
          assertThat(r.rows()).as("%s", r.plan()).extracting(kv -> kv.key().toString()).containsExactlyElementsOf(expected);
          List<String> paged = new ArrayList<>();
          byte[] token = new byte[0];
          do {
            QueryResult page = client.query("orders", pk, "status = 'open'", 3, Duration.ofSeconds(5), token);
            page.rows().forEach(kv -> paged.add(kv.key().toString()));
            token = page.truncated() ? page.nextPageToken() : null;
          } while (token != null);
          assertThat(paged).containsExactlyElementsOf(expected);
        }
      }
    }
  }

  @Test
  void badIndexRequestsGetOneClearErrorAndADropRemovesTheEntries() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("raw", TableSpec.builder("hashrange").shards(2).replicas(1).build());
      client.createTable("docs", TableSpec.builder("hashrange").shards(2).replicas(1).format(ValueFormat.JSON).build());
      assertThatThrownBy(() -> client.createIndex("raw", "color")).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("only a table created with --format json has indexes");
      assertThatThrownBy(() -> client.createIndex("docs", "1color")).hasMessageContaining("an indexed field is names joined by dots");
      assertThatThrownBy(() -> client.createIndex("docs", "a..b")).hasMessageContaining("an indexed field is names joined by dots");
      assertThatThrownBy(() -> client.createIndex("nope", "color")).hasMessageContaining("nope");
      for (int i = 0; i < 200; i++) {
        client.put("docs", Key.of("d" + i), ("{\"color\": \"c" + (i % 7) + "\"}").getBytes(StandardCharsets.UTF_8));
      }
      client.createIndex("docs", "color");
      assertThatThrownBy(() -> client.createIndex("docs", "color")).satisfies(e ->
          assertThat(((ShardwiseException) e).code()).isEqualTo(Status.Code.ALREADY_EXISTS));
      await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("docs").get(0).ready());
      assertThat(client.indexes("docs").get(0).rowsIndexed()).isEqualTo(200);
      assertThat(client.describeTable("docs", false).indexes()).containsExactly(new TableDescription.Index("color", "local", "ready"));
      assertExact(cluster, "docs");
      assertThat(client.query("docs", "color = 'c3'", 1_000, Duration.ofSeconds(5)).rows()).hasSize(29);

      long tableId = cluster.nodes.get(0).map().table("docs").orElseThrow().id();
      client.dropIndex("docs", "color");
      assertThat(client.indexes("docs")).isEmpty();
      QueryResult after = client.query("docs", "color = 'c3'", 1_000, Duration.ofSeconds(5));
      assertThat(after.plan().access()).isEqualTo("scan");
      assertThat(after.rows()).hasSize(29);
      for (ShardwiseNode n : cluster.nodes) {
        await().atMost(Duration.ofSeconds(10)).until(() -> n.store().checkIndexes(tableId).isEmpty());
      }
      assertThatThrownBy(() -> client.dropIndex("docs", "color")).satisfies(e ->
          assertThat(((ShardwiseException) e).code()).isEqualTo(Status.Code.NOT_FOUND));
    }
  }

  /** The consistency checker: on every node, each index's entries are exactly its rows'. */
  static void assertExact(TestCluster cluster, String table) {
    long tableId = cluster.nodes.get(0).map().table(table).orElseThrow().id();
    for (ShardwiseNode n : cluster.nodes) {
      Map<Long, ShardStore.IndexCheck> checks = n.store().checkIndexes(tableId);
      assertThat(checks).as("node %s keeps the indexes", n.id()).isNotEmpty();
      checks.forEach((index, check) -> assertThat(check.exact()).as("node %s, index %d: %s", n.id(), index, check).isTrue());
    }
  }

  static void assertQueriesMatchAScan(ShardwiseClient client, String table) {
    List<KeyValue> all = QueryTest.scanAll(client, table);
    for (String where : QUERIES) {
      Where w = Where.parse(where);
      TreeSet<String> expected = new TreeSet<>();
      all.stream().filter(kv -> Documents.matches(kv.value(), w)).forEach(kv -> expected.add(kv.key().toString()));
      QueryResult r = client.query(table, where, 10_000, Duration.ofSeconds(10));
      assertThat(r.complete()).as(where + ": " + r.plan().missingShards()).isTrue();
      assertThat(r.rows()).as(where + " (" + r.plan().access() + ")").extracting(kv -> kv.key().toString())
          .containsExactlyInAnyOrderElementsOf(expected);
      // Paged by 7: the pages together are the same rows, each once.
      List<String> paged = new ArrayList<>();
      byte[] token = new byte[0];
      do {
        QueryResult page = client.query(table, where, 7, Duration.ofSeconds(10), token);
        page.rows().forEach(kv -> paged.add(kv.key().toString()));
        token = page.truncated() ? page.nextPageToken() : null;
      } while (token != null);
      assertThat(paged).as(where + ", paged").containsExactlyInAnyOrderElementsOf(expected);
    }
  }
}
