package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.balance.Isolation;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A celebrity key on a real cluster: three quarters of the requests go to one partition key of a
 * one-shard table. The balancer (auto) finds that the busy shard has no load split point because
 * of that key, cuts the key into a shard of its own and moves that shard to the idle node; the
 * busiest node's share of the requests drops, and every acknowledged write reads back. An
 * operator's isolation plan does the same on request.
 */
@Tag("integration")
class HotKeyIsolationTest {

  private static final String CELEBRITY = "user0500";

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Requests in a loop until stopped: three in four to {@link #CELEBRITY}, a quarter of all of them writes. */
  private static final class Load {
    final Map<String, String> acknowledged = new ConcurrentHashMap<>();
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicReference<Throwable> failed = new AtomicReference<>();
    final Thread thread;

    Load(ShardwiseClient client, String table, long seed) {
      thread = new Thread(() -> {
        java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
        try {
          for (int i = 0; !stop.get(); i++) {
            String key = random.nextInt(4) < 3 ? CELEBRITY : String.format("user%04d", random.nextInt(1_000));
            if (i % 4 == 0) {
              String value = "v" + i;
              client.put(table, Key.of(key), b(value));
              acknowledged.put(key, value);
            } else {
              client.get(table, Key.of(key));
            }
          }
        } catch (Throwable t) {
          failed.set(t);
        }
      });
      thread.start();
    }

    void close() throws InterruptedException {
      stop.set(true);
      thread.join();
      assertThat(failed.get()).isNull();
    }
  }

  /** Each node's share of the table's requests over {@code seconds} of load. */
  private static Map<String, Double> nodeShares(Coordinator admin, String table, Duration over) throws InterruptedException {
    try (Peers peers = new Peers(16 << 20)) {
      var live = admin.liveNodesNow().values();
      Map<String, Long> before = requests(NodeStatsPoll.ask(peers, live, false, Duration.ofSeconds(5)).answers(), table);
      Thread.sleep(over.toMillis());
      Map<String, Long> after = requests(NodeStatsPoll.ask(peers, live, false, Duration.ofSeconds(5)).answers(), table);
      long total = 0;
      Map<String, Long> delta = new HashMap<>();
      for (var e : after.entrySet()) {
        long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
        delta.put(e.getKey(), Math.max(0, d));
        total += Math.max(0, d);
      }
      Map<String, Double> out = new HashMap<>();
      for (var e : delta.entrySet()) {
        out.put(e.getKey(), total == 0 ? 0 : (double) e.getValue() / total);
      }
      return out;
    }
  }

  /** Requests served per node and shard ("n1 t/3"), so that a shard moved between readings is not counted negatively. */
  private static Map<String, Long> requests(java.util.List<NodeStatsResponse> stats, String table) {
    Map<String, Long> out = new HashMap<>();
    for (NodeStatsResponse n : stats) {
      for (ShardInfo s : n.getShardsList()) {
        if (s.getTable().equals(table)) {
          out.merge(n.getNode(), s.getReads() + s.getWrites(), Long::sum);
        }
      }
    }
    return out;
  }

  private static double busiest(Map<String, Double> shares) {
    return shares.values().stream().mapToDouble(Double::doubleValue).max().orElse(0);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"range", "hashrange"})
  void theBalancerIsolatesACelebrityKeyOnTheIdleNode(String strategy) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("hot", TableSpec.builder(strategy).shards(1).replicas(1).build());
      NodeId owner = admin.syncedMap().table("hot").orElseThrow().shards().get(0).owner();
      Load load = new Load(client, "hot", 7);
      try {
        double before = busiest(nodeShares(admin, "hot", Duration.ofSeconds(2)));
        assertThat(before).as("one shard: one node serves everything").isEqualTo(1.0);
        records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setSplitBytes(-1).setSplitRps(300)
            .setSplitRpsSeconds(2).setMergeFraction(-1).build());
        await().atMost(Duration.ofSeconds(60)).until(() -> load.failed.get() != null || records.plans().stream()
            .flatMap(p -> p.getResizesList().stream()).anyMatch(r -> r.getState() == ResizeRecord.State.DONE));
        assertThat(load.failed.get()).isNull();
        assertThat(isolatedAway(admin, owner)).as("the celebrity has a shard of its own, away from " + owner).isTrue();
        assertThat(records.plans()).anySatisfy(p -> assertThat(p.getResizesList()).anySatisfy(r -> {
          assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.ISOLATE);
          assertThat(r.getState()).isEqualTo(ResizeRecord.State.DONE);
          assertThat(r.getHotKey().toStringUtf8()).isEqualTo(CELEBRITY);
          assertThat(r.getWhy()).startsWith("load: ").contains("key '" + CELEBRITY + "' takes at least");
        }));
        double after = busiest(nodeShares(admin, "hot", Duration.ofSeconds(3)));
        assertThat(after).as("the busiest node's share of requests after the isolation (was %.2f)", before).isLessThan(0.9);
      } finally {
        load.close();
      }
      assertThat(load.acknowledged).containsKey(CELEBRITY);
      checkReadBack(client, "hot", load.acknowledged);
    }
  }

  /** Whether the celebrity has a shard of its own, on a node other than {@code owner}. */
  private static boolean isolatedAway(Coordinator admin, NodeId owner) {
    Table t = admin.syncedMap().table("hot").orElseThrow();
    ShardAssignment s = t.shardFor(b(CELEBRITY));
    return Isolation.isolated(t, b(CELEBRITY)) && !s.owner().equals(owner);
  }

  @Test
  void anOperatorsIsolationPlanCutsTheKeyOutAndMovesItsShardWhereAsked() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10));
        Peers peers = new Peers(16 << 20)) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("range").shards(1).replicas(1).build());
      Map<String, String> written = new HashMap<>();
      for (int i = 0; i < 300; i++) {
        String key = String.format("user%04d", i);
        client.put("t", Key.of(key), b("v" + i));
        client.put("t", Key.of(key, "sort" + i), b("w" + i));
        written.put(key, "v" + i);
      }
      NodeId owner = admin.syncedMap().table("t").orElseThrow().shards().get(0).owner();
      NodeId other = admin.liveNodesNow().keySet().stream().filter(n -> !n.equals(owner)).findFirst().orElseThrow();
      Rebalancing rebalancing = new Rebalancing(admin);
      PlanRecord plan = rebalancing.isolate(peers, "t", b("user0100"), Optional.of(other), false);
      assertThat(plan.getState()).isEqualTo(PlanRecord.State.PENDING);
      assertThat(plan.getResizes(0).getWhy()).startsWith("operator: key 'user0100'").contains("cut before and after it")
          .contains("to " + other);
      assertThat(admin.syncedMap().table("t").orElseThrow().shards()).as("nothing runs before approval").hasSize(1);
      rebalancing.approve(plan.getId());
      PlanRecord done = await().atMost(Duration.ofSeconds(60)).until(() -> records.plan(plan.getId()).orElseThrow(),
          p -> RebalanceRecords.finished(p.getState()));
      assertThat(done.getState()).as(done.toString()).isEqualTo(PlanRecord.State.DONE);
      Table t = admin.syncedMap().table("t").orElseThrow();
      assertThat(t.shards()).hasSize(3);
      assertThat(Isolation.isolated(t, b("user0100"))).isTrue();
      ShardAssignment alone = t.shardFor(b("user0100"));
      assertThat(alone.owner()).isEqualTo(other);
      assertThat(done.getResizes(0).getResultNumbersList()).containsExactly(alone.id().number());
      // The key's rows (both sort keys) moved with it; its neighbours stayed.
      assertThat(t.shardFor(b("user0099")).owner()).isEqualTo(owner);
      assertThat(t.shardFor(b("user0101")).owner()).isEqualTo(owner);
      assertThat(new String(client.get("t", Key.of("user0100", "sort100")).orElseThrow().value(), StandardCharsets.UTF_8))
          .isEqualTo("w100");
      checkReadBack(client, "t", written);
      // Isolated and where it should be: asking again says there is nothing to do.
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> rebalancing.isolate(peers, "t", b("user0100"), Optional.of(other), false))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("to itself already");
    }
  }

  private static void checkReadBack(ShardwiseClient client, String table, Map<String, String> acknowledged) {
    for (var e : acknowledged.entrySet()) {
      var got = client.get(table, Key.of(e.getKey()));
      assertThat(got).as(e.getKey()).isPresent();
      assertThat(new String(got.get().value(), StandardCharsets.UTF_8)).as(e.getKey()).isEqualTo(e.getValue());
    }
  }
}
