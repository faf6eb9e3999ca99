package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.shardwise.client.KeyValue;
import io.shardwise.client.QueryResult;
import io.shardwise.client.Routing;
import io.shardwise.client.Scan;
import io.shardwise.client.ScanPage;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.doc.Where;
import io.shardwise.core.key.Key;
import io.shardwise.proto.Documents;
import io.shardwise.server.rpc.Limits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Queries of JSON documents without an index, on a real cluster: every shard read at once and
 * filtered at its owner; the answers checked against a brute-force scan of the whole table with
 * the same condition; a limit that truncates says so; a shard that cannot answer is named and the
 * answer marked incomplete, never silently partial; bad queries get one clear error.
 */
@Tag("integration")
class QueryTest {

  @TempDir Path dir;

  private static final String[] COLORS = {"red", "blue", "green", "silver"};
  private static final String[] MAKES = {"ford", "fiat", "volvo"};

  @Test
  void queriesAnswerWhatABruteForceScanFinds() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("cars", TableSpec.builder("hashrange").shards(6).replicas(1).format(ValueFormat.JSON).build());
      Random random = new Random(42);
      List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
      for (int i = 0; i < 600; i++) {
        String doc = "{\"color\": \"" + COLORS[random.nextInt(COLORS.length)] + "\", \"make\": \"" + MAKES[random.nextInt(MAKES.length)]
            + "\", \"year\": " + (2010 + random.nextInt(15)) + (random.nextInt(5) == 0 ? "" : ", \"owner\": {\"id\": " + random.nextInt(20) + "}")
            + "}";
        batch.add(new AbstractMap.SimpleEntry<>(Key.of("car-" + i), doc.getBytes(StandardCharsets.UTF_8)));
        if (batch.size() == 100) {
          client.batchPut("cars", batch);
          batch.clear();
        }
      }
      List<KeyValue> all = scanAll(client, "cars");
      assertThat(all).hasSize(600);

      for (String where : List.of("color = 'red'", "color = 'red' AND make = 'ford'", "year >= 2020 AND (owner.id = 7 OR owner.id = 9)",
          "owner.id != 3 AND year < 2012", "make = 'tesla'", "color = 'blue' OR color = 'green' OR year = 2024")) {
        Where w = Where.parse(where);
        TreeSet<String> expected = new TreeSet<>();
        all.stream().filter(kv -> Documents.matches(kv.value(), w)).forEach(kv -> expected.add(kv.key().toString()));
        QueryResult r = client.query("cars", where, 10_000, Duration.ofSeconds(10));
        assertThat(r.rows()).as(where).extracting(kv -> kv.key().toString()).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(r.complete()).isTrue();
        assertThat(r.truncated()).isFalse();
        assertThat(r.plan().access()).isEqualTo("scan");
        assertThat(r.plan().shards()).isEqualTo(6);
        assertThat(r.plan().rowsExamined()).as("every row of every shard read").isEqualTo(600);
        assertThat(r.plan().rowsMatched()).isEqualTo(expected.size());
        assertThat(r.plan().bytesShipped()).as("only matching rows shipped")
            .isEqualTo(r.rows().stream().mapToLong(kv -> kv.key().partitionKey().length + kv.value().length).sum());
      }

      QueryResult some = client.query("cars", "color = 'red'", 5, Duration.ofSeconds(10));
      assertThat(some.rows()).hasSize(5);
      assertThat(some.truncated()).as("more match than asked").isTrue();

      // Pages of 7 give every matching row once, even with shards split between the pages.
      Where red = Where.parse("color = 'red'");
      List<String> expectedRed = all.stream().filter(kv -> Documents.matches(kv.value(), red)).map(kv -> kv.key().toString()).toList();
      List<String> paged = new ArrayList<>();
      byte[] token = new byte[0];
      int pages = 0;
      do {
        QueryResult page = client.query("cars", "color = 'red'", 7, Duration.ofSeconds(10), token);
        assertThat(page.complete()).isTrue();
        page.rows().forEach(kv -> paged.add(kv.key().toString()));
        token = page.nextPageToken();
        if (++pages == 3) {
          var t = client.describeTable("cars", false);
          for (var shard : t.shards()) {
            client.splitShard("cars", shard.number());
          }
        }
      } while (token.length > 0);
      assertThat(client.describeTable("cars", false).shards()).hasSize(12);
      assertThat(paged).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(expectedRed);
      assertThat(pages).isEqualTo((expectedRed.size() + 6) / 7);
      assertThatThrownBy(() -> client.query("cars", "color = 'red'", 7, Duration.ofSeconds(1), new byte[] {9, 9}))
          .hasMessageContaining("page token of another kind");

      // Shards split while queries run: a query whose shard went under it runs again on the newer map, whole.
      java.util.concurrent.atomic.AtomicBoolean splitting = new java.util.concurrent.atomic.AtomicBoolean(true);
      Thread splitter = new Thread(() -> {
        try {
          for (int i = 0; i < 6; i++) {
            var t = client.describeTable("cars", false);
            client.splitShard("cars", t.shards().get(i * 2).number());
          }
        } finally {
          splitting.set(false);
        }
      }, "splitter");
      ShardwiseClient viaNode = cluster.client(Routing.NODE);
      splitter.start();
      int queries = 0;
      while (splitting.get() || queries < 3) {
        QueryResult r = viaNode.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(10));
        assertThat(r.complete()).as("query %d: %s", queries, r.plan().missingShards()).isTrue();
        assertThat(r.rows()).extracting(kv -> kv.key().toString()).containsExactlyInAnyOrderElementsOf(expectedRed);
        queries++;
      }
      splitter.join();
      assertThat(client.describeTable("cars", false).shards()).hasSize(18);

      // Bad queries: one clear error each.
      assertThatThrownBy(() -> client.query("cars", "color = red", 10, Duration.ofSeconds(1)))
          .isInstanceOfSatisfying(ShardwiseException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT))
          .hasMessageContaining("bad condition at character 9");
      assertThatThrownBy(() -> client.query("nope", "a = 1", 10, Duration.ofSeconds(1)))
          .isInstanceOfSatisfying(ShardwiseException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.NOT_FOUND));
      client.createTable("raw", TableSpec.builder("hashrange").shards(2).replicas(1).build());
      assertThatThrownBy(() -> client.query("raw", "a = 1", 10, Duration.ofSeconds(1))).hasMessageContaining("holds bytes, not JSON documents");
      assertThatThrownBy(() -> client.query("cars", "a = 1", 10_001, Duration.ofSeconds(1))).hasMessageContaining("at most 10000 rows");

      // A node gone: its shards are named, the answer is marked incomplete, the rest is there.
      int allRed = client.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(5)).rows().size();
      ShardwiseNode gone = cluster.nodes.get(2);
      gone.close();
      ShardwiseClient other = cluster.client(Routing.NODE);
      QueryResult partial = other.query("cars", "color = 'red'", 10_000, Duration.ofSeconds(5));
      assertThat(partial.complete()).isFalse();
      assertThat(partial.plan().missingShards()).isNotEmpty().allMatch(s -> s.startsWith("cars/"));
      assertThat(partial.rows()).isNotEmpty().hasSizeLessThan(allRed);
    }
  }

  /** Every row of the table, by a full scan. */
  static List<KeyValue> scanAll(ShardwiseClient client, String table) {
    List<KeyValue> out = new ArrayList<>();
    Scan scan = Scan.all(table).limit(1000);
    ScanPage page;
    do {
      page = client.scan(scan);
      out.addAll(page.rows());
      scan = page.hasMore() ? scan.after(page) : scan;
    } while (page.hasMore());
    return out;
  }
}
