package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code shardwise bench} end to end at a tiny scale, on an embedded cluster (real nodes, RocksDB,
 * ZooKeeper, gRPC): the JSON has the documented shape and counts every operation exactly, down to
 * the requests each shard served. Never its speed.
 */
@Tag("integration")
class BenchCommandTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** {@code bench --dev --warmup 0s --workload a -o json} with {@code args}, which must succeed. */
  private static SimulateCommandTest.Run devRun(String... args) {
    List<String> command = new java.util.ArrayList<>(List.of("bench", "--dev", "--warmup", "0s", "--workload", "a", "-o", "json"));
    command.addAll(List.of(args));
    SimulateCommandTest.Run r = SimulateCommandTest.run(command.toArray(String[]::new));
    assertThat(r.exit()).as(r.err()).isZero();
    return r;
  }

  /** {@link #devRun}'s report. */
  private static JsonNode devReport(String... args) throws Exception {
    return JSON.readTree(devRun(args).out());
  }

  @Test
  void aDevRunAtThreeReplicasReportsTheAppendMessagesAndTheEntriesInThem() throws Exception {
    JsonNode root = devReport("--records", "300", "--operations", "400", "--threads", "4", "--replicas", "3");
    JsonNode replication = root.get("replication");
    assertThat(replication).as(root.toPrettyString()).isNotNull();
    // the updates' entries went to the followers (the client coalesces concurrent puts to one owner
    // into one request, which is one entry: so fewer than two per update)
    assertThat(replication.get("entries").asLong()).isPositive();
    assertThat(replication.get("messages").asLong()).isPositive();
    assertThat(replication.get("entriesPerMessage").asDouble())
        .isEqualTo(Math.round(100.0 * replication.get("entries").asLong() / replication.get("messages").asLong()) / 100.0);
    assertThat(devReport("--records", "100", "--operations", "100", "--threads", "2").has("replication"))
        .as("one replica: nothing to say about replication").isFalse();
  }

  @Test
  void aDevRunCountsEveryOperationAndEveryShardRequestWithABaselineBeside() throws Exception {
    SimulateCommandTest.Run r = devRun("--records", "300", "--operations", "500", "--threads", "4", "--baseline", "rocksdb");
    JsonNode root = JSON.readTree(r.out());
    assertThat(root.get("target").asText()).isEqualTo("shardwise");
    assertThat(root.get("operations").asLong()).isEqualTo(500);
    assertThat(root.get("throughput").asDouble()).isPositive();
    assertThat(root.get("latencyUnit").asText()).isEqualTo("us");
    assertThat(root.get("load").get("records").asLong()).isEqualTo(300);
    long counted = 0;
    for (String op : List.of("read", "update")) {
      JsonNode s = root.get(op);
      for (String field : List.of("count", "p50", "p95", "p99", "p999", "max")) {
        assertThat(s.has(field)).as(op + "." + field).isTrue();
      }
      assertThat(s.get("p50").asDouble()).isLessThanOrEqualTo(s.get("p99").asDouble());
      assertThat(s.get("p99").asDouble()).isLessThanOrEqualTo(s.get("max").asDouble());
      counted += s.get("count").asLong();
    }
    assertThat(counted).isEqualTo(500);
    assertThat(root.get("errors").size()).isZero();
    // Every get and put of the run was served by exactly one shard's owner, and counted there.
    long served = 0;
    for (JsonNode n : root.get("spread").get("perShard")) {
      served += n.asLong();
    }
    assertThat(served).isEqualTo(500);
    assertThat(root.get("spread").get("perShard").size()).isEqualTo(12);
    assertThat(root.get("spread").get("shardPeakToAverage").asDouble()).isGreaterThanOrEqualTo(1.0);
    JsonNode rocks = root.get("baselines").get("rocksdb");
    assertThat(rocks.get("operations").asLong()).isEqualTo(500);
    assertThat(root.get("ratios").get("rocksdb").get("throughput").asDouble()).isPositive();
    assertThat(r.err()).contains("shardwise").contains("run");
  }

  @Test
  void badOptionsAreUsageErrorsThatNameTheOption() {
    assertThat(SimulateCommandTest.run("bench", "--dev", "--workload", "z").err()).contains("unknown workload 'z'");
    assertThat(SimulateCommandTest.run("bench", "--dev", "--baseline", "mysql").err()).contains("--baseline must be rocksdb or redis-cluster");
    assertThat(SimulateCommandTest.run("bench", "--during", "rebalance").err()).contains("--during rebalance needs --dev");
    SimulateCommandTest.Run threads = SimulateCommandTest.run("bench", "--dev", "--threads", "0");
    assertThat(threads.exit()).isEqualTo(2);
    assertThat(threads.err()).contains("--threads must be in [1, 1024], not 0");
  }

  @Test
  void aRunningClusterIsMeasuredThroughZooKeeperAndItsTablesAreNeverDropped(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    try (io.shardwise.bench.EmbeddedCluster cluster = new io.shardwise.bench.EmbeddedCluster(dir, 2)) {
      SimulateCommandTest.Run first = SimulateCommandTest.run("bench", "--zk", cluster.zk(), "--via", "router", "--records", "50",
          "--operations", "80", "--warmup", "0s", "--threads", "2", "--workload", "c", "-o", "json");
      assertThat(first.exit()).as(first.err()).isZero();
      JsonNode root = JSON.readTree(first.out());
      assertThat(root.get("via").asText()).isEqualTo("router");
      assertThat(root.get("read").get("count").asLong()).isEqualTo(80);
      assertThat(root.get("spread").get("perShard").size()).isEqualTo(8); // 4 per node

      SimulateCommandTest.Run again = SimulateCommandTest.run("bench", "--zk", cluster.zk(), "--records", "50", "--operations", "80",
          "--warmup", "0s");
      assertThat(again.exit()).isEqualTo(1);
      assertThat(again.err()).contains("table usertable already exists; drop it first");
    }
  }
}
