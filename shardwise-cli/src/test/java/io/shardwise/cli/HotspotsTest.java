package io.shardwise.cli;

import io.shardwise.server.hot.HotspotReport;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code shardwise hotspots} against a real cluster under a load with one celebrity key. */
class HotspotsTest {

  @TempDir Path dir;

  @Test
  void aCelebrityKeyTakingHalfTheReadsIsNamedAsAReadHotKeyOfTheBusiestShard() throws Exception {
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 2);
        ShardwiseClient client = ShardwiseClient.builder().seeds(cluster.nodeAddresses()).build()) {
      client.createTable("users", TableSpec.builder("hashrange").shards(6).build());
      byte[] value = "v".getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < 200; i++) {
        client.put("users", Key.of("user-" + i), value);
      }
      client.put("users", Key.of("celebrity"), value);
      AtomicBoolean running = new AtomicBoolean(true);
      List<Thread> load = new java.util.ArrayList<>();
      for (int t = 0; t < 4; t++) {
        SplittableRandom random = new SplittableRandom(t);
        Thread reader = new Thread(() -> {
          while (running.get()) {
            client.get("users", random.nextBoolean() ? Key.of("celebrity") : Key.of("user-" + random.nextInt(200)));
          }
        }, "load-" + t);
        reader.start();
        load.add(reader);
      }
      JsonNode report;
      String text;
      try {
        // A shard's per-second history holds completed seconds only: a report taken within the table's
        // first second has none yet, so the report is asked again until it has one.
        JsonNode[] asked = new JsonNode[1];
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> {
          asked[0] = new ObjectMapper().readTree(run("hotspots", "--zk", cluster.zk(), "--interval", "1500ms", "-o", "json"));
          return asked[0].get("shards").get(0).get("shareOfTableBySecond").size() > 0;
        });
        report = asked[0];
        text = run("hotspots", "--zk", cluster.zk(), "--interval", "1s", "--shards", "2", "--keys", "2");
      } finally {
        running.set(false);
        for (Thread t : load) {
          t.join();
        }
      }
      JsonNode busiest = report.get("shards").get(0);
      assertThat(busiest.get("timesTableAverage").asDouble()).as(report.toPrettyString()).isGreaterThan(HotspotReport.HOT);
      JsonNode top = busiest.get("keys").get(0);
      assertThat(top.get("key").asText()).isEqualTo("celebrity");
      assertThat(busiest.get("shareOfTableBySecond").size()).as("the nodes' per-second history since they started").isPositive();
      assertThat(busiest.get("trend").asText()).isNotEmpty();
      assertThat(top.get("guaranteedShare").asDouble()).isGreaterThan(HotspotReport.ONE_KEY);
      assertThat(top.get("writeShare").asDouble()).as("its one put may have been sampled").isLessThan(0.05);
      assertThat(report.get("findings").get(0).asText()).contains(busiest.get("shard").asText()).contains("'celebrity'").contains("read-hot");
      assertThat(text.lines().filter(l -> l.contains("/")).count()).as(text).isGreaterThanOrEqualTo(3); // 2 shards and a finding
      assertThat(text).contains("HOTTEST KEYS").contains("celebrity").contains("read-hot key");
    } finally {
      Session.current().close();
    }
  }

  @Test
  void monotonicInsertsOnARangeTableAreNamedWithTheirShardAndHighestKey() throws Exception {
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 2);
        ShardwiseClient client = ShardwiseClient.builder().seeds(cluster.nodeAddresses()).build()) {
      client.createTable("events", TableSpec.builder("range").splitPoints("a", "b", "c").build());
      client.createTable("hashed", TableSpec.builder("hashrange").shards(4).build());
      AtomicBoolean running = new AtomicBoolean(true);
      java.util.concurrent.atomic.AtomicLong inserted = new java.util.concurrent.atomic.AtomicLong();
      byte[] value = "v".getBytes(StandardCharsets.UTF_8);
      Thread writer = new Thread(() -> {
        for (long i = 0; running.get(); i++) {
          Key key = Key.of(String.format("event-%010d", i)); // a timestamp-like key: every insert above the last
          client.put("events", key, value);
          client.put("hashed", key, value); // the same keys hashed: spread, not a finding
          inserted.incrementAndGet();
        }
      }, "inserts");
      writer.start();
      JsonNode report;
      String watched;
      try {
        // Enough inserts that the 1-in-16 sample holds well over MONOTONIC_MIN_WRITES of them, however slow the machine.
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(60)).until(() -> inserted.get() >= 40 * HotspotReport.MONOTONIC_MIN_WRITES);
        // A shard's per-second history holds completed seconds only: a report taken within the table's
        // first second has none yet, so the report is asked again until it has one.
        JsonNode[] asked = new JsonNode[1];
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> {
          asked[0] = new ObjectMapper().readTree(run("hotspots", "--zk", cluster.zk(), "--interval", "1500ms", "-o", "json"));
          return asked[0].get("shards").get(0).get("shareOfTableBySecond").size() > 0;
        });
        report = asked[0];
        watched = run("hotspots", "--zk", cluster.zk(), "--interval", "200ms", "--watch", "--count", "2");
      } finally {
        running.set(false);
        writer.join();
      }
      assertThat(watched.lines().filter(l -> l.startsWith("SHARD")).count()).as(watched).isEqualTo(2);
      List<String> findings = new java.util.ArrayList<>();
      report.get("findings").forEach(f -> findings.add(f.asText()));
      assertThat(findings).as(report.toPrettyString()).anySatisfy(f -> assertThat(f).startsWith("events/3 takes")
          .contains("monotonic key").contains("now 'event-"));
      assertThat(findings).noneSatisfy(f -> assertThat(f).startsWith("hashed/"));
    } finally {
      Session.current().close();
    }
  }

  @Test
  void aJumpBetweenTwoWindowsIsSuddenASteadyRiseIsGradualAFlatLineIsSteady() {
    double[] sudden = new double[120];
    double[] gradual = new double[120];
    double[] flat = new double[120];
    for (int i = 0; i < 120; i++) {
      sudden[i] = i < 80 ? 0.15 : 0.6; // one key went viral 40 s ago
      gradual[i] = 0.1 + 0.5 * i / 119.0;
      flat[i] = 0.4 + (i % 2 == 0 ? 0.02 : -0.02);
    }
    assertThat(HotspotReport.trend(sudden)).startsWith("sudden: its share of the table's requests jumped from 15% to 60% within 10 s, 40 s ago");
    assertThat(HotspotReport.trend(gradual)).startsWith("gradual: its share of the table's requests rose from 12% to 58% over 120 s");
    assertThat(HotspotReport.trend(flat)).startsWith("steady: 40% of its table's requests 120 s ago, 40% now");
    assertThat(HotspotReport.trend(new double[5])).isEqualTo("only 5 s of history: too short to tell sudden from gradual");
  }

  private static HotspotReport.Shard shard(long number, double reads, double writes, double timesAverage, List<HotspotReport.Key> keys) {
    return new HotspotReport.Shard("t", number, "n1", reads, writes, timesAverage, keys, "hashrange", 0, 0, 0, "", new double[0]);
  }

  private static String run(String... args) {
    SimulateCommandTest.Run r = SimulateCommandTest.run(args);
    assertThat(r.exit()).as(r.err()).isZero();
    return r.out();
  }

  @Test
  void aHotShardWithoutADominantKeyIsToSplitAndAnEvenTableHasNoHotspot() {
    HotspotReport.Shard hot = shard(1, 900, 100, 3.0, List.of(new HotspotReport.Key("a", 0.1, 0.05, 0.1)));
    HotspotReport.Shard cool = shard(2, 100, 0, 0.5, List.of());
    assertThat(HotspotReport.findings(List.of(hot, cool))).singleElement().asString()
        .startsWith("t/1 is 3.0× its table's average shard (1,000 requests/s; only 0 s of history").contains("split the shard by load");
    HotspotReport.Shard writeHot = shard(3, 0, 1000, 4.0, List.of(new HotspotReport.Key("counter", 0.9, 0.8, 1.0)));
    assertThat(HotspotReport.findings(List.of(writeHot))).singleElement().asString().contains("'counter'").contains("write-hot").contains("salt");
    assertThat(HotspotReport.findings(List.of(cool))).singleElement().asString().startsWith("no hotspot: the busiest shard is 0.5×");
  }
}
