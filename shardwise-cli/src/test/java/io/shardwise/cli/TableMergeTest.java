package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.client.ShardDescription;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code shardwise table merge} of neighbours apart: the nodes merge only shards that are together,
 * so the command makes a plan that brings them together first — a move for a table of one replica,
 * a change of leader (or replica moves) for a replicated one — and the balancer merges them once it
 * is approved, under writes, with every acknowledged write kept.
 */
class TableMergeTest {

  @TempDir Path dir;

  @Test
  void neighboursApartGetAPlanThatBringsThemTogetherAndMergesThemKeepingEveryAcknowledgedWrite() throws Exception {
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 2);
        ShardwiseClient client = ShardwiseClient.builder().seeds(cluster.nodeAddresses()).build()) {
      String zk = cluster.zk();
      SimulateCommandTest.Run manual = SimulateCommandTest.run("rebalance", "mode", "manual", "--zk", zk);
      assertThat(manual.exit()).as(manual.err()).isZero(); // no plan of the balancer's own supersedes the operator's
      client.createTable("one", TableSpec.builder("hashrange").shards(2).replicas(1).build());
      client.createTable("two", TableSpec.builder("range").splitPoints("m").replicas(2).build());
      List<ShardDescription> one = client.describeTable("one", false).shards();
      List<ShardDescription> two = client.describeTable("two", false).shards();
      assertThat(one.get(0).owner()).as("one replica each, on two nodes").isNotEqualTo(one.get(1).owner());
      assertThat(two.get(0).owner()).as("both replicas on both nodes, each led from its own").isNotEqualTo(two.get(1).owner());

      Map<String, String> acknowledged = new ConcurrentHashMap<>();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        try {
          for (int i = 0; !stop.get(); i++) {
            String table = i % 2 == 0 ? "one" : "two";
            String key = (char) ('a' + i % 26) + "-" + (i / 2) % 50; // both sides of "m"
            String value = "v" + i;
            client.put(table, Key.of(key), value.getBytes(StandardCharsets.UTF_8));
            acknowledged.put(table + "/" + key, value);
          }
        } catch (Throwable t) {
          failed.set(t);
        }
      }, "writer");
      writer.start();
      try {
        await().atMost(Duration.ofSeconds(20)).until(() -> acknowledged.size() >= 100);

        // Apart, one replica each: a plan, pending until approved, that moves the smaller to the other's node.
        SimulateCommandTest.Run planned = SimulateCommandTest.run("table", "merge", "one", "--shard", String.valueOf(one.get(0).number()),
            "--zk", zk, "-o", "json");
        assertThat(planned.exit()).as(planned.err()).isZero();
        JsonNode plan = new ObjectMapper().readTree(planned.out());
        assertThat(plan.get("state").asText()).isEqualTo("pending");
        assertThat(plan.get("next").asLong()).isEqualTo(one.get(1).number());
        long moving = plan.get("moving").asLong();
        String staysOn = (moving == one.get(0).number() ? one.get(1) : one.get(0)).owner();
        assertThat(plan.get("to").asText()).isEqualTo(staysOn);
        assertThat(plan.get("why").asText()).contains("operator: table merge").contains("moves from").contains("first");
        assertThat(client.describeTable("one", false).shards()).as("nothing runs before it is approved").hasSize(2);
        SimulateCommandTest.Run approved = SimulateCommandTest.run("rebalance", "approve", plan.get("plan").asText(), "--zk", zk);
        assertThat(approved.exit()).as(approved.err()).isZero();
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null || client.describeTable("one", false).shards().size() == 1);
        assertThat(client.describeTable("one", false).shards()).singleElement().extracting(ShardDescription::owner).isEqualTo(staysOn);

        // Replicated, the same replicas under two leaders: --approve runs the plan at once; the lead moves, no data.
        SimulateCommandTest.Run led = SimulateCommandTest.run("table", "merge", "two", "--shard", String.valueOf(two.get(0).number()),
            "--zk", zk, "--approve");
        assertThat(led.exit()).as(led.err()).isZero();
        assertThat(led.out()).contains("are apart: plan").contains("the lead of shard").contains("(no data moves)")
            .contains("rebalance status --wait");
        await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null || client.describeTable("two", false).shards().size() == 1);
        long writes = acknowledged.size();
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || acknowledged.size() > writes + 20);
      } finally {
        stop.set(true);
        writer.join();
      }
      assertThat(failed.get()).isNull();
      ShardDescription merged = client.describeTable("two", false).shards().get(0);
      assertThat(merged.followers()).hasSize(1);

      // Together now (and the last shard): refused by the node, with no plan made.
      SimulateCommandTest.Run last = SimulateCommandTest.run("table", "merge", "two", "--shard", String.valueOf(merged.number()), "--zk", zk);
      assertThat(last.exit()).isEqualTo(Main.EXIT_USAGE);
      assertThat(last.err()).contains("is the last in order");

      for (Map.Entry<String, String> e : acknowledged.entrySet()) {
        String[] tk = e.getKey().split("/", 2);
        Optional<Versioned> got = client.get(tk[0], Key.of(tk[1]));
        assertThat(got).as(e.getKey()).isPresent();
        assertThat(new String(got.get().value(), StandardCharsets.UTF_8)).as(e.getKey()).isEqualTo(e.getValue());
      }
    } finally {
      Session.current().close();
    }
  }
}
