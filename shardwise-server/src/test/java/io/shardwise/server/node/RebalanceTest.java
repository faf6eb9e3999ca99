package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Moving shards while clients read and write, on real nodes (RocksDB, ZooKeeper, gRPC): the
 * balancer's modes, the move protocol's cutover, and crashes of either side of a move. Every test
 * starts its own cluster.
 */
@Tag("integration")
class RebalanceTest {

  private static final Duration PLAN_TIMEOUT = Duration.ofSeconds(60);

  @TempDir Path dir;

  // ------------------------------------------------------------------ helpers

  private static Key key(int i) {
    return Key.of(String.format("key-%05d", i).getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] value(long seq) {
    return ("v" + seq).getBytes(StandardCharsets.UTF_8);
  }

  private static long seqOf(Versioned v) {
    return Long.parseLong(new String(v.value(), StandardCharsets.UTF_8).substring(1));
  }

  private static void setMode(Coordinator c, BalancerSettings.Mode mode) {
    new RebalanceRecords(c).updateSettings(s -> s.toBuilder().setMode(mode).setAutoMaxFraction(1.0).build());
  }

  private static PlanRecord awaitPlan(RebalanceRecords records, java.util.function.Predicate<PlanRecord> condition) {
    PlanRecord[] found = new PlanRecord[1];
    await().atMost(PLAN_TIMEOUT).pollInterval(Duration.ofMillis(100)).until(() -> {
      for (PlanRecord p : records.plans()) {
        if (condition.test(p)) {
          found[0] = p;
          return true;
        }
      }
      return false;
    });
    return found[0];
  }

  private static PlanRecord awaitFinished(RebalanceRecords records, String id) {
    await().atMost(PLAN_TIMEOUT).pollInterval(Duration.ofMillis(100))
        .until(() -> RebalanceRecords.finished(records.plan(id).orElseThrow().getState()));
    return records.plan(id).orElseThrow();
  }

  private static Map<NodeId, Integer> shardsPerNode(ShardMap map, String table) {
    Map<NodeId, Integer> out = new java.util.TreeMap<>();
    map.table(table).orElseThrow().shards().forEach(s -> out.merge(s.owner(), 1, Integer::sum));
    return out;
  }

  /** Every key is stored only on its owner (once old copies are dropped) and holds {@code expected}. */
  private static void assertOnlyOwnersHold(TestCluster cluster, String tableName, Map<Integer, Long> expected) {
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      ShardMap map = cluster.nodes.get(0).map();
      Table table = map.table(tableName).orElseThrow();
      for (Map.Entry<Integer, Long> e : expected.entrySet()) {
        Key k = key(e.getKey());
        ShardAssignment s = table.shardFor(k.partitionKey());
        ShardRef ref = new ShardRef(table.id(), s.id().number());
        for (ShardwiseNode n : cluster.nodes) {
          var stored = n.store().get(ref, k.encode());
          if (n.id().equals(s.owner())) {
            assertThat(stored).as("key %d on its owner %s", e.getKey(), n.id()).isNotNull();
            assertThat(Long.parseLong(new String(stored.value(), StandardCharsets.UTF_8).substring(1))).isEqualTo(e.getValue());
          } else {
            assertThat(stored).as("key %d left on %s (owner %s)", e.getKey(), n.id(), s.owner()).isNull();
          }
        }
      }
    });
  }

  /**
   * One client, a writer thread and a reader thread. The writer writes rising sequence numbers to
   * random keys and records, per key, the last acknowledged one and the last attempted one. The
   * reader checks each read against what was acknowledged before the read began.
   */
  static final class History implements AutoCloseable {
    final ShardwiseClient client;
    final String table;
    final int keys;
    final Map<Integer, Long> acked = new ConcurrentHashMap<>();
    final Map<Integer, Long> attempted = new ConcurrentHashMap<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    final AtomicLong writes = new AtomicLong();
    final AtomicLong reads = new AtomicLong();
    final AtomicLong failedWrites = new AtomicLong();
    final AtomicBoolean stop = new AtomicBoolean();
    final List<Thread> threads = new ArrayList<>();

    History(ShardwiseClient client, String table, int keys, long seed) {
      this.client = client;
      this.table = table;
      this.keys = keys;
      java.util.Random random = new java.util.Random(seed);
      long[] seq = {0};
      for (int i = 0; i < keys; i++) {
        client.put(table, key(i), value(++seq[0]));
        acked.put(i, seq[0]);
        attempted.put(i, seq[0]);
      }
      threads.add(new Thread(() -> {
        while (!stop.get()) {
          int k = random.nextInt(keys);
          long s = ++seq[0];
          attempted.put(k, s);
          try {
            client.put(table, key(k), value(s));
            acked.put(k, s);
            writes.incrementAndGet();
          } catch (RuntimeException e) {
            failedWrites.incrementAndGet(); // not acknowledged: may or may not have landed
          }
        }
      }, "history-writer"));
      threads.add(new Thread(() -> {
        java.util.Random r = new java.util.Random(seed + 1);
        while (!stop.get()) {
          int k = r.nextInt(keys);
          long floor = acked.get(k);
          try {
            Optional<Versioned> v = client.get(table, key(k));
            reads.incrementAndGet();
            if (v.isEmpty() || seqOf(v.get()) < floor) {
              violations.add("key " + k + ": read " + v.map(RebalanceTest::seqOf).orElse(-1L) + " after " + floor + " was acknowledged");
            }
          } catch (RuntimeException e) {
            // an unanswered read returns nothing stale
          }
        }
      }, "history-reader"));
      threads.forEach(Thread::start);
    }

    /** Stops the threads, then checks every key holds its last acknowledged write (or a later attempted one). */
    Map<Integer, Long> stopAndCheck() throws InterruptedException {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      Map<Integer, Long> finalValues = new java.util.TreeMap<>();
      for (int k = 0; k < keys; k++) {
        Optional<Versioned> v = client.get(table, key(k));
        long got = v.map(RebalanceTest::seqOf).orElse(-1L);
        if (got < acked.get(k) || got > attempted.get(k)) {
          violations.add("key " + k + ": holds " + got + ", last acknowledged " + acked.get(k) + ", last attempted " + attempted.get(k));
        }
        finalValues.put(k, got);
      }
      return finalValues;
    }

    @Override
    public void close() {
      stop.set(true);
    }
  }

  // ------------------------------------------------------------------ tests

  @Test
  void addingANodeMovesShardsWhileEveryAcknowledgedWriteSurvives() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      setMode(c, BalancerSettings.Mode.AUTO);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("history", PartitioningSpec.newBuilder().setStrategy("slots").setSlots(12).build());
      RebalanceRecords records = new RebalanceRecords(c);
      try (History h = new History(client, "history", 500, 42)) {
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > 200 && h.reads.get() > 200);
        cluster.nodes.add(cluster.startNode(4));
        PlanRecord plan = awaitPlan(records, p -> p.getMovesCount() > 0);
        PlanRecord done = awaitFinished(records, plan.getId());
        assertThat(done.getState()).as(done.toString()).isEqualTo(PlanRecord.State.DONE);
        assertThat(done.getMovesList()).allMatch(m -> m.getTo().equals("n4") && m.getProgress().getPhase() == MoveProgress.Phase.DONE);
        long writesAfter = h.writes.get();
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > writesAfter + 200);
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
        ShardMap map = c.readMap().map();
        assertThat(shardsPerNode(map, "history")).containsExactlyInAnyOrderEntriesOf(
            Map.of(NodeId.of("n1"), 3, NodeId.of("n2"), 3, NodeId.of("n3"), 3, NodeId.of("n4"), 3));
        assertOnlyOwnersHold(cluster, "history", finalValues);
      }
    }
  }
}
