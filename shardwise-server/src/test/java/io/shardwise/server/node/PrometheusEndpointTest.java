package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.server.rpc.Limits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real scrape of a node's {@code --metrics-port}: the text format, the names, and no key as a label. */
class PrometheusEndpointTest {

  @TempDir Path dir;

  /** One sample of the text format: {@code name{k="v",...} value}. */
  record Sample(String name, Map<String, String> labels, double value) {}

  private static final Pattern LINE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})? (\\S+)");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  static List<Sample> parse(String text) {
    List<Sample> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      Matcher m = LINE.matcher(line);
      assertThat(m.matches()).as("a sample line of the text format: %s", line).isTrue();
      Map<String, String> labels = new LinkedHashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      out.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
    }
    return out;
  }

  private static double sum(List<Sample> samples, String name, Map<String, String> having) {
    return samples.stream().filter(s -> s.name().equals(name) && s.labels().entrySet().containsAll(having.entrySet()))
        .mapToDouble(Sample::value).sum();
  }

  @Test
  void aScrapeShowsRequestsByOperationAndKeysPerShardInTheTextFormat() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      ShardwiseNode node = cluster.startNode(1, c -> c.withMetricsPort(0));
      cluster.nodes.add(node);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("orders", TableSpec.builder("hashrange").shards(4).build());
      for (int i = 0; i < 50; i++) {
        client.put("orders", Key.of("key-" + i), ("v" + i).getBytes(StandardCharsets.UTF_8));
      }
      for (int i = 0; i < 20; i++) {
        assertThat(client.get("orders", Key.of("key-" + i))).isPresent();
      }
      assertThatThrownBy(() -> client.put("orders", Key.of("k"), new byte[Limits.DEFAULT.maxValueBytes() + 1]))
          .hasMessageContaining("INVALID_ARGUMENT");

      HttpClient http = HttpClient.newHttpClient();
      String url = node.metricsUrl().orElseThrow();
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
      List<Sample> samples = parse(r.body());

      assertThat(sum(samples, "shardwise_shard_writes_keys_total", Map.of("table", "orders"))).as("keys written, over the shards").isEqualTo(50);
      assertThat(sum(samples, "shardwise_shard_reads_keys_total", Map.of("table", "orders"))).isEqualTo(20);
      assertThat(samples.stream().filter(s -> s.name().equals("shardwise_shard_writes_keys_total")).map(s -> s.labels().get("shard")))
          .as("one series per shard").containsExactlyInAnyOrder("0", "1", "2", "3");
      // Every request the node answered is timed by operation, with a latency histogram.
      double answered = sum(samples, "shardwise_requests_seconds_count", Map.of("outcome", "ok"));
      assertThat(answered).as("requests answered ok").isPositive();
      assertThat(sum(samples, "shardwise_requests_seconds_count", Map.of("outcome", "invalid_argument"))).isEqualTo(1);
      assertThat(samples).anySatisfy(s -> {
        assertThat(s.name()).isEqualTo("shardwise_requests_seconds_bucket");
        assertThat(s.labels()).containsKey("le").containsKey("op");
      });
      // The names the README documents.
      assertThat(samples.stream().map(Sample::name).distinct()).contains("shardwise_move_bytes_total", "shardwise_move_keys_total",
          "shardwise_move_write_pause_seconds_count", "shardwise_moves_in_flight", "shardwise_move_catchup_lag",
          "shardwise_balancer_moves_in_flight", "shardwise_requests_seconds_bucket", "shardwise_shard_reads_keys_total",
          "shardwise_hot_keys", "shardwise_balancer_splits_total", "shardwise_balancer_merges_total", "shardwise_balancer_isolations_total",
          "shardwise_balancer_salts_total", "shardwise_replication_read_barriers_total", "shardwise_replication_messages_total",
          "shardwise_replication_entries_total");
      // Keys are never label values.
      assertThat(samples).allSatisfy(s -> assertThat(s.labels().values()).noneMatch(v -> v.startsWith("key-")));

      HttpResponse<String> other = http.send(HttpRequest.newBuilder(URI.create(url.replace("/metrics", "/other"))).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(other.statusCode()).isEqualTo(404);
    }
  }
}
