package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardDescription;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableDescription;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.Versioned;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicated tables on a real cluster (RocksDB nodes, ZooKeeper, gRPC): every write is on every
 * in-sync replica's store before it is acknowledged (the followers apply it by the next heartbeat),
 * reads and conditional writes at the leader see every acknowledged write, and the table says where
 * its replicas are.
 */
@Tag("integration")
class ReplicationTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyAcknowledgedWriteIsOnEveryReplicaAndReadsSeeIt() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      // No --replicas: the default, three replicas on a cluster of three nodes, min in-sync two.
      TableDescription created = client.createTable("r", TableSpec.builder("hashrange").shards(3).build());
      assertThat(created.replicas()).isEqualTo(3);
      assertThat(created.minInSync()).isEqualTo(2);
      for (ShardDescription s : created.shards()) {
        assertThat(s.followers()).hasSize(2).doesNotContain(s.owner()).doesNotHaveDuplicates();
        assertThat(s.inSync()).containsExactlyElementsOf(s.followers());
      }
      for (int i = 0; i < 300; i++) {
        assertThat(client.put("r", Key.of("k" + i), b("v" + i))).isEqualTo(1);
      }
      // Each acknowledged put reached both in-sync followers of its shard, in the leaders' append messages.
      io.shardwise.server.replication.Replicator.Sent sent = cluster.nodes.stream().map(n -> n.replicator().sent())
          .reduce(io.shardwise.server.replication.Replicator.Sent.NONE, io.shardwise.server.replication.Replicator.Sent::plus);
      assertThat(sent.entries()).as("entries sent in %d messages", sent.messages()).isGreaterThanOrEqualTo(2 * 300);
      assertThat(sent.messages()).isPositive();
      for (int i = 0; i < 300; i += 7) {
        assertThat(new String(client.get("r", Key.of("k" + i)).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v" + i);
      }
      // Conditional writes and deletes through the log.
      assertThat(client.putIfVersion("r", Key.of("k1"), b("again"), 1)).isEqualTo(2);
      assertThatThrownBy(() -> client.putIfVersion("r", Key.of("k1"), b("stale"), 1))
          .isInstanceOf(io.shardwise.client.VersionMismatchException.class);
      assertThat(client.delete("r", Key.of("k2"))).isTrue();
      assertThat(client.get("r", Key.of("k2"))).isEmpty();

      // Every replica's store holds every key (followers apply up to the commit they have heard of).
      Table t = cluster.nodes.get(0).map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (int i = 0; i < 300; i++) {
          Key k = Key.of("k" + i);
          ShardAssignment a = t.shardFor(k.partitionKey());
          ShardRef ref = ShardRef.of(t, a.id().number());
          for (String replica : a.replicas().stream().map(n -> n.value()).toList()) {
            Versioned v = cluster.node(replica).store().get(ref, k.encode());
            if (i == 2) {
              assertThat(v).as("deleted on %s", replica).isNull();
            } else {
              assertThat(v).as("k%d on %s", i, replica).isNotNull();
              assertThat(v.version()).isEqualTo(i == 1 ? 2 : 1);
            }
          }
        }
      });

      // A whole-shard move is for tables of one replica: a replicated shard's leader refuses it up front.
      ShardAssignment first = t.shards().get(0);
      assertThatThrownBy(() -> TestCluster.moveShard(cluster.node(first.owner().value()), t, first, first.followers().get(0).value(), "whole"))
          .hasMessageContaining("FAILED_PRECONDITION").hasMessageContaining("a whole-shard move is for tables of one replica");
    }
  }

  /**
   * Every replica of each key's shard holds the value a history checker last saw written to it
   * ({@code last}: key number to value number) — once followers have heard the last commit, with
   * the next message or heartbeat.
   */
  private static void everyReplicaHoldsTheLastValues(TestCluster cluster, Table t, java.util.Map<Integer, Long> last) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> everyReplicaHoldsNow(cluster, t, last));
  }

  private static void everyReplicaHoldsNow(TestCluster cluster, Table t, java.util.Map<Integer, Long> last) {
    for (var e : last.entrySet()) {
      Key k = RebalanceTest.key(e.getKey());
      ShardAssignment a = t.shardFor(k.partitionKey());
      for (var replica : a.replicas()) {
        Versioned v = cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), k.encode());
        assertThat(v).as("key %d on %s", e.getKey(), replica).isNotNull();
        assertThat(new String(v.value(), StandardCharsets.UTF_8)).as("key %d on %s", e.getKey(), replica).isEqualTo("v" + e.getValue());
      }
    }
  }

  /** Three nodes whose followers drop out of the in-sync set after a second of silence (the default is 5 s). */
  private TestCluster quickCluster() {
    TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT);
    for (int i = 1; i <= 3; i++) {
      cluster.nodes.add(startQuick(cluster, i));
    }
    return cluster;
  }

  private static ShardwiseNode startQuick(TestCluster cluster, int i) {
    return cluster.startNode(i, c -> c.withReplication(io.shardwise.server.replication.ReplicationConfig.DEFAULT
        .withLagMax(Duration.ofSeconds(1))));
  }

  @Test
  void aTableOfOneReplicaBeginsToKeepReplicasOnlineWithoutLosingAWriteAndFailsOverAfterwards() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      ShardwiseNode any = cluster.nodes.get(0);
      java.util.List<Key> kept = java.util.stream.IntStream.range(0, 400).mapToObj(i -> Key.of("kept-" + i)).toList();
      kept.forEach(k -> client.put("r", k, k.partitionKey()));
      kept.subList(0, 50).forEach(k -> client.delete("r", k));
      java.util.Map<Integer, Long> last;
      try (RebalanceTest.History h = new RebalanceTest.History(client, "r", 300, 23)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > 200 && h.reads.get() > 100);
        long epochBefore = any.map().epoch();
        TableDescription on = client.setReplication("r", 3, 0);
        assertThat(on.replicas()).isEqualTo(3);
        assertThat(on.minInSync()).as("the leaders alone acknowledge until it is raised").isEqualTo(1);
        Table t = any.map().table("r").orElseThrow();
        assertThat(t.shards()).allSatisfy(s -> assertThat(s.epoch()).as("%s fenced at a new epoch", s.id()).isGreaterThan(epochBefore));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(any.map().table("r").orElseThrow().shards())
            .allSatisfy(s -> assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2)));
        long writes = h.writes.get();
        client.setReplication("r", 3, 2);
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes + 200);
        last = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
      }
      Table t = any.map().table("r").orElseThrow();
      for (int i = 0; i < kept.size(); i++) {
        Key k = kept.get(i);
        ShardAssignment a = t.shardFor(k.partitionKey());
        for (var replica : a.replicas()) {
          Versioned v = cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), k.encode());
          if (i < 50) {
            assertThat(v).as("%s deleted, on %s", k, replica).isNull();
          } else {
            assertThat(v).as("%s on %s", k, replica).isNotNull();
          }
        }
      }
      everyReplicaHoldsTheLastValues(cluster, t, last);

      // The node that led shard 0 stops: another replica leads it with every key.
      ShardwiseNode victim = cluster.node(t.shards().get(0).owner().value());
      victim.close();
      cluster.nodes.remove(victim);
      ShardwiseNode survivor = cluster.nodes.get(0);
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(survivor.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> assertThat(s.owner()).isNotEqualTo(victim.id())));
      for (int i = 50; i < kept.size(); i++) {
        assertThat(client.get("r", kept.get(i))).as("%s after the failover", kept.get(i)).isPresent();
      }
      for (var e : last.entrySet()) {
        assertThat(client.get("r", RebalanceTest.key(e.getKey()))).as("key %d after the failover", e.getKey()).get()
            .satisfies(v -> assertThat(new String(v.value(), StandardCharsets.UTF_8)).isEqualTo("v" + e.getValue()));
      }
    }
  }

  @Test
  void aReplicatedTableGoesBackToOneReplicaAndOnAgainOnlineWithoutLosingAWrite() throws Exception {
    // Short logs, so the followers' logs are trimmed (they start past offset 1) as a busy table's are,
    // and a drop grace longer than the test, so their old copies and logs are still there when the
    // table keeps replicas again.
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      for (int i = 1; i <= 3; i++) {
        cluster.nodes.add(cluster.startNode(i, c -> c.withDropGrace(Duration.ofSeconds(60))
            .withReplication(io.shardwise.server.replication.ReplicationConfig.DEFAULT.withLagMax(Duration.ofSeconds(1)).withLogRetainEntries(20))));
      }
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(4).replicas(3).build());
      ShardwiseNode any = cluster.nodes.get(0);
      java.util.Map<Integer, Long> last;
      try (RebalanceTest.History h = new RebalanceTest.History(client, "r", 300, 29)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > 200 && h.reads.get() > 100);
        TableDescription off = client.setReplication("r", 1, 0);
        assertThat(off.replicas()).isEqualTo(1);
        assertThat(off.minInSync()).isEqualTo(1);
        assertThat(any.map().table("r").orElseThrow().shards()).allSatisfy(s -> assertThat(s.followers()).as("%s", s.id()).isEmpty());
        long writes = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes + 50); // well within the followers' drop grace
        for (ShardwiseNode n : cluster.nodes) {
          for (var s : any.map().table("r").orElseThrow().shards()) {
            if (s.owner().equals(n.id())) {
              assertThat(n.store().replicaStorage().state(ShardRef.of(any.map().table("r").orElseThrow(), s.id().number())).lastOffset())
                  .as("the log of %s on its leader %s", s.id(), n.id()).isZero();
            }
          }
        }

        // On again at once: the followers' old copies and logs (in their trash grace) hold none of
        // the writes taken meanwhile, and must not pass for a match.
        client.setReplication("r", 3, 0);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(any.map().table("r").orElseThrow().shards())
            .allSatisfy(s -> assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2)));
        client.setReplication("r", 3, 2);
        long writes2 = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes2 + 200);
        last = h.stopAndCheck();
        assertThat(h.violations).isEmpty();
      }
      everyReplicaHoldsTheLastValues(cluster, any.map().table("r").orElseThrow(), last);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> replicasHoldTheSame(cluster, any.map().table("r").orElseThrow()));
    }
  }

  /** Every replica of each shard of {@code t} holds the same live keys and values as its leader. */
  private static void replicasHoldTheSame(TestCluster cluster, Table t) {
    for (ShardAssignment a : t.shards()) {
      ShardRef ref = ShardRef.of(t, a.id().number());
      java.util.Map<String, String> leader = liveData(cluster.node(a.owner().value()), ref);
      for (var f : a.followers()) {
        assertThat(liveData(cluster.node(f.value()), ref)).as("%s on %s against its leader %s", a.id(), f, a.owner()).isEqualTo(leader);
      }
    }
  }

  private static java.util.Map<String, String> liveData(ShardwiseNode node, ShardRef ref) {
    java.util.Map<String, String> out = new java.util.TreeMap<>();
    byte[] from = new byte[0];
    do {
      var page = node.store().scan(ref, from, null, 1000);
      page.entries().forEach(e -> out.put(java.util.HexFormat.of().formatHex(e.key()), java.util.HexFormat.of().formatHex(e.value())
          + "@" + e.version()));
      from = page.resumeFrom();
    } while (from != null);
    return out;
  }

  @Test
  void aFollowerAddedToTheHalvesOfASplitIsBuiltWithTheirWholeData() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(2).build());
      java.util.List<Key> keys = java.util.stream.IntStream.range(0, 300).mapToObj(i -> Key.of("k" + i)).toList();
      keys.forEach(k -> client.put("r", k, k.partitionKey()));
      ShardwiseNode any = cluster.nodes.get(0);
      client.splitShard("r", any.map().table("r").orElseThrow().shards().get(0).id().number());
      client.setReplication("r", 3, 0);
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(any.map().table("r").orElseThrow().shards())
          .hasSize(2).allSatisfy(s -> assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2)));
      Table t = any.map().table("r").orElseThrow();
      for (Key k : keys) {
        ShardAssignment a = t.shardFor(k.partitionKey());
        for (var replica : a.replicas()) {
          assertThat(cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), k.encode()))
              .as("%s on %s", new String(k.partitionKey(), StandardCharsets.UTF_8), replica).isNotNull();
        }
      }
    }
  }

  @Test
  void whenALeadersNodeStopsAnInSyncFollowerLeadsAndNoAcknowledgedWriteIsLost() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(3).replicas(3).build());
      java.util.Map<String, String> acknowledged = new java.util.concurrent.ConcurrentHashMap<>();
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.atomic.AtomicInteger unknown = new java.util.concurrent.atomic.AtomicInteger();
      Thread writer = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          String k = "k" + (i % 500);
          try {
            client.put("r", Key.of(k), b("v" + i));
            acknowledged.put(k, "v" + i);
          } catch (ShardwiseException e) {
            unknown.incrementAndGet(); // refused or unknown during the failover: not counted as acknowledged
          }
        }
      });
      writer.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> acknowledged.size() >= 200);
      ShardwiseNode victim = cluster.node(cluster.nodes.get(0).map().table("r").orElseThrow().shards().get(0).owner().value());
      java.util.Set<ShardRef> led = new java.util.HashSet<>();
      Table before = victim.map().table("r").orElseThrow();
      before.shards().stream().filter(s -> s.owner().equals(victim.id())).forEach(s -> led.add(ShardRef.of(before, s.id().number())));
      victim.close();
      cluster.nodes.remove(victim);
      ShardwiseNode survivor = cluster.nodes.get(0);
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(survivor.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> assertThat(s.owner()).isNotEqualTo(victim.id())));
      int acknowledgedAtFailover = acknowledged.size();
      long written = acknowledged.size();
      await().atMost(Duration.ofSeconds(20)).until(() -> acknowledged.size() > acknowledgedAtFailover || written < 500);
      // Writes go on with two of three replicas in sync (min in-sync 2).
      String probe = "after-failover";
      client.put("r", Key.of(probe), b("yes"));
      acknowledged.put(probe, "yes");

      // The stopped node comes back as a follower, catches up and is in sync again.
      cluster.nodes.add(startQuick(cluster, Integer.parseInt(victim.id().value().substring(1))));
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(survivor.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2)));
      stop.set(true);
      writer.join();
      for (var e : acknowledged.entrySet()) {
        assertThat(client.get("r", Key.of(e.getKey()))).as(e.getKey()).get()
            .satisfies(v -> assertThat(new String(v.value(), StandardCharsets.UTF_8)).isEqualTo(e.getValue()));
      }
      assertThat(led).as("the stopped node led shards").isNotEmpty();
    }
  }

  /**
   * With a read lease (`--read-lease`), leaders answer reads without a round to their followers,
   * and reads stay linearizable while a leader's node stops and another replica takes over: the
   * history checker finds no stale read, and most reads passed their barrier at once. (The
   * simulation cuts a leased leader off and runs clocks at different rates.)
   */
  @Test
  void readsOnALeaseStayLinearizableThroughAFailover() throws Exception {
    java.util.function.UnaryOperator<io.shardwise.server.node.NodeConfig> leased = c -> c.withReplication(
        io.shardwise.server.replication.ReplicationConfig.DEFAULT.withLagMax(Duration.ofSeconds(1)).withReadLease(Duration.ofMillis(500)));
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      for (int i = 1; i <= 3; i++) {
        cluster.nodes.add(cluster.startNode(i, leased));
      }
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(3).replicas(3).build());
      try (RebalanceTest.History h = new RebalanceTest.History(client, "r", 300, 31)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > 300 && h.reads.get() > 300);
        ShardwiseNode victim = cluster.node(cluster.nodes.get(0).map().table("r").orElseThrow().shards().get(0).owner().value());
        victim.close();
        cluster.nodes.remove(victim);
        ShardwiseNode survivor = cluster.nodes.get(0);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(survivor.map().table("r").orElseThrow().shards())
            .allSatisfy(s -> assertThat(s.owner()).isNotEqualTo(victim.id())));
        long reads = h.reads.get();
        long writes = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.reads.get() > reads + 300 && h.writes.get() > writes + 300);
        h.stopAndCheck();
        assertThat(h.violations).isEmpty();
      }
      long atOnce = 0;
      long afterRound = 0;
      for (ShardwiseNode n : cluster.nodes) {
        atOnce += n.replicator().readBarriers().atOnce();
        afterRound += n.replicator().readBarriers().afterRound();
      }
      assertThat(atOnce).as("reads on a lease (%d after a round)", afterRound).isGreaterThan(afterRound);
    }
  }

  /**
   * A follower away while its leader wrote past what logs keep (20 entries here) comes back, gets
   * the shard as a snapshot over gRPC (RocksDB SST, installed crash-safely), takes the entries after
   * it, joins the in-sync set — and can then lead with every acknowledged write.
   */
  @Test
  void aFollowerFurtherBehindThanTheLogCatchesUpFromASnapshotAndCanLead() throws Exception {
    java.util.function.UnaryOperator<NodeConfig> shortLogs = c -> c.withReplication(io.shardwise.server.replication.ReplicationConfig.DEFAULT
        .withLagMax(Duration.ofSeconds(1)).withLogRetainEntries(20));
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      for (int i = 1; i <= 3; i++) {
        cluster.nodes.add(cluster.startNode(i, shortLogs));
      }
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(3).build());
      client.put("r", Key.of("first"), b("0"));
      ShardAssignment a = cluster.nodes.get(0).map().table("r").orElseThrow().shards().get(0);
      String away = a.followers().get(0).value();
      String other = a.followers().get(1).value();
      ShardwiseNode stopped = cluster.node(away);
      stopped.close();
      cluster.nodes.remove(stopped);
      ShardwiseNode leader = cluster.node(a.owner().value());
      await().atMost(Duration.ofSeconds(20)).until(() -> leader.map().table("r").orElseThrow().shards().get(0).inSync().size() == 1);
      for (int i = 0; i < 300; i++) {
        client.put("r", Key.of("k" + i), b("v" + i));
      }
      Table t = leader.map().table("r").orElseThrow();
      ShardRef ref = ShardRef.of(t, 0);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(leader.store().replicaStorage().state(ref).baseOffset())
          .as("the leader's log no longer starts at the beginning").isGreaterThan(200));

      ShardwiseNode back = cluster.startNode(Integer.parseInt(away.substring(1)), shortLogs);
      cluster.nodes.add(back);
      await().atMost(Duration.ofSeconds(30)).until(() -> leader.map().table("r").orElseThrow().shards().get(0).inSync().size() == 2);
      assertThat(back.store().replicaStorage().state(ref).baseOffset()).as("its log starts at the snapshot").isGreaterThan(200);
      for (int i = 0; i < 300; i += 13) {
        assertThat(back.store().get(ref, Key.of("k" + i).encode())).as("k%d installed", i).isNotNull();
      }

      // It leads: the other follower and then the leader stop; the controller picks the only in-sync replica left.
      ShardwiseNode second = cluster.node(other);
      second.close();
      cluster.nodes.remove(second);
      await().atMost(Duration.ofSeconds(20)).until(() -> leader.map().table("r").orElseThrow().shards().get(0).inSync().size() == 1);
      leader.close();
      cluster.nodes.remove(leader);
      await().atMost(Duration.ofSeconds(30)).until(() -> back.map().table("r").orElseThrow().shards().get(0).owner().equals(back.id()));
      ShardwiseClient survivor = cluster.client(Routing.CLIENT); // the first client's seeds are all gone (the node came back on a new port)
      assertThat(survivor.get("r", Key.of("first"))).isPresent();
      for (int i = 0; i < 300; i++) {
        assertThat(survivor.get("r", Key.of("k" + i))).as("k%d after the failover", i).get()
            .satisfies(v -> assertThat(v.value()).isNotEmpty());
      }
    }
  }

  /**
   * A node comes back under its old id on a wiped data directory. Before it serves it leaves every
   * in-sync set and hands the shards it led to in-sync followers, in the change that grants its
   * replicas to its new store; from then on the map names it in sync only for data it holds.
   * Checked where it matters: the moment the other two nodes stop, every shard the wiped node
   * leads or is in sync for is whole on it; and after they return, every acknowledged key is read.
   */
  @Test
  void aNodeRestartedOnAWipedDataDirectoryIsInSyncOnlyForDataItHolds() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(6).replicas(3).build());
      int keys = 600;
      for (int i = 0; i < keys; i++) {
        client.put("r", Key.of("k" + i), b("v" + i));
      }
      ShardwiseNode wiped = cluster.node("n2");
      String oldStore = wiped.store().storeId();
      Table before = wiped.map().table("r").orElseThrow();
      assertThat(before.shards()).as("n2 leads some shards and is in sync for others")
          .anyMatch(s -> s.owner().equals(wiped.id())).anyMatch(s -> s.inSync().contains(wiped.id()));
      wiped.close();
      cluster.nodes.remove(wiped);
      deleteTree(dir.resolve("n2"));

      ShardwiseNode back = startQuick(cluster, 2);
      cluster.nodes.add(back);
      assertThat(back.store().storeId()).isNotEqualTo(oldStore);
      // The other two stop at once: whatever the map trusts n2 with now must be on n2.
      java.util.List<ShardwiseNode> others = cluster.nodes.stream().filter(n -> n != back).toList();
      io.shardwise.core.map.ShardMap trusted;
      try (var zk = io.shardwise.server.coordination.Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10),
          Duration.ofSeconds(10))) {
        trusted = zk.readMap().map();
      }
      for (ShardwiseNode n : others) {
        n.close();
        cluster.nodes.remove(n);
      }
      Table t = trusted.table("r").orElseThrow();
      int checked = 0;
      for (int i = 0; i < keys; i++) {
        Key k = Key.of("k" + i);
        ShardAssignment s = t.shardFor(k.partitionKey());
        if (s.owner().equals(back.id()) || s.inSync().contains(back.id())) {
          checked++;
          assertThat(back.store().get(ShardRef.of(t, s.id().number()), k.encode()))
              .as("k%d: the map trusts n2 with shard %s (leader %s, in sync %s) at epoch %d", i, s.id(), s.owner(), s.inSync(), trusted.epoch())
              .isNotNull();
        }
      }
      System.out.printf("wiped node: %d of %d keys are on shards the map trusted it with when the others stopped%n", checked, keys);
      assertThat(trusted.storeOf(back.id())).as("the map grants n2's replicas to its new store").contains(back.store().storeId());

      for (ShardwiseNode n : others) {
        cluster.nodes.add(startQuick(cluster, Integer.parseInt(n.id().value().substring(1))));
      }
      ShardwiseClient after = cluster.client(Routing.CLIENT);
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
        for (int i = 0; i < keys; i += 1) {
          assertThat(after.get("r", Key.of("k" + i))).as("k%d", i).isPresent();
        }
      });
      await().atMost(Duration.ofSeconds(60)).until(() -> back.map().table("r").orElseThrow().shards().stream()
          .allMatch(s -> s.inSync().size() == 2));
    }
  }

  private static void deleteTree(Path root) throws java.io.IOException {
    try (var paths = java.nio.file.Files.walk(root)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        java.nio.file.Files.delete(p);
      }
    }
  }

  @Test
  void withFewerInSyncReplicasThanTheMinimumWritesAreRefusedNotLost() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(3).build());
      client.put("r", Key.of("before"), b("1"));
      ShardAssignment a = cluster.nodes.get(0).map().table("r").orElseThrow().shards().get(0);
      // Both followers stop: the leader drops them from the in-sync set, and then refuses writes.
      for (var f : a.followers()) {
        ShardwiseNode n = cluster.node(f.value());
        n.close();
        cluster.nodes.remove(n);
      }
      ShardwiseNode leader = cluster.node(a.owner().value());
      await().atMost(Duration.ofSeconds(20)).until(() -> leader.map().table("r").orElseThrow().shards().get(0).inSync().isEmpty());
      long epoch = leader.map().epoch();
      assertThatThrownBy(() -> client.put("r", Key.of("refused"), b("x"))).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("NOT_ENOUGH_REPLICAS").hasMessageContaining("writes need 2")
          .isNotInstanceOf(io.shardwise.client.OutcomeUnknownException.class);
      assertThat(client.get("r", Key.of("before"))).as("reads go on").isPresent();
      assertThat(leader.map().epoch()).as("no in-sync changes while the followers stay away").isEqualTo(epoch);
      // One comes back: it catches up, joins the in-sync set, and writes are taken again.
      String back = a.followers().get(0).value();
      cluster.nodes.add(startQuick(cluster, Integer.parseInt(back.substring(1))));
      await().atMost(Duration.ofSeconds(30)).until(() -> leader.map().table("r").orElseThrow().shards().get(0).inSync().size() == 1);
      assertThat(client.put("r", Key.of("after"), b("2"))).isEqualTo(1);
      assertThat(client.get("r", Key.of("refused"))).as("a refused write was not written").isEmpty();
    }
  }

  /**
   * A node stays away past the absence grace: the controller rebuilds its replicas on the node that
   * had none (a snapshot from each leader, then the log) while writes go on; every shard is back to
   * three replicas, all in sync, each holding every acknowledged write; the node that returns holds
   * no replica and its old copies are in its trash, not deleted.
   */
  @Test
  void aNodeAbsentPastTheGraceHasItsReplicasRebuiltElsewhereWhileWritesGoOn() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT);
        io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(cluster.zk.connectString(),
            Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      for (int i = 1; i <= 4; i++) {
        cluster.nodes.add(startQuick(cluster, i));
      }
      new io.shardwise.server.balance.RebalanceRecords(admin).updateSettings(s -> s.toBuilder().setAbsentGraceSeconds(2).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(4).replicas(3).build());
      java.util.Map<String, String> acknowledged = new java.util.concurrent.ConcurrentHashMap<>();
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      Thread writer = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          String k = "k" + (i % 2_000);
          try {
            client.put("r", Key.of(k), b("v" + i));
            acknowledged.put(k, "v" + i);
          } catch (ShardwiseException e) {
            acknowledged.remove(k); // refused or unknown: the key's value is not known any more
          }
        }
      });
      writer.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> acknowledged.size() >= 500);
      ShardwiseNode victim = cluster.nodes.get(3);
      Table before = victim.map().table("r").orElseThrow();
      long heldByVictim = before.shards().stream().filter(s -> s.isReplica(victim.id())).count();
      assertThat(heldByVictim).as("4 shards x 3 replicas on 4 nodes: the victim holds some").isPositive();
      victim.close();
      cluster.nodes.remove(victim);
      ShardwiseNode survivor = cluster.nodes.get(0);
      await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(survivor.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> {
            assertThat(s.replicas()).as("%s replicas", s.id()).hasSize(3).doesNotContain(victim.id()).doesNotHaveDuplicates();
            assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2);
          }));
      int atRepair = acknowledged.size();
      await().atMost(Duration.ofSeconds(10)).until(() -> acknowledged.size() > atRepair || atRepair >= 2_000);
      stop.set(true);
      writer.join();

      // Every replica of every shard, the rebuilt ones included, holds every acknowledged write.
      Table t = survivor.map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (var e : acknowledged.entrySet()) {
          Key k = Key.of(e.getKey());
          ShardAssignment a = t.shardFor(k.partitionKey());
          ShardRef ref = ShardRef.of(t, a.id().number());
          for (var replica : a.replicas()) {
            Versioned v = cluster.node(replica.value()).store().get(ref, k.encode());
            assertThat(v).as("%s on %s", e.getKey(), replica).isNotNull();
            assertThat(new String(v.value(), StandardCharsets.UTF_8)).as("%s on %s", e.getKey(), replica).isEqualTo(e.getValue());
          }
        }
      });
      for (var e : acknowledged.entrySet()) {
        assertThat(client.get("r", Key.of(e.getKey()))).as(e.getKey()).get()
            .satisfies(v -> assertThat(new String(v.value(), StandardCharsets.UTF_8)).isEqualTo(e.getValue()));
      }

      // The victim returns: it is a replica of nothing, and what it held is in its trash.
      ShardwiseNode back = startQuick(cluster, 4);
      cluster.nodes.add(back);
      assertThat(back.map().table("r").orElseThrow().shards()).noneMatch(s -> s.isReplica(back.id()));
      assertThat(back.store().trash().entries()).hasSize((int) heldByVictim)
          .allMatch(e -> e.kind() == io.shardwise.server.storage.ShardTrash.Kind.FOREIGN_AT_START);
      for (var e : back.store().trash().entries()) {
        assertThat(back.store().replicaStorage().state(e.shard()).lastOffset()).as("its log went with its data").isZero();
      }
    }
  }

  /**
   * Splits and a merge of replicated shards while a writer and a reader run under the history
   * check: the leader quiesces the shard (writes held until every in-sync follower has applied its
   * whole log), the map cuts it in one compare-and-set, and the halves start logs of their own on
   * every replica. Afterwards every replica of every shard holds each key's last value, and no node
   * keeps the log of a shard that was cut.
   */
  @Test
  void replicatedShardsSplitAndMergeAtOneLogPositionOnEveryReplicaWhileWritesGoOn() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(2).replicas(3).build());
      ShardwiseNode any = cluster.nodes.get(0);
      java.util.List<ShardRef> cut = new java.util.ArrayList<>();
      Table start = any.map().table("r").orElseThrow();
      // Keys written once each: a replica that missed the last entries before a cut would lack them for good.
      java.util.Set<String> once = java.util.concurrent.ConcurrentHashMap.newKeySet();
      java.util.concurrent.atomic.AtomicBoolean stopOnce = new java.util.concurrent.atomic.AtomicBoolean();
      Thread onceWriter = new Thread(() -> {
        for (int i = 0; !stopOnce.get(); i++) {
          try {
            client.put("r", Key.of("once-" + i), b("o" + i));
            once.add("once-" + i);
          } catch (ShardwiseException e) {
            // not acknowledged: not checked
          }
        }
      });
      onceWriter.start();
      try (RebalanceTest.History h = new RebalanceTest.History(client, "r", 300, 11)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > 200 && h.reads.get() > 100);
        long first = start.shards().get(0).id().number();
        TableDescription split = client.splitShard("r", first); // by size, at the leader
        assertThat(split.shards()).hasSize(3);
        cut.add(ShardRef.of(start, first));
        long writes = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes + 200);

        Table afterSplit = any.map().table("r").orElseThrow();
        ShardAssignment upper = afterSplit.shards().get(1);
        TableDescription again = client.splitShard("r", upper.id().number());
        assertThat(again.shards()).hasSize(4);
        cut.add(ShardRef.of(afterSplit, upper.id().number()));
        long writes2 = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes2 + 200);

        Table beforeMerge = any.map().table("r").orElseThrow();
        ShardAssignment left = beforeMerge.shards().get(1);
        ShardAssignment right = beforeMerge.shards().get(2);
        TableDescription merged = client.mergeShards("r", left.id().number());
        assertThat(merged.shards()).hasSize(3);
        cut.add(ShardRef.of(beforeMerge, left.id().number()));
        cut.add(ShardRef.of(beforeMerge, right.id().number()));
        long writes3 = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes3 + 200);

        java.util.Map<Integer, Long> last = h.stopAndCheck();
        stopOnce.set(true);
        onceWriter.join();
        assertThat(h.violations).isEmpty();

        Table t = any.map().table("r").orElseThrow();
        assertThat(t.shards()).hasSize(3).allSatisfy(s -> {
          assertThat(s.replicas()).as("%s", s.id()).hasSize(3);
          assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2);
        });
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
          everyReplicaHoldsTheLastValues(cluster, t, last);
          for (String k : once) {
            ShardAssignment a = t.shardFor(Key.of(k).partitionKey());
            for (var replica : a.replicas()) {
              assertThat(cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), Key.of(k).encode()))
                  .as("%s (written once) on %s", k, replica).isNotNull();
            }
          }
          for (ShardwiseNode n : cluster.nodes) {
            for (ShardRef old : cut) {
              assertThat(n.store().replicaStorage().state(old).lastOffset()).as("log of cut shard %s on %s", old, n.id()).isZero();
            }
          }
        });
      }
    }
  }

  /**
   * Replicated neighbours on other replicas and under another leader (after a split, one half got a
   * new leader and a replica on a fourth node) merge in auto mode once small and quiet: the balancer
   * first gives the one it moves the other's replicas, a follower built and in sync before the one
   * it replaces goes, and the other's leader, then merges them at one log position. Under a history
   * check of writes and reads, every replica of the merged shard holds the last values.
   */
  @Test
  void replicatedNeighboursOnOtherReplicasMergeOnceTheBalancerHasMatchedTheirReplicas() throws Exception {
    try (TestCluster cluster = quickCluster();
        io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(
            cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      cluster.nodes.add(startQuick(cluster, 4));
      io.shardwise.server.balance.RebalanceRecords records = new io.shardwise.server.balance.RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.MANUAL).build());
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(3).build());
      long whole = admin.syncedMap().table("r").orElseThrow().shards().get(0).id().number();
      TableDescription halves = client.splitShardAtHash("r", whole, Long.MIN_VALUE); // the middle (hashes are unsigned)
      Table split = admin.syncedMap().table("r").orElseThrow();
      java.util.List<Long> numbers = halves.shards().stream().map(ShardDescription::number).toList();
      records.addResized(split.id(), numbers, new java.util.TreeSet<>(numbers)); // made as the balancer makes them, so they may merge

      // The upper half: its lead to a follower, then a replica on the fourth node in place of its old leader's.
      ShardAssignment upper = split.shards().get(1);
      NodeId oldLeader = upper.owner();
      NodeId newLeader = upper.inSync().get(0);
      NodeId spare = cluster.nodes.stream().map(n -> n.id()).filter(n -> !upper.isReplica(n)).findFirst().orElseThrow();
      admin.updateMap(m -> java.util.Optional.of(io.shardwise.core.map.ShardMapDelta.on(m)
          .add(new io.shardwise.core.map.ShardMapDelta.ChangeLeader(upper.id(), oldLeader, newLeader, false)).build()));
      // One change, so the shard never has more replicas than its factor (replica repair would remove one, maybe the spare).
      admin.updateMap(m -> java.util.Optional.of(io.shardwise.core.map.ShardMapDelta.on(m)
          .add(new io.shardwise.core.map.ShardMapDelta.AddFollower(upper.id(), spare))
          .add(new io.shardwise.core.map.ShardMapDelta.RemoveFollower(upper.id(), oldLeader)).build()));
      await().atMost(Duration.ofSeconds(30)).until(() -> admin.syncedMap().shard(split.id(), upper.id().number()).orElseThrow().inSync()
          .contains(spare));
      Table apart = admin.syncedMap().table("r").orElseThrow();
      assertThat(apart.shards().get(0).sameReplicas(apart.shards().get(1))).isFalse();
      assertThat(apart.shards().get(0).owner()).isNotEqualTo(apart.shards().get(1).owner());

      try (RebalanceTest.History h = new RebalanceTest.History(client, "r", 200, 5)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > 100 && h.reads.get() > 100);
        records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.AUTO).setAutoMaxFraction(1)
            .setSplitBytes(64 << 20).setSplitRps(100_000).setMergeSeconds(2).build());
        await().atMost(Duration.ofSeconds(90)).until(() -> admin.syncedMap().table("r").orElseThrow().shards().size() == 1);
        long writes = h.writes.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> h.writes.get() > writes + 100);
        java.util.Map<Integer, Long> last = h.stopAndCheck();
        assertThat(h.violations).isEmpty();

        io.shardwise.proto.v1.ResizeRecord merge = records.plans().stream().flatMap(p -> p.getResizesList().stream())
            .filter(x -> x.getKind() == io.shardwise.proto.v1.ResizeRecord.Kind.MERGE).findFirst().orElseThrow();
        assertThat(merge.getState()).isEqualTo(io.shardwise.proto.v1.ResizeRecord.State.DONE);
        assertThat(merge.getMovesFirst()).isTrue();
        assertThat(merge.getWhy()).contains("replicas move from").contains("first, led from");
        Table merged = admin.syncedMap().table("r").orElseThrow();
        assertThat(merged.shards().get(0).replicas()).hasSize(3);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> everyReplicaHoldsTheLastValues(cluster, merged, last));
      }
    }
  }

  /**
   * A quiesce whose cut never comes (its caller died, or its compare-and-set failed): writes are
   * refused through the hold, and resume only once the leader has raised the shard's epoch in the
   * map, so a cut guarded by the epoch the quiesce reported can no longer be stored and lose them.
   */
  @Test
  void aQuiesceWithoutACutIsFencedOffBeforeWritesResume() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(3).build());
      client.put("r", Key.of("k0"), b("v0"));
      Table t = cluster.nodes.get(0).map().table("r").orElseThrow();
      ShardAssignment s = t.shards().get(0);
      io.grpc.ManagedChannel channel = io.grpc.ManagedChannelBuilder.forTarget(cluster.node(s.owner().value()).address()).usePlaintext()
          .build();
      try {
        io.shardwise.proto.v1.QuiesceResponse q = io.shardwise.proto.v1.ReplicationServiceGrpc.newBlockingStub(channel)
            .withDeadlineAfter(10, java.util.concurrent.TimeUnit.SECONDS).quiesce(io.shardwise.proto.v1.QuiesceRequest.newBuilder()
                .setTableId(t.id()).addNumbers(s.id().number()).setHoldMillis(1_500).build());
        long quiescedAt = q.getShards(0).getShardEpoch();
        assertThat(quiescedAt).isEqualTo(s.epoch());
        assertThat(q.getShards(0).getInSyncList()).containsExactlyInAnyOrderElementsOf(s.inSync().stream().map(n -> n.value()).toList());

        long started = System.nanoTime();
        // Refused (LEADER_NOT_READY, nothing written) through the hold and until the fence is stored: the
        // client's own retries last about 3 s, which a loaded machine can outlast, so it is asked again.
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).ignoreException(ShardwiseException.class)
            .until(() -> client.put("r", Key.of("k1"), b("v1")) >= 1);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("the write waited out the hold").isGreaterThan(Duration.ofMillis(500));
        ShardAssignment now;
        try (io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(
            cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
          now = admin.readMapSynced().map().table("r").orElseThrow().shards().get(0);
        }
        assertThat(now.id()).isEqualTo(s.id());
        assertThat(now.epoch()).as("fenced: a cut guarded by the quiesced epoch is refused").isGreaterThan(quiescedAt);
        assertThat(now.inSync()).containsExactlyInAnyOrderElementsOf(s.inSync());
      } finally {
        channel.shutdownNow();
      }
    }
  }

  /**
   * Write-id records of a replicated table go through the log: the leader appends their removal and
   * every replica applies it, so all keep the same records (and the same data); records younger than
   * the cutoff stay.
   */
  @Test
  void writeIdRecordsOfAReplicatedTableArePurgedThroughTheLogOnEveryReplica() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(2).replicas(3).build());
      for (int i = 0; i < 200; i++) {
        client.put("r", Key.of("k" + i), b("v" + i));
      }
      Table t = cluster.nodes.get(0).map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(recordsPerNode(cluster, t)).as("records per node")
          .containsOnlyKeys("n1", "n2", "n3").allSatisfy((node, count) -> assertThat(count).isEqualTo(200)));
      long cutoff = System.currentTimeMillis() + 1; // every record so far
      Thread.sleep(5);
      for (int i = 200; i < 210; i++) {
        client.put("r", Key.of("k" + i), b("v" + i)); // younger than the cutoff: they stay
      }
      for (ShardwiseNode n : cluster.nodes) {
        n.purgeRequestRecords(cutoff); // each node removes those of the shards it leads
      }
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(recordsPerNode(cluster, t)).as("records per node")
          .containsOnlyKeys("n1", "n2", "n3").allSatisfy((node, count) -> assertThat(count).isEqualTo(10)));
      for (int i = 0; i < 210; i++) {
        Key k = Key.of("k" + i);
        ShardAssignment a = t.shardFor(k.partitionKey());
        for (var replica : a.replicas()) {
          assertThat(cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), k.encode())).as("k%d on %s", i, replica)
              .isNotNull();
        }
      }
      assertThat(client.put("r", Key.of("k0"), b("again"))).as("writes go on after the purge").isEqualTo(2);
    }
  }

  /**
   * Tombstones of a replicated table are purged through the log: the leader raises the table's
   * version floor in the map to the highest version it removes, then appends the removals, which
   * every replica applies. A purged key written again gets a version above every version it had —
   * also from the next leader, after a failover.
   */
  @Test
  void tombstonesOfAReplicatedTableArePurgedThroughTheLogAndAPurgedKeyNeverReturnsAtAnOldVersion() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(2).replicas(3).build());
      for (int i = 0; i < 50; i++) {
        client.put("r", Key.of("k" + i), b("a"));
        client.put("r", Key.of("k" + i), b("b"));
        assertThat(client.delete("r", Key.of("k" + i))).isTrue(); // a tombstone at version 3
      }
      client.put("r", Key.of("kept"), b("live"));
      Table t = cluster.nodes.get(0).map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(tombstonesPerNode(cluster, t)).containsOnlyKeys("n1", "n2", "n3")
          .allSatisfy((node, count) -> assertThat(count).isEqualTo(50)));

      for (ShardwiseNode n : cluster.nodes) {
        n.purgeTombstones(Duration.ZERO); // each node purges the shards it leads
      }
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(tombstonesPerNode(cluster, t)).containsOnlyKeys("n1", "n2", "n3")
          .allSatisfy((node, count) -> assertThat(count).isZero()));
      Table after = cluster.nodes.get(0).map().table("r").orElseThrow();
      assertThat(after.replication().versionFloor()).as("the floor rose to the highest purged version first").isEqualTo(3);
      assertThat(client.get("r", Key.of("kept")).orElseThrow().version()).isEqualTo(1);
      assertThat(client.get("r", Key.of("k0"))).isEmpty();
      assertThat(client.put("r", Key.of("k0"), b("again"))).as("above every version k0 had").isEqualTo(4);

      // The next leader of k1's shard writes above the floor too: it has the map, not the old leader's memory.
      ShardAssignment s1 = after.shardFor(Key.of("k1").partitionKey());
      ShardwiseNode leader = cluster.node(s1.owner().value());
      leader.close();
      cluster.nodes.remove(leader);
      await().atMost(Duration.ofSeconds(30)).ignoreException(ShardwiseException.class)
          .untilAsserted(() -> assertThat(client.put("r", Key.of("k1"), b("again"))).isEqualTo(4));
    }
  }

  /** Each node's count of tombstones over the table's shards it holds a replica of. */
  private static java.util.Map<String, Integer> tombstonesPerNode(TestCluster cluster, Table t) {
    java.util.Map<String, Integer> out = new java.util.TreeMap<>();
    for (ShardAssignment a : t.shards()) {
      for (var replica : a.replicas()) {
        out.merge(replica.value(), cluster.node(replica.value()).store()
            .expiredTombstones(ShardRef.of(t, a.id().number()), Long.MAX_VALUE, Integer.MAX_VALUE).size(), Integer::sum);
      }
    }
    return out;
  }

  /** Each node's count of write-id records over the table's shards it holds a replica of. */
  private static java.util.Map<String, Integer> recordsPerNode(TestCluster cluster, Table t) {
    java.util.Map<String, Integer> out = new java.util.TreeMap<>();
    for (ShardAssignment a : t.shards()) {
      for (var replica : a.replicas()) {
        out.merge(replica.value(), cluster.node(replica.value()).store()
            .expiredRequestRecords(ShardRef.of(t, a.id().number()), Long.MAX_VALUE, Integer.MAX_VALUE).size(), Integer::sum);
      }
    }
    return out;
  }

  /** {@code table set}: a table of two replicas gets a third on every shard, online, then goes back to two; bad requests are refused whole. */
  @Test
  void aTablesReplicasChangeOnlineAndEveryNewReplicaHoldsEveryWrite() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("r", TableSpec.builder("hashrange").shards(3).replicas(2).build());
      for (int i = 0; i < 300; i++) {
        client.put("r", Key.of("k" + i), b("v" + i));
      }
      TableDescription raised = client.setReplication("r", 3, 0);
      assertThat(raised.replicas()).isEqualTo(3);
      assertThat(raised.minInSync()).as("a majority of the new factor: the old min was the default").isEqualTo(2);
      ShardwiseNode any = cluster.nodes.get(0);
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(any.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> assertThat(s.inSync()).as("%s in sync", s.id()).hasSize(2)));
      for (int i = 300; i < 400; i++) {
        client.put("r", Key.of("k" + i), b("v" + i));
      }
      Table t = any.map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (int i = 0; i < 400; i++) {
          Key k = Key.of("k" + i);
          ShardAssignment a = t.shardFor(k.partitionKey());
          for (var replica : a.replicas()) {
            assertThat(cluster.node(replica.value()).store().get(ShardRef.of(t, a.id().number()), k.encode())).as("k%d on %s", i, replica)
                .isNotNull();
          }
        }
      });

      assertThat(client.setReplication("r", 2, 0).replicas()).isEqualTo(2);
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(any.map().table("r").orElseThrow().shards())
          .allSatisfy(s -> assertThat(s.replicas()).as("%s", s.id()).hasSize(2)));
      assertThat(client.get("r", Key.of("k399"))).isPresent();

      long epoch = any.map().epoch();
      assertThatThrownBy(() -> client.setReplication("r", 4, 0)).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("cannot keep 4 replicas").hasMessageContaining("3 are live");
      assertThatThrownBy(() -> client.setReplication("r", 2, 3)).hasMessageContaining("min in-sync replicas must be 1 to the replication factor (2)");
      client.createTable("single", TableSpec.builder("hashrange").shards(1).build());
      assertThatThrownBy(() -> client.setReplication("nope", 3, 0)).hasMessageContaining("nope");
      assertThat(any.map().table("r").orElseThrow().replication().factor()).as("nothing half-changed").isEqualTo(2);
      assertThat(any.map().epoch()).isEqualTo(epoch + 1); // only the table created
    }
  }

  /**
   * Follower reads: a client that allows 2 s of staleness has its reads answered by every replica
   * (each node counts those it answered as a follower), and sees every write acknowledged before
   * the followers' next heartbeat. A follower whose last commit from its leader is older than the
   * bound does not answer; the read goes on to the leader (forwarded by the follower).
   */
  @Test
  void followerReadsAreAnsweredByEveryReplicaAndAStaleFollowerPassesThemToTheLeader() throws Exception {
    try (TestCluster cluster = quickCluster()) {
      ShardwiseClient writer = cluster.client(Routing.CLIENT);
      writer.createTable("r", TableSpec.builder("hashrange").shards(1).replicas(3).build());
      for (int i = 0; i < 50; i++) {
        writer.put("r", Key.of("k" + i), b("v" + i));
      }
      ShardwiseClient reader = cluster.client(Routing.CLIENT, o -> o.readFromFollowers(Duration.ofSeconds(2)));
      ShardAssignment a = cluster.nodes.get(0).map().table("r").orElseThrow().shards().get(0);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (int i = 0; i < 50; i++) {
          assertThat(reader.get("r", Key.of("k" + i))).as("k%d", i).get()
              .satisfies(v -> assertThat(v.value()).isNotEmpty());
        }
        for (var f : a.followers()) {
          assertThat(answeredAsFollower(cluster.node(f.value()))).as("reads answered by follower %s", f).isPositive();
        }
      });
      // Every value a follower answers with is one that was acknowledged (the data holds only committed writes).
      // Once every replica has applied the writes (the next heartbeat tells followers the last commit):
      // until then a follower within its staleness bound may rightly answer that a key is absent.
      Table table = cluster.nodes.get(0).map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (var replica : a.replicas()) {
          for (int i = 0; i < 50; i++) {
            assertThat(cluster.node(replica.value()).store().get(ShardRef.of(table, a.id().number()), Key.of("k" + i).encode()))
                .as("k%d on %s", i, replica).isNotNull();
          }
        }
      });
      for (int i = 0; i < 50; i++) {
        assertThat(new String(reader.get("r", Key.of("k" + i)).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v" + i);
      }

      // A bound shorter than the heartbeat (100 ms): the follower is mostly too stale, and passes the
      // reads sent to it to the leader, which answers with the newest value.
      ShardwiseNode follower = cluster.node(a.followers().get(0).value());
      double staleBefore = staleAtFollower(follower);
      ShardwiseClient direct = cluster.client(Routing.NODE, o -> o.seeds(java.util.List.of(follower.address()))
          .readFromFollowers(Duration.ofMillis(1)));
      for (int i = 0; i < 20; i++) {
        writer.put("r", Key.of("k0"), b("new" + i));
        assertThat(new String(direct.get("r", Key.of("k0")).orElseThrow().value(), StandardCharsets.UTF_8)).isIn("new" + i, "new" + (i - 1));
      }
      assertThat(staleAtFollower(follower)).as("reads the follower passed on").isGreaterThan(staleBefore);
    }
  }

  private static double answeredAsFollower(ShardwiseNode n) {
    return n.metrics().find("shardwise.follower.reads").tag("outcome", "answered").counter().count();
  }

  private static double staleAtFollower(ShardwiseNode n) {
    return n.metrics().find("shardwise.follower.reads").tag("outcome", "too_stale").counter().count();
  }

  /**
   * A planned lead handover at one log position: the leader quiesces the shard, the lead passes, and
   * the old leader stays in the in-sync set. So a table of two replicas with min in-sync two (the
   * default on two nodes) takes writes through it; a pass as a failover makes would leave the old
   * leader out until it caught up, and writes would be refused with NOT_ENOUGH_REPLICAS meanwhile.
   */
  @Test
  void aPlannedHandoverKeepsTheOldLeaderInSyncSoWritesGoOn() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        io.shardwise.server.coordination.Coordinator c = io.shardwise.server.coordination.Coordinator.connect(cluster.zk.connectString(),
            Duration.ofSeconds(10), Duration.ofSeconds(10));
        io.shardwise.server.rpc.Peers peers = new io.shardwise.server.rpc.Peers(16 << 20)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      TableDescription created = client.createTable("pair", TableSpec.builder("hashrange").shards(1).build());
      assertThat(created.replicas()).isEqualTo(2);
      assertThat(created.minInSync()).isEqualTo(2);
      java.util.List<String> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
      java.util.concurrent.atomic.AtomicInteger written = new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      Thread writer = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          try {
            client.put("pair", Key.of("k" + (i % 200)), b("v" + i));
            written.incrementAndGet();
          } catch (RuntimeException e) {
            refused.add(e.getMessage());
          }
        }
      }, "pair-writer");
      writer.start();
      try {
        await().atMost(Duration.ofSeconds(10)).until(() -> written.get() > 100);
        for (int round = 0; round < 4; round++) { // the lead goes back and forth
          Table t = c.readMapSynced().map().table("pair").orElseThrow();
          ShardAssignment s = t.shards().get(0);
          NodeId from = s.owner();
          NodeId to = s.followers().get(0);
          await().atMost(Duration.ofSeconds(10)).until(() -> c.readMapSynced().map().table("pair").orElseThrow().shards().get(0)
              .inSync().contains(to));
          int before = written.get();
          io.shardwise.core.map.ShardMap after = new io.shardwise.server.rpc.ShardSplits(c, peers).handOver(t.id(), s.id().number(), from, to);
          ShardAssignment now = after.table("pair").orElseThrow().shards().get(0);
          assertThat(now.owner()).as("round %d", round).isEqualTo(to);
          assertThat(now.inSync()).as("round %d: the old leader stays in sync", round).containsExactly(from);
          await().atMost(Duration.ofSeconds(10)).until(() -> written.get() > before + 50);
        }
      } finally {
        stop.set(true);
        writer.join();
      }
      assertThat(refused).as("writes refused during the handovers").isEmpty();
    }
  }

  @Test
  void aTableCannotKeepMoreReplicasThanThereAreNodes() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      assertThatThrownBy(() -> client.createTable("r", TableSpec.builder("hashrange").replicas(3).build()))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("a table of 3 replicas needs 3 live nodes").hasMessageContaining("2 are live");
      assertThatThrownBy(() -> client.createTable("r", TableSpec.builder("hashrange").replicas(2).minInSync(3).build()))
          .hasMessageContaining("min in-sync replicas must be 1 to the replication factor (2), not 3");
      assertThat(client.listTables()).isEmpty();
    }
  }
}
