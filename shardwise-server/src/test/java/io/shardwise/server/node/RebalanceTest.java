package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
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

  static Key key(int i) {
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

  /** Every key of {@code keys} is owned in {@code map} by the node {@code simulate}'s partitioner over {@code members} picks. */
  private static void assertKeysWhereTheSimulatorPutsThem(ShardMap map, String tableName, java.util.Collection<Integer> keys, List<String> members) {
    io.shardwise.core.map.Table table = map.table(tableName).orElseThrow();
    assertThat(table.layout().ringMembers()).as("the ring's members in joining order").isEqualTo(members);
    io.shardwise.core.partition.Partitioner lab = table.spec().create(members.size(), io.shardwise.core.partition.KeySample.empty());
    for (int i : keys) {
      byte[] pk = key(i).partitionKey();
      assertThat(table.shardFor(pk).owner().value()).as("owner of key %d in %s", i, tableName).isEqualTo(members.get(lab.nodeFor(pk)));
    }
  }

  /**
   * Eventually (within a drop grace), every replica of a replicated table holds each key's value in
   * {@code expected}, every follower is in sync, and no other node holds any of the keys.
   */
  private static void assertReplicasHold(TestCluster cluster, String tableName, Map<Integer, Long> expected) {
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      Table now = cluster.nodes.get(0).map().table(tableName).orElseThrow();
      now.shards().forEach(s -> assertThat(s.inSync()).as("in-sync followers of %s", s.id()).hasSameSizeAs(s.followers()));
      for (Map.Entry<Integer, Long> e : expected.entrySet()) {
        Key k = key(e.getKey());
        ShardAssignment s = now.shardFor(k.partitionKey());
        ShardRef ref = ShardRef.of(now, s.id().number());
        for (ShardwiseNode n : cluster.nodes) {
          var stored = n.store().get(ref, k.encode());
          if (s.isReplica(n.id())) {
            assertThat(stored).as("%s key %d on its replica %s", tableName, e.getKey(), n.id()).isNotNull();
            assertThat(Long.parseLong(new String(stored.value(), StandardCharsets.UTF_8).substring(1)))
                .as("%s key %d on %s", tableName, e.getKey(), n.id()).isEqualTo(e.getValue());
          } else {
            assertThat(stored).as("%s key %d left on %s (replicas %s)", tableName, e.getKey(), n.id(), s.replicas()).isNull();
          }
        }
      }
    });
  }

  /** Every key is stored only on its owner (once old copies are dropped) and holds {@code expected}. */
  private static void assertOnlyOwnersHold(TestCluster cluster, String tableName, Map<Integer, Long> expected) {
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      ShardMap map = cluster.nodes.get(0).map();
      Table table = map.table(tableName).orElseThrow();
      for (Map.Entry<Integer, Long> e : expected.entrySet()) {
        Key k = key(e.getKey());
        ShardAssignment s = table.shardFor(k.partitionKey());
        ShardRef ref = ShardRef.of(table, s.id().number());
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
      client.createTable("history", TableSpec.builder("slots").slots(12).replicas(1).build());
      client.createTable("arcs", TableSpec.builder("ring").vnodes(8).replicas(1).build());
      client.createTable("tokens", TableSpec.builder("tokens").tokens(4).seed(11).replicas(1).build());
      Map<Integer, Long> arcValues = new java.util.TreeMap<>();
      for (int i = 0; i < 300; i++) {
        client.put("arcs", key(i), value(i));
        client.put("tokens", key(i), value(i));
        arcValues.put(i, (long) i);
      }
      RebalanceRecords records = new RebalanceRecords(c);
      client.createTable("pinned", TableSpec.builder("slots").slots(12).replicas(1).build());
      records.updateSettings(s -> s.toBuilder().putTableModes("pinned", BalancerSettings.Mode.MANUAL).build());
      List<ShardAssignment> pinnedBefore = c.readMap().map().table("pinned").orElseThrow().shards();
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
        // n4 joined the rings with its own points: every key is where simulate's ring of four nodes
        // puts it, and only the keys that ring moves moved (all to n4).
        for (String ring : List.of("arcs", "tokens")) {
          assertKeysWhereTheSimulatorPutsThem(map, ring, arcValues.keySet(), List.of("n1", "n2", "n3", "n4"));
          assertOnlyOwnersHold(cluster, ring, arcValues);
        }
        // The sources' meters saw every move: bytes sent, one write pause per cutover, nothing left in flight.
        double bytes = 0;
        long pauses = 0;
        for (ShardwiseNode n : cluster.nodes) {
          bytes += n.metrics().counter("shardwise.move.bytes").count();
          pauses += n.metrics().timer("shardwise.move.write.pause").count();
          assertThat(n.metrics().get("shardwise.moves.in.flight").gauge().value()).isZero();
          assertThat(n.metrics().get("shardwise.move.catchup.lag").gauge().value()).isZero();
        }
        assertThat(pauses).isEqualTo(done.getMovesCount());
        assertThat(bytes).isGreaterThanOrEqualTo((double) done.getReportMovedBytes()); // the meter counts catch-up too
        assertThat(done.getReportMovedKeys()).isPositive();
        assertThat(done.getReportLongestPauseMicros()).isPositive();
        // A table set to manual is left alone by the balancer.
        assertThat(done.getMovesList()).noneMatch(m -> m.getTable().equals("pinned"));
        assertThat(map.table("pinned").orElseThrow().shards()).isEqualTo(pinnedBefore);
      }
    }
  }

  /**
   * A replicated table on three nodes when a fourth joins: the balancer moves replicas to it one at
   * a time (a follower built, in sync, the lead passed if the source led, the source removed) and
   * evens the leads, while a writer and a reader run under the history check. Afterwards every
   * replica holds every key's last value and no other node holds any.
   */
  @Test
  void addingANodeMovesReplicasAndLeadsOfAReplicatedTableWhileEveryAcknowledgedWriteSurvives() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      setMode(c, BalancerSettings.Mode.AUTO);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("replicated", TableSpec.builder("hashrange").shards(8).replicas(3).build());
      RebalanceRecords records = new RebalanceRecords(c);
      try (History h = new History(client, "replicated", 500, 7)) {
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > 200 && h.reads.get() > 200);
        cluster.nodes.add(cluster.startNode(4));
        PlanRecord plan = awaitPlan(records, p -> p.getMovesList().stream().anyMatch(MoveRecord::getReplica));
        PlanRecord done = awaitFinished(records, plan.getId());
        assertThat(done.getState()).as(done.toString()).isEqualTo(PlanRecord.State.DONE);
        List<MoveRecord> replicaMoves = done.getMovesList().stream().filter(m -> !m.getLeadership()).toList();
        assertThat(replicaMoves).as("24 replicas over 4 nodes: 6 reach n4").hasSize(6)
            .allMatch(m -> m.getReplica() && m.getTo().equals("n4") && m.getState() == MoveRecord.State.DONE);
        long writesAfter = h.writes.get();
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > writesAfter + 200);
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();

        Table table = c.readMap().map().table("replicated").orElseThrow();
        Map<NodeId, Integer> replicas = new java.util.TreeMap<>();
        table.shards().forEach(s -> s.replicas().forEach(n -> replicas.merge(n, 1, Integer::sum)));
        assertThat(replicas).containsOnlyKeys(NodeId.of("n1"), NodeId.of("n2"), NodeId.of("n3"), NodeId.of("n4"))
            .allSatisfy((n, count) -> assertThat(count).as("replicas on %s", n).isEqualTo(6));
        Map<NodeId, Integer> leads = shardsPerNode(c.readMap().map(), "replicated");
        assertThat(leads.values().stream().mapToInt(Integer::intValue).max().orElseThrow()
            - leads.values().stream().mapToInt(Integer::intValue).min().orElseThrow()).as("leads per node %s", leads).isLessThanOrEqualTo(1);
        assertThat(leads).containsKey(NodeId.of("n4"));
        table.shards().forEach(s -> assertThat(s.replicas()).hasSize(3).doesNotHaveDuplicates());

        // Every replica holds every key's last value; a node that gave its replica away keeps nothing (after the drop grace).
        assertReplicasHold(cluster, "replicated", finalValues);
      }
    }
  }

  /**
   * Replicated ring and tokens tables when a fourth node joins: its points cut the ranges they fall
   * in (replicated splits, each quiesced by its leader), it joins the rings, and it takes the leads
   * of exactly its arcs — every key then led by the node simulate's ring of four puts it on — while
   * a writer and a reader run under the history check. Every replica holds every key's last value.
   */
  @Test
  void aNodeJoiningReplicatedRingsLeadsExactlyItsArcsWhileEveryAcknowledgedWriteSurvives() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      setMode(c, BalancerSettings.Mode.AUTO);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("arcs", TableSpec.builder("ring").vnodes(8).replicas(2).build());
      client.createTable("tokens", TableSpec.builder("tokens").tokens(4).seed(11).replicas(3).build());
      Map<Integer, Long> tokenValues = new java.util.TreeMap<>();
      for (int i = 0; i < 300; i++) {
        client.put("tokens", key(i), value(i));
        tokenValues.put(i, (long) i);
      }
      List<String> four = List.of("n1", "n2", "n3", "n4");
      try (History h = new History(client, "arcs", 300, 13)) {
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > 200 && h.reads.get() > 200);
        cluster.nodes.add(cluster.startNode(4));
        await().atMost(PLAN_TIMEOUT).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
          ShardMap map = c.readMap().map();
          for (String ring : List.of("arcs", "tokens")) {
            assertKeysWhereTheSimulatorPutsThem(map, ring, h.acked.keySet(), four);
          }
        });
        long writesAfter = h.writes.get();
        await().atMost(Duration.ofSeconds(10)).until(() -> h.writes.get() > writesAfter + 200);
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
        assertThat(h.writes.get()).isPositive();
        assertReplicasHold(cluster, "arcs", finalValues);
        assertReplicasHold(cluster, "tokens", tokenValues);
      }
    }
  }

  @Test
  void suggestModeWaitsForApprovalRefusesAStalePlanAndStaleWritersLandOnTheNewOwner() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      RebalanceRecords records = new RebalanceRecords(c);
      assertThat(records.settings().getMode()).isEqualTo(BalancerSettings.Mode.SUGGEST); // the default
      ShardwiseClient stale = cluster.client(Routing.CLIENT);
      stale.createTable("suggest", TableSpec.builder("slots").slots(6).replicas(1).build());
      for (int i = 0; i < 300; i++) {
        stale.put("suggest", key(i), value(i));
      }
      cluster.nodes.add(cluster.startNode(4)); // its first start grants its replicas to its store: a map change of its own
      ShardMap before = c.readMap().map();
      PlanRecord first = awaitPlan(records, p -> p.getState() == PlanRecord.State.PENDING);
      assertThat(first.getMovesList()).isNotEmpty().allMatch(m -> m.getTo().equals("n4"));
      // The balancer looks again and again, and waits: nothing moves without approval.
      ShardwiseNode leader = cluster.nodes.stream().filter(n -> n.balancer().isLeader()).findFirst().orElseThrow();
      long ticks = leader.balancer().ticks();
      await().atMost(Duration.ofSeconds(10)).until(() -> leader.balancer().ticks() >= ticks + 5);
      assertThat(records.plan(first.getId()).orElseThrow().getState()).isEqualTo(PlanRecord.State.PENDING);
      assertThat(c.readMap().map().epoch()).isEqualTo(before.epoch());

      // The map changes (a table is created): the pending plan can no longer be applied.
      stale.createTable("other", TableSpec.builder("slots").slots(4).replicas(1).build());
      Rebalancing ops = new Rebalancing(c);
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> ops.approve(first.getId()))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("stale");
      assertThat(records.plan(first.getId()).orElseThrow().getState()).isEqualTo(PlanRecord.State.STALE);

      // The balancer re-plans at the new epoch; approving that one runs it.
      long epoch = c.readMap().map().epoch();
      PlanRecord second = awaitPlan(records, p -> p.getState() == PlanRecord.State.PENDING && p.getBaseEpoch() == epoch);
      ops.approve(second.getId());
      assertThat(awaitFinished(records, second.getId()).getState()).isEqualTo(PlanRecord.State.DONE);

      // A writer with the old map, talking straight to a moved shard's old owner, is refused with
      // WRONG_SHARD naming the new owner...
      ShardMap after = c.readMap().map();
      Table oldT = before.table("suggest").orElseThrow();
      Table newT = after.table("suggest").orElseThrow();
      int moved = -1;
      for (int i = 0; i < 300 && moved < 0; i++) {
        ShardAssignment was = oldT.shardFor(key(i).partitionKey());
        if (!newT.shardFor(key(i).partitionKey()).owner().equals(was.owner())) {
          moved = i;
        }
      }
      assertThat(moved).as("some key moved").isNotNegative();
      ShardAssignment was = oldT.shardFor(key(moved).partitionKey());
      var oldOwner = cluster.node(was.owner().value());
      var channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forTarget(oldOwner.address()).usePlaintext().build();
      try {
        var request = io.shardwise.proto.v1.PutRequest.newBuilder()
            .setHeader(io.shardwise.proto.v1.RequestHeader.newBuilder().setMapEpoch(before.epoch()))
            .setTable("suggest").setKey(io.shardwise.proto.v1.Key.newBuilder()
                .setPartitionKey(com.google.protobuf.ByteString.copyFrom(key(moved).partitionKey())))
            .setValue(com.google.protobuf.ByteString.copyFromUtf8("v999999")).build();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> io.shardwise.proto.v1.DataServiceGrpc.newBlockingStub(channel).put(request))
            .satisfies(e -> {
              assertThat(io.shardwise.proto.Errors.code(e)).isEqualTo(io.shardwise.proto.v1.ErrorInfo.Code.WRONG_SHARD);
              assertThat(io.shardwise.proto.Errors.info(e).orElseThrow().getOwnerNode()).isEqualTo("n4");
            });
      } finally {
        channel.shutdownNow();
      }
      // ...and the shard-aware client still holding the old map retries and lands on the new owner.
      assertThat(stale.mapEpoch()).isEqualTo(before.epoch() + 1); // it created "other", nothing since
      stale.put("suggest", key(moved), value(1_000_000));
      ShardAssignment now = newT.shardFor(key(moved).partitionKey());
      assertThat(now.owner().value()).isEqualTo("n4");
      var stored = cluster.node("n4").store().get(ShardRef.of(newT, now.id().number()), key(moved).encode());
      assertThat(seqOf(new Versioned(stored.value(), stored.version()))).isEqualTo(1_000_000);
      Map<Integer, Long> expected = new java.util.TreeMap<>();
      for (int i = 0; i < 300; i++) {
        expected.put(i, i == moved ? 1_000_000L : i);
      }
      assertOnlyOwnersHold(cluster, "suggest", expected);
    }
  }

  @Test
  void killingTheDestinationDuringTheCopyRollsBackAndALaterPlanSucceeds() throws Exception {
    java.util.concurrent.CountDownLatch copying = new java.util.concurrent.CountDownLatch(1);
    try (TestCluster cluster = new TestCluster(dir, 0, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      RebalanceRecords records = startThrottledAutoCluster(cluster, c, copying);
      records.updateSettings(s -> s.toBuilder().setMaxMoveAttempts(2).build()); // fail fast: the test waits for the failure
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("crash", TableSpec.builder("slots").slots(8).replicas(1).build());
      loadIncompressible(client, "crash", 3000, 3); // ~3 MB: a shard takes seconds to copy at 200 kB/s
      try (History h = new History(client, "crash", 300, 7)) {
        ShardwiseNode n4 = cluster.startNode(4);
        cluster.nodes.add(n4);
        PlanRecord plan = awaitPlan(records, p -> p.getMovesCount() > 0);
        assertThat(copying.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("a copy started").isTrue();
        n4.close();
        cluster.nodes.remove(n4);

        // The move rolls back: the plan fails, the source still owns the shard and takes writes.
        PlanRecord failed = awaitFinished(records, plan.getId());
        assertThat(failed.getState()).as(failed.toString()).isEqualTo(PlanRecord.State.FAILED);
        Table t = c.readMap().map().table("crash").orElseThrow();
        List<MoveRecord> rolledBack = failed.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.FAILED).toList();
        assertThat(rolledBack).isNotEmpty();
        for (MoveRecord m : rolledBack) {
          assertThat(t.shards().get((int) m.getNumber()).owner().value()).as("owner of %s/%d", m.getTable(), m.getNumber())
              .isEqualTo(m.getFrom());
        }
        // ...and takes writes: a key of a rolled-back shard is written on the source. (Shards that
        // did cut over before the kill are unavailable until n4 is back: there is no replica.)
        MoveRecord back = rolledBack.get(0);
        int probe = 0;
        while (t.shardFor(Key.of(("probe-" + probe).getBytes(StandardCharsets.UTF_8)).partitionKey()).id().number() != back.getNumber()) {
          probe++;
        }
        Key probeKey = Key.of(("probe-" + probe).getBytes(StandardCharsets.UTF_8));
        client.put("crash", probeKey, value(7));
        assertThat(cluster.node(back.getFrom()).store().get(ShardRef.of(t, back.getNumber()), probeKey.encode())).isNotNull();

        // Back with the same data directory: its partial copy is dropped, and a new plan runs.
        records.updateSettings(s -> s.toBuilder().setBandwidthBytesPerSecond(0).build());
        cluster.nodes.add(cluster.startNode(4));
        PlanRecord retry = awaitPlan(records, p -> !p.getId().equals(plan.getId()) && p.getMovesCount() > 0);
        assertThat(awaitFinished(records, retry.getId()).getState()).isEqualTo(PlanRecord.State.DONE);
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
        assertThat(shardsPerNode(c.readMap().map(), "crash")).containsEntry(NodeId.of("n4"), 2);
        assertOnlyOwnersHold(cluster, "crash", finalValues);
        for (int i = 0; i < 3000; i += 97) {
          assertThat(client.get("crash", Key.of(("bulk-" + i).getBytes(StandardCharsets.UTF_8)))).isPresent();
        }
      }
    }
  }

  @Test
  void stoppingTheSourceDuringCatchUpLosesNoAcknowledgedWrite() throws Exception {
    java.util.concurrent.CountDownLatch catchingUp = new java.util.concurrent.CountDownLatch(1);
    try (TestCluster cluster = new TestCluster(dir, 0, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      for (int i = 1; i <= 3; i++) {
        cluster.nodes.add(cluster.startNode(i, cfg -> cfg.withMoveListener(p -> {
          if (p.getPhase() == MoveProgress.Phase.CATCHING_UP && catchingUp.getCount() > 0) {
            catchingUp.countDown();
            try {
              Thread.sleep(2_000); // hold the move in catch-up while the test stops this node
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        })));
      }
      RebalanceRecords records = new RebalanceRecords(c);
      setMode(c, BalancerSettings.Mode.AUTO);
      records.updateSettings(s -> s.toBuilder().setMaxMovesPerNode(1).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("source", TableSpec.builder("slots").slots(8).replicas(1).build());
      try (History h = new History(client, "source", 300, 11)) {
        cluster.nodes.add(cluster.startNode(4));
        PlanRecord plan = awaitPlan(records, p -> p.getMovesCount() > 0);
        assertThat(catchingUp.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("a move reached catch-up").isTrue();
        String sourceId = records.plan(plan.getId()).orElseThrow().getMovesList().stream()
            .filter(m -> m.getState() == MoveRecord.State.MOVING).findFirst().orElseThrow().getFrom();
        int index = cluster.nodes.indexOf(cluster.node(sourceId));
        cluster.nodes.get(index).close();
        // The move cannot cut over from a stopped node: the source still owns the shard.
        Table t = c.readMap().map().table("source").orElseThrow();
        assertThat(t.shards().stream().filter(s -> s.owner().value().equals(sourceId))).isNotEmpty();
        // Back with its data: it serves again, and the balancer finishes the job.
        cluster.nodes.set(index, cluster.startNode(Integer.parseInt(sourceId.substring(1)), cfg -> cfg));
        await().atMost(PLAN_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
          Map<NodeId, Integer> per = shardsPerNode(c.readMap().map(), "source");
          return per.getOrDefault(NodeId.of("n4"), 0) == 2 && records.plans().stream().allMatch(p -> RebalanceRecords.finished(p.getState()));
        });
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
        assertOnlyOwnersHold(cluster, "source", finalValues);
      }
    }
  }

  @Test
  void autoModeNeverMovesDataOffANodeThatIsOnlySlow() throws Exception {
    io.grpc.ServerInterceptor slow = new io.grpc.ServerInterceptor() {
      @Override
      public <Q, R> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, R> call, io.grpc.Metadata headers,
          io.grpc.ServerCallHandler<Q, R> next) {
        try {
          Thread.sleep(1_500); // every call to this node takes 1.5 s more
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return next.startCall(call, headers);
      }
    };
    try (TestCluster cluster = new TestCluster(dir, 0, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      cluster.nodes.add(cluster.startNode(1));
      cluster.nodes.add(cluster.startNode(2, cfg -> cfg.withInterceptor(slow)));
      cluster.nodes.add(cluster.startNode(3));
      setMode(c, BalancerSettings.Mode.AUTO);
      new RebalanceRecords(c).updateSettings(s -> s.toBuilder().setAbsentGraceSeconds(1).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("slow", TableSpec.builder("slots").slots(6).replicas(1).build());
      ShardMap before = c.readMap().map();
      ShardwiseNode leader = cluster.nodes.stream().filter(n -> n.balancer().isLeader()).findFirst().orElseThrow();
      long ticks = leader.balancer().ticks();
      // A new table changes the map, so the balancer plans again, with n2 slow to answer.
      client.createTable("slow2", TableSpec.builder("slots").slots(6).replicas(1).build());
      await().atMost(Duration.ofSeconds(30)).until(() -> leader.balancer().ticks() >= ticks + 10);
      assertThat(new RebalanceRecords(c).plans()).isEmpty();
      assertThat(c.readMap().map().table("slow").orElseThrow().shards()).isEqualTo(before.table("slow").orElseThrow().shards());
      assertThat(shardsPerNode(c.readMap().map(), "slow2")).containsEntry(NodeId.of("n2"), 2);
    }
  }

  @Test
  void whenTheBalancerLeaderDiesMidPlanAnotherNodeLeadsAndTheClusterConverges() throws Exception {
    java.util.concurrent.CountDownLatch copying = new java.util.concurrent.CountDownLatch(1);
    try (TestCluster cluster = new TestCluster(dir, 0, io.shardwise.server.rpc.Limits.DEFAULT);
        Coordinator c = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      RebalanceRecords records = startThrottledAutoCluster(cluster, c, copying);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("leader", TableSpec.builder("slots").slots(8).replicas(1).build());
      loadIncompressible(client, "leader", 2000, 5);
      try (History h = new History(client, "leader", 300, 13)) {
        cluster.nodes.add(cluster.startNode(4));
        PlanRecord plan = awaitPlan(records, p -> p.getMovesCount() > 0);
        assertThat(copying.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("a copy started").isTrue();
        ShardwiseNode leader = cluster.nodes.stream().filter(n -> n.balancer().isLeader()).findFirst().orElseThrow();
        int index = cluster.nodes.indexOf(leader);
        leader.close();
        // Another node leads and takes over the plan (moves the old leader was driving are re-read
        // from the map); moves to or from the old leader wait with backoff until it comes back,
        // with its data, and the plan ends.
        await().atMost(PLAN_TIMEOUT).until(() -> cluster.nodes.stream().anyMatch(n -> n != leader && n.balancer().isLeader()));
        records.updateSettings(s -> s.toBuilder().setBandwidthBytesPerSecond(0).build());
        cluster.nodes.set(index, cluster.startNode(Integer.parseInt(leader.id().value().substring(1))));
        assertThat(awaitFinished(records, plan.getId()).getMovesList())
            .noneMatch(m -> m.getState() == MoveRecord.State.MOVING || m.getState() == MoveRecord.State.WAITING);
        await().atMost(PLAN_TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() ->
            shardsPerNode(c.readMap().map(), "leader").getOrDefault(NodeId.of("n4"), 0) == 2
                && records.plans().stream().allMatch(p -> RebalanceRecords.finished(p.getState())));
        Map<Integer, Long> finalValues = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
        assertThat(shardsPerNode(c.readMap().map(), "leader")).containsOnly(Map.entry(NodeId.of("n1"), 2), Map.entry(NodeId.of("n2"), 2),
            Map.entry(NodeId.of("n3"), 2), Map.entry(NodeId.of("n4"), 2));
        assertOnlyOwnersHold(cluster, "leader", finalValues);
        for (int i = 0; i < 2000; i += 89) {
          assertThat(client.get("leader", Key.of(("bulk-" + i).getBytes(StandardCharsets.UTF_8)))).isPresent();
        }
      }
    }
  }

  /**
   * Nodes n1..n3 whose move listener opens {@code copying} once a snapshot is being copied, and a
   * balancer in auto mode at 200 kB/s and one move per node, so a move of ~1 MB takes seconds.
   */
  private static RebalanceRecords startThrottledAutoCluster(TestCluster cluster, Coordinator c,
      java.util.concurrent.CountDownLatch copying) {
    for (int i = 1; i <= 3; i++) {
      cluster.nodes.add(cluster.startNode(i, cfg -> cfg.withMoveListener(p -> {
        if (p.getPhase() == MoveProgress.Phase.COPYING && p.getCopiedBytes() > 0) {
          copying.countDown();
        }
      })));
    }
    RebalanceRecords records = new RebalanceRecords(c);
    records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
        .setBandwidthBytesPerSecond(200_000).setMaxMovesPerNode(1).build());
    return records;
  }

  /** {@code rows} keys bulk-0… each holding the same 1,000 random (incompressible) bytes. */
  private static void loadIncompressible(ShardwiseClient client, String table, int rows, long seed) {
    byte[] filler = new byte[1000];
    new java.util.Random(seed).nextBytes(filler);
    List<java.util.Map.Entry<Key, byte[]>> batch = new ArrayList<>();
    for (int i = 0; i < rows; i++) {
      batch.add(java.util.Map.entry(Key.of(("bulk-" + i).getBytes(StandardCharsets.UTF_8)), filler));
      if (batch.size() == 500 || i == rows - 1) {
        client.batchPut(table, batch);
        batch.clear();
      }
    }
  }

}
