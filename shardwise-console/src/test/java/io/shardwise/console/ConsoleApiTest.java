package io.shardwise.console;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.sim.Simulation;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The console's JSON API over real HTTP, against a real cluster (ZooKeeper, three nodes, RocksDB). */
class ConsoleApiTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir static Path dir;
  private static LocalCluster cluster;

  @BeforeAll
  static void start() {
    cluster = new LocalCluster(dir, 3);
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  record Reply(int status, JsonNode body) {}

  private static Reply get(String pathAndQuery) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(cluster.console.url() + pathAndQuery.substring(1))).GET().build());
  }

  private static Reply post(String path, String form) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(cluster.console.url() + path.substring(1)))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(form)).build());
  }

  private static Reply send(HttpRequest request) throws IOException, InterruptedException {
    HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    assertThat(r.headers().firstValue("Content-Type")).as(r.body()).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    return new Reply(r.statusCode(), JSON.readTree(r.body()));
  }

  private static String query(Map<String, String> params) {
    return params.entrySet().stream()
        .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
        .collect(Collectors.joining("&"));
  }

  @Test
  void simulateGivesTheSameJsonAsTheSharedRenderingForTheSameParameters() throws Exception {
    Map<String, String> params = Map.of("keys", "key-%02d", "start", "1", "count", "40", "from", "4", "to", "5",
        "strategy", "mod,ring,slots,jump,rendezvous", "vnodes", "64", "placements", "true");
    Reply reply = get("/api/v1/simulate?" + query(params));
    assertThat(reply.status()).isEqualTo(200);
    SimulationRequest same = SimulationRequest.fromParameters(params.keySet(), params::get);
    java.io.StringWriter text = new java.io.StringWriter();
    SimulationOutput.json(same.run(), new java.io.PrintWriter(text, true));
    JsonNode expected = JSON.readTree(text.toString());
    assertThat(reply.body()).isEqualTo(expected);
    assertThat(reply.body().get("placedKeys")).hasSize(40);
    JsonNode mod = reply.body().get("results").get(0);
    JsonNode ring = reply.body().get("results").get(1);
    assertThat(mod.get("strategy").asText()).isEqualTo("mod");
    assertThat(ring.get("moved").asLong()).isLessThan(mod.get("moved").asLong());
    // The grid agrees with the counts: cells whose node changed are exactly the moved keys.
    long changed = 0;
    for (int i = 0; i < 40; i++) {
      changed += mod.get("placement").get("before").get(i).asInt() != mod.get("placement").get("after").get(i).asInt() ? 1 : 0;
    }
    assertThat(changed).isEqualTo(mod.get("moved").asLong());
  }

  @Test
  void pastedKeysArePostedAsAFormAndPlacedInTheirOrder() throws Exception {
    Reply reply = post("/api/v1/simulate", query(Map.of("keyList", "carol\nalice\n\nbob\n", "from", "2", "to", "3",
        "strategy", "ring", "placements", "true")));
    assertThat(reply.status()).isEqualTo(200);
    assertThat(reply.body().get("placedKeys")).extracting(JsonNode::asText).containsExactly("carol", "alice", "bob");
    assertThat(reply.body().get("keySource").asText()).isEqualTo("3 listed keys");
  }

  @Test
  void badParametersAre400sThatNameTheProblem() throws Exception {
    Map<String, String> cases = Map.of(
        "from=-1", "from must be in [1, 1024] nodes, not -1",
        "count=100000&placements=true", "the lab grid shows at most 1000 keys, not 100000",
        "strategy=bogus", "unknown strategy 'bogus'",
        "count=abc", "count must be a whole number, not 'abc'",
        "bogus=1", "unknown parameter 'bogus'",
        "hash=crc7", "crc7",
        "count=2000000", "count must be at most 1000000 over HTTP",
        "from=4&to=5&strategy=slots&slots=4", "more nodes (5) than slots (4)",
        "vnodes=0", "vnodes must be in [1, 4096], not 0",
        "placements=maybe", "placements must be true or false");
    for (Map.Entry<String, String> c : cases.entrySet()) {
      Reply reply = get("/api/v1/simulate?" + c.getKey());
      assertThat(reply.status()).as(c.getKey()).isEqualTo(400);
      assertThat(reply.body().get("status").asInt()).isEqualTo(400);
      assertThat(reply.body().get("error").asText()).as(c.getKey()).contains(c.getValue());
    }
    String tooLong = "k\n".repeat(200_000);
    Reply big = post("/api/v1/simulate", query(Map.of("keyList", tooLong)));
    assertThat(big.status()).isEqualTo(413);
    assertThat(big.body().get("error").asText()).contains("larger than " + Console.MAX_REQUEST_BYTES);

    Reply unknown = get("/api/v1/nothing-here");
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.body().get("error").asText()).contains("/api/v1/nothing-here");
    Reply noPlan = post("/api/v1/plans/p-0000009999/approve", "");
    assertThat(noPlan.status()).isEqualTo(404);
    assertThat(noPlan.body().get("error").asText()).isEqualTo("no plan p-0000009999");
    assertThat(get("/api/v1/shards?sort=colour").status()).isEqualTo(400);
    assertThat(get("/api/v1/shards?limit=0").status()).isEqualTo(400);
  }

  @Test
  void queriesOfDocumentsAnswerAsTheNodesDo() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("cars", TableSpec.builder("hashrange").shards(3).replicas(1).format(io.shardwise.core.doc.ValueFormat.JSON).build());
    for (int i = 0; i < 30; i++) {
      client.put("cars", io.shardwise.core.key.Key.of("car-" + i), ("{\"color\": \"" + (i % 3 == 0 ? "red" : "blue") + "\", \"n\": " + i + "}")
          .getBytes(StandardCharsets.UTF_8));
    }
    Reply first = get("/api/v1/query?" + query(Map.of("table", "cars", "where", "color = 'red' AND n >= 3", "limit", "4")));
    assertThat(first.status()).as(first.body().toString()).isEqualTo(200);
    assertThat(first.body().get("rows")).hasSize(4).allMatch(r -> r.get("document").get("color").asText().equals("red"));
    assertThat(first.body().get("truncated").asBoolean()).isTrue();
    assertThat(first.body().get("complete").asBoolean()).isTrue();
    assertThat(first.body().get("plan").get("rows_examined").asLong()).isEqualTo(30);
    Reply second = get("/api/v1/query?" + query(Map.of("table", "cars", "where", "color = 'red' AND n >= 3", "limit", "10",
        "page_token", first.body().get("next_page_token").asText())));
    assertThat(second.body().get("rows")).hasSize(5); // 9 red cars from car-3 on: 4, then the other 5
    assertThat(second.body().get("truncated").asBoolean()).isFalse();

    Reply bad = get("/api/v1/query?" + query(Map.of("table", "cars", "where", "color = red")));
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.body().get("error").asText()).contains("bad condition at character 9");
    assertThat(get("/api/v1/query?" + query(Map.of("table", "nope", "where", "a = 1"))).status()).isEqualTo(404);
    assertThat(get("/api/v1/query?table=cars").status()).isEqualTo(400);

    // With a local index on color, the same query reads through it, and the cluster view lists the index.
    client.createIndex("cars", "color");
    await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("cars").get(0).ready());
    Reply indexed = get("/api/v1/query?" + query(Map.of("table", "cars", "where", "color = 'red' AND n >= 3", "limit", "100")));
    assertThat(indexed.body().get("rows")).hasSize(9);
    assertThat(indexed.body().get("plan").get("access").asText()).isEqualTo("index");
    assertThat(indexed.body().get("plan").get("index").asText()).isEqualTo("color (local index): color = 'red'");
    assertThat(indexed.body().get("plan").get("index_entries").asLong()).isBetween(10L, 10L + 2 * 3);
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      JsonNode cars = null;
      for (JsonNode t : get("/api/v1/cluster").body().get("tableList")) {
        cars = t.get("name").asText().equals("cars") ? t : cars;
      }
      assertThat(cars).isNotNull();
      assertThat(cars.get("indexes").get(0).get("field").asText()).isEqualTo("color");
      assertThat(cars.get("indexes").get(0).get("state").asText()).isEqualTo("ready");
    });
  }

  @Test
  void theClusterViewCountsKeysPerNodeAndRequestsPerShard() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("stats", TableSpec.builder("slots").slots(6).build());
    for (int i = 0; i < 300; i++) {
      client.put("stats", Key.of("k" + i), ("v" + i).getBytes(StandardCharsets.UTF_8));
    }
    // Sizes are read at most every 10 s; wait for a reading taken after the writes.
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      JsonNode view = get("/api/v1/cluster").body();
      long keys = 0;
      for (JsonNode shard : view.get("shardList")) {
        if (shard.get("table").asText().equals("stats")) {
          keys += shard.get("keys").asLong();
        }
      }
      assertThat(keys).isEqualTo(300);
    });
    JsonNode view = get("/api/v1/cluster").body();
    assertThat(view.get("nodes").asInt()).isEqualTo(cluster.size());
    assertThat(view.get("nodeList")).extracting(n -> n.get("state").asText()).containsOnly("up");
    assertThat(view.get("balancer").get("mode").asText()).isEqualTo("suggest");
    assertThat(view.get("balancer").get("leader").asText()).isIn("n1", "n2", "n3", "n4");

    // Reads of one key between two readings show up as that shard's requests per second.
    Key hot = Key.of("k7");
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      for (int i = 0; i < 200; i++) {
        client.get("stats", hot);
      }
      JsonNode top = get("/api/v1/shards?sort=reads&limit=1").body().get(0);
      assertThat(top.get("readsPerSecond").asDouble()).isGreaterThan(0);
      JsonNode again = get("/api/v1/shards?sort=reads&limit=1").body().get(0);
      assertThat(again.get("table").asText()).isEqualTo("stats");
      assertThat(again.get("readsPerSecond").asDouble()).isGreaterThan(0);
    });
  }

  @Test
  void theTablesViewShowsRingMembersAndEachSplitPolicyBesideTheLargestShard() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("members", TableSpec.builder("ring").vnodes(8).build());
    client.createTable("grows", TableSpec.builder("hashrange").shards(2).build());
    byte[] value = new byte[1000];
    for (int i = 0; i < 100; i++) {
      client.put("grows", Key.of("g" + i), value);
    }
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      JsonNode grows = table(get("/api/v1/cluster").body(), "grows");
      // 100 values of 1,000 bytes over two shards: the larger holds at least half of them.
      assertThat(grows.path("largestShardBytes").asLong()).isGreaterThanOrEqualTo(50_000);
    });
    JsonNode view = get("/api/v1/cluster").body();
    JsonNode members = table(view, "members");
    assertThat(members.get("strategy").asText()).isEqualTo("ring");
    assertThat(members.get("ringMembers")).extracting(JsonNode::asText).hasSize(cluster.size()).doesNotHaveDuplicates();
    JsonNode grows = table(view, "grows");
    assertThat(grows.has("ringMembers")).isFalse();
    JsonNode policy = grows.get("resizePolicy");
    assertThat(policy.get("mode").asText()).isEqualTo("suggest");
    assertThat(policy.get("splitBytes").asLong()).isEqualTo(512L << 20);
    assertThat(policy.get("splitRequestsPerSecond").asLong()).isEqualTo(2_500);
  }

  private static JsonNode table(JsonNode view, String name) {
    for (JsonNode t : view.get("tableList")) {
      if (t.get("name").asText().equals(name)) {
        return t;
      }
    }
    return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
  }

  @Test
  void aHotKeyIsOfferedTheRemedyThatFitsItAndTheRemedyEndpointsMakeAPlanOrSaltTheCounter() throws Exception {
    ShardwiseClient client = cluster.client();
    try (io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(cluster.cluster.zk(),
        Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new io.shardwise.server.balance.RebalanceRecords(admin).updateSettings(s -> s.toBuilder().putTableSplitRps("readhot", -1)
          .putTableSplitRps("counters", -1).build()); // the page's remedies, not the balancer's
      client.createTable("readhot", TableSpec.builder("hashrange").shards(4).build());
      client.createTable("counters", TableSpec.builder("hashrange").shards(4).build());
      client.put("readhot", Key.of("star"), "x".getBytes(StandardCharsets.UTF_8));
      String star = java.util.Base64.getEncoder().encodeToString("star".getBytes(StandardCharsets.UTF_8));
      String likes = java.util.Base64.getEncoder().encodeToString("likes".getBytes(StandardCharsets.UTF_8));
      JsonNode readHot = await().atMost(Duration.ofSeconds(30)).until(() -> {
        for (int i = 0; i < 200; i++) {
          client.get("readhot", Key.of("star"));
        }
        return hotKey(get("/api/v1/cluster").body(), "readhot", "star");
      }, k -> k.has("remedy"));
      assertThat(readHot.get("remedy").asText()).isEqualTo("isolate");
      assertThat(readHot.get("keyBase64").asText()).isEqualTo(star);
      JsonNode counter = await().atMost(Duration.ofSeconds(30)).until(() -> {
        for (int i = 0; i < 200; i++) {
          client.increment("counters", Key.of("likes"), 1);
        }
        return hotKey(get("/api/v1/cluster").body(), "counters", "likes");
      }, k -> k.has("remedy"));
      assertThat(counter.get("remedy").asText()).isEqualTo("salt");
      assertThat(counter.get("finding").asText()).contains("nearly all increments");

      Reply plan = post("/api/v1/hotspots/isolate", query(Map.of("table", "readhot", "key", star)));
      assertThat(plan.status()).as(plan.body().toString()).isEqualTo(200);
      assertThat(plan.body().get("state").asText()).isEqualTo("pending");
      assertThat(plan.body().get("resizes").get(0).get("kind").asText()).isEqualTo("isolate");
      assertThat(plan.body().get("resizes").get(0).get("hotKey").asText()).isEqualTo("star");
      assertThat(post("/api/v1/plans/" + plan.body().get("id").asText() + "/reject", "").status()).isEqualTo(200);

      Reply salted = post("/api/v1/hotspots/salt", query(Map.of("table", "counters", "key", likes)));
      assertThat(salted.status()).as(salted.body().toString()).isEqualTo(200);
      assertThat(salted.body().get("state").asText()).isEqualTo("salted");
      assertThat(salted.body().get("fanout").asInt()).isEqualTo(io.shardwise.server.hot.Salting.SUB_KEYS_PER_NODE * cluster.size());
      long before = client.counter("counters", Key.of("likes"));
      client.increment("counters", Key.of("likes"), 5);
      assertThat(client.counter("counters", Key.of("likes"))).isEqualTo(before + 5);

      // Bad requests name the problem.
      assertThat(post("/api/v1/hotspots/isolate", query(Map.of("table", "readhot"))).body().get("error").asText()).isEqualTo("key is required");
      Reply badKey = post("/api/v1/hotspots/salt", query(Map.of("table", "counters", "key", "%%%")));
      assertThat(badKey.status()).isEqualTo(400);
      assertThat(badKey.body().get("error").asText()).startsWith("key must be the key's bytes in base64");
      Reply twice = post("/api/v1/hotspots/salt", query(Map.of("table", "counters", "key", likes)));
      assertThat(twice.status()).isEqualTo(400);
      assertThat(twice.body().get("error").asText()).contains("salted into " + salted.body().get("fanout").asInt() + " sub-keys already");
      assertThat(post("/api/v1/hotspots/isolate", query(Map.of("table", "nope", "key", star))).body().get("error").asText())
          .isEqualTo("no table 'nope'");
    }
  }

  /** The hot key {@code key} of a shard of {@code table} in the cluster view, or a missing node. */
  private static JsonNode hotKey(JsonNode view, String table, String key) {
    for (JsonNode shard : view.get("shardList")) {
      if (shard.get("table").asText().equals(table)) {
        for (JsonNode k : shard.get("hotKeys")) {
          if (k.get("key").asText().equals(key)) {
            return k;
          }
        }
      }
    }
    return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
  }

  @Test
  void aPendingPlanCanBeRejectedAndThenNotApproved() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("moving", TableSpec.builder("slots").slots(8).build());
    cluster.addNode();
    JsonNode pending = await().atMost(Duration.ofSeconds(30)).until(
        () -> get("/api/v1/cluster").body().get("plans").get("pending"), p -> p != null && !p.isNull());
    String id = pending.get("id").asText();
    assertThat(pending.get("moves").size()).isPositive();
    assertThat(get("/api/v1/plans/" + id).body().get("state").asText()).isEqualTo("pending");

    Reply rejected = post("/api/v1/plans/" + id + "/reject", "");
    assertThat(rejected.status()).isEqualTo(200);
    assertThat(rejected.body().get("state").asText()).isEqualTo("rejected");
    Reply late = post("/api/v1/plans/" + id + "/approve", "");
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.body().get("error").asText()).isEqualTo("plan " + id + " is rejected, not pending");
    assertThat(get("/api/v1/plans").body()).anySatisfy(p -> assertThat(p.get("id").asText()).isEqualTo(id));
    assertThat(Simulation.MAX_PLACED_KEYS).isGreaterThanOrEqualTo(SimulationRequest.MAX_GRID_KEYS);
  }
}
