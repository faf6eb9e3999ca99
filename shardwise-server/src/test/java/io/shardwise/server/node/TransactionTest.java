package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.RequestHooks;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Cross-shard transactions on a real cluster (RocksDB nodes, ZooKeeper, gRPC): all or nothing,
 * conditions, idempotent retries, a bank's total kept under concurrent transfers (checked by
 * transactions that commit only on a consistent snapshot), and coordinators that die before and
 * after their decision.
 */
@Tag("integration")
class TransactionTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String s(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  private static Optional<String> value(ShardwiseClient client, String table, String key) {
    return client.get(table, Key.of(key)).map(v -> s(v.value()));
  }

  @Test
  void itemsOnManyShardsApplyAllTogetherOrNotAtAll() {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("hashrange").shards(6).replicas(1).build());
      client.createTable("u", TableSpec.builder("range").shards(1).replicas(1).build());
      client.put("t", Key.of("old"), b("was"));

      List<TxnItem> items = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        items.add(TxnItem.put("t", Key.of("k" + i), b("v" + i)).onlyIf(TxnItem.ABSENT));
      }
      items.add(TxnItem.put("u", Key.of("other-table"), b("x")));
      items.add(TxnItem.delete("t", Key.of("old")).onlyIf(1));
      TxnOutcome done = client.transact(items);
      assertThat(done.status()).as("%s", done).isEqualTo(TxnOutcome.Status.COMMITTED);
      assertThat(done.versions()).hasSize(22);
      assertThat(done.versions()[0]).isEqualTo(1);
      assertThat(done.versions()[21]).as("the delete's tombstone").isEqualTo(2);
      for (int i = 0; i < 20; i++) {
        assertThat(value(client, "t", "k" + i)).contains("v" + i);
      }
      assertThat(value(client, "u", "other-table")).contains("x");
      assertThat(value(client, "t", "old")).isEmpty();
      assertThat(client.txnStatus(done.txnId()).status()).isEqualTo(TxnOutcome.Status.COMMITTED);

      // One failed condition, on the last item: nothing of the transaction is applied.
      List<TxnItem> refused = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        refused.add(TxnItem.put("t", Key.of("k" + i), b("overwritten")));
      }
      refused.add(TxnItem.check("u", Key.of("other-table"), 7));
      TxnOutcome cancelled = client.transact(refused);
      assertThat(cancelled.status()).isEqualTo(TxnOutcome.Status.CANCELLED);
      assertThat(cancelled.cancellations()).singleElement().satisfies(c -> {
        assertThat(c.item()).isEqualTo(20);
        assertThat(c.currentVersion()).isEqualTo(1);
      });
      for (int i = 0; i < 20; i++) {
        assertThat(client.get("t", Key.of("k" + i)).orElseThrow().version()).as("k%d untouched", i).isEqualTo(1);
      }

      // The same token again answers the first outcome and writes nothing twice.
      List<TxnItem> once = List.of(TxnItem.put("t", Key.of("k0"), b("second")), TxnItem.put("u", Key.of("n"), b("1")));
      TxnOutcome first = client.transact(once, "token-1");
      TxnOutcome again = client.transact(once, "token-1");
      assertThat(first.status()).isEqualTo(TxnOutcome.Status.COMMITTED);
      assertThat(again.versions()).containsExactly(first.versions());
      assertThat(client.get("t", Key.of("k0")).orElseThrow().version()).isEqualTo(2);
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("t", Key.of("k0"), b("third"))), "token-1"))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("other items");

      // Bad transactions are one clear error each, and write nothing.
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("t", Key.of("dup"), b("1")), TxnItem.delete("t", Key.of("dup")))))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("same key");
      List<TxnItem> tooMany = new ArrayList<>();
      for (int i = 0; i < 101; i++) {
        tooMany.add(TxnItem.put("t", Key.of("many" + i), b("1")));
      }
      assertThatThrownBy(() -> client.transact(tooMany)).isInstanceOf(ShardwiseException.class).hasMessageContaining("1 to 100 items");
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("nope", Key.of("a"), b("1")))))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("nope");
      assertThat(value(client, "t", "dup")).isEmpty();
      assertThat(value(client, "t", "many0")).isEmpty();
    }
  }

  @Test
  void itemsOfOneShardCommitInOnePhaseWithTheSameAnswersAsTwo() {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.NODE);
      client.createTable("o", TableSpec.builder("hashrange").shards(6).build());
      // One partition key, several sort keys: one shard.
      List<TxnItem> items = List.of(TxnItem.put("o", Key.of("order-1", "head"), b("h")), TxnItem.put("o", Key.of("order-1", "line-1"), b("l1")),
          TxnItem.check("o", Key.of("order-1", "closed"), TxnItem.ABSENT));
      TxnOutcome done = client.transact(items, "one-phase-1");
      assertThat(done.status()).isEqualTo(TxnOutcome.Status.COMMITTED);
      assertThat(done.versions()).containsExactly(1, 1, 0);
      assertThat(client.transact(items, "one-phase-1").versions()).as("a retry").containsExactly(1, 1, 0);
      assertThat(client.get("o", Key.of("order-1", "head")).orElseThrow().version()).isEqualTo(1);
      assertThat(client.txnStatus(done.txnId()).status()).isEqualTo(TxnOutcome.Status.COMMITTED);

      client.put("o", Key.of("order-1", "closed"), b("yes"));
      TxnOutcome refused = client.transact(List.of(TxnItem.put("o", Key.of("order-1", "line-2"), b("l2")),
          TxnItem.check("o", Key.of("order-1", "closed"), TxnItem.ABSENT)), "one-phase-2");
      assertThat(refused.status()).isEqualTo(TxnOutcome.Status.CANCELLED);
      assertThat(refused.cancellations()).singleElement().satisfies(c -> assertThat(c.item()).isEqualTo(1));
      assertThat(client.get("o", Key.of("order-1", "line-2"))).isEmpty();
      assertThat(client.txnStatus(refused.txnId()).status()).isEqualTo(TxnOutcome.Status.CANCELLED);
      assertThat(client.transact(List.of(TxnItem.put("o", Key.of("order-1", "line-2"), b("l2")),
          TxnItem.check("o", Key.of("order-1", "closed"), TxnItem.ABSENT)), "one-phase-2").status())
          .as("the same token answers the first outcome").isEqualTo(TxnOutcome.Status.CANCELLED);
    }
  }

  /**
   * Transfers between accounts on many shards, while auditors read every account in one read
   * transaction — the total must be the same in every read — and others read them one by one and
   * then commit a transaction of condition checks on the versions they read, which commits only if
   * those versions were all current at once: every committed audit must see the same total too.
   */
  @ParameterizedTest(name = "replicas={0}, seed 7")
  @ValueSource(ints = {1, 3})
  void concurrentTransfersKeepTheBanksTotal(int replicas) throws Exception {
    int accounts = 12;
    long initial = 100;
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("bank", TableSpec.builder("hashrange").shards(6).replicas(replicas).build());
      for (int i = 0; i < accounts; i++) {
        client.put("bank", Key.of("acct" + i), ByteBuffer.allocate(8).putLong(initial).array());
      }
      AtomicBoolean stop = new AtomicBoolean();
      // An audit commits only if none of the 12 accounts changed between its reads and its checks;
      // under this contention that can take long, so once everything else has happened the tellers
      // pause until one audit commits (the audits before it ran among the transfers, and count too).
      AtomicBoolean tellersPause = new AtomicBoolean();
      AtomicInteger transfers = new AtomicInteger();
      AtomicInteger audits = new AtomicInteger();
      AtomicReference<String> broken = new AtomicReference<>();
      ExecutorService pool = Executors.newFixedThreadPool(6);
      List<Future<?>> work = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        Random random = new Random(7 + w);
        ShardwiseClient c = cluster.client(w % 2 == 0 ? Routing.CLIENT : Routing.NODE);
        work.add(pool.submit(() -> {
          while (!stop.get()) {
            if (tellersPause.get()) {
              Thread.sleep(5);
              continue;
            }
            int from = random.nextInt(accounts);
            int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
            var a = c.get("bank", Key.of("acct" + from)).orElseThrow();
            var bb = c.get("bank", Key.of("acct" + to)).orElseThrow();
            long amount = 1 + random.nextInt(10);
            long fromBalance = ByteBuffer.wrap(a.value()).getLong();
            long toBalance = ByteBuffer.wrap(bb.value()).getLong();
            TxnOutcome o = c.transact(List.of(
                TxnItem.put("bank", Key.of("acct" + from), ByteBuffer.allocate(8).putLong(fromBalance - amount).array()).onlyIf(a.version()),
                TxnItem.put("bank", Key.of("acct" + to), ByteBuffer.allocate(8).putLong(toBalance + amount).array()).onlyIf(bb.version())));
            if (o.committed()) {
              transfers.incrementAndGet();
            }
            Thread.sleep(2); // a teller's pause, so that audits (12 keys read, then checked) get their turn
          }
          return null;
        }));
      }
      AtomicInteger snapshots = new AtomicInteger();
      ShardwiseClient reader = cluster.client(Routing.NODE);
      work.add(pool.submit(() -> {
        List<io.shardwise.core.txn.TableKey> keys = new ArrayList<>();
        for (int i = 0; i < accounts; i++) {
          keys.add(new io.shardwise.core.txn.TableKey("bank", Key.of("acct" + i)));
        }
        while (!stop.get()) {
          long total = 0;
          for (var v : reader.transactGet(keys)) {
            total += ByteBuffer.wrap(v.orElseThrow().value()).getLong();
          }
          snapshots.incrementAndGet();
          if (total != accounts * initial) {
            broken.compareAndSet(null, "a read transaction saw a total of " + total);
          }
        }
        return null;
      }));
      for (int r = 0; r < 1; r++) {
        ShardwiseClient c = cluster.client(Routing.CLIENT);
        work.add(pool.submit(() -> {
          while (!stop.get()) {
            List<Key> keys = new ArrayList<>();
            for (int i = 0; i < accounts; i++) {
              keys.add(Key.of("acct" + i));
            }
            var read = c.batchGet("bank", keys);
            long total = 0;
            List<TxnItem> checks = new ArrayList<>();
            for (int i = 0; i < accounts; i++) {
              total += ByteBuffer.wrap(read.get(i).orElseThrow().value()).getLong();
              checks.add(TxnItem.check("bank", keys.get(i), read.get(i).orElseThrow().version()));
            }
            TxnOutcome o = c.transact(checks);
            if (o.committed()) {
              audits.incrementAndGet();
              if (total != accounts * initial) {
                broken.compareAndSet(null, "an audit that committed saw a total of " + total);
              }
            }
          }
          return null;
        }));
      }
      // Until enough of everything has happened (or 40 s, which the assertions below then fail).
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
      while (System.nanoTime() < until && broken.get() == null
          && (transfers.get() < 150 || snapshots.get() < 15 || audits.get() < 1)) {
        tellersPause.set(transfers.get() >= 150 && snapshots.get() >= 15);
        Thread.sleep(50);
      }
      stop.set(true);
      for (Future<?> f : work) {
        f.get(60, TimeUnit.SECONDS);
      }
      pool.shutdownNow();
      System.out.printf("replicas=%d: %d transfers, %d read transactions, %d audits committed%n", replicas, transfers.get(),
          snapshots.get(), audits.get());
      assertThat(broken.get()).isNull();
      long total = 0;
      for (int i = 0; i < accounts; i++) {
        total += ByteBuffer.wrap(client.get("bank", Key.of("acct" + i)).orElseThrow().value()).getLong();
      }
      assertThat(total).isEqualTo(accounts * initial);
      assertThat(transfers.get()).as("transfers committed").isGreaterThanOrEqualTo(150);
      assertThat(snapshots.get()).as("read transactions").isGreaterThanOrEqualTo(15);
      assertThat(audits.get()).as("audits committed").isGreaterThanOrEqualTo(1);

    }
  }

  /** A hook that kills the coordinator (its request) at one phase of the transactions it coordinates. */
  private static final class DyingCoordinator implements RequestHooks {
    volatile boolean afterPrepare;
    volatile boolean afterCommit;

    @Override
    public void txnPrepared(String txnId) {
      if (afterPrepare) {
        throw new IllegalStateException("the coordinator dies holding its intents");
      }
    }

    @Override
    public void txnCommitted(String txnId) {
      if (afterCommit) {
        throw new IllegalStateException("the coordinator dies after its commit");
      }
    }
  }

  /** Three nodes whose coordinators follow {@code hooks}, their transactions undecided for at most {@code timeout}. */
  private TestCluster threeNodes(DyingCoordinator hooks, Duration timeout) {
    TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT);
    for (int i = 1; i <= 3; i++) {
      cluster.nodes.add(cluster.startNode(i, c -> c.withHooks(hooks).withTxnTimeout(timeout)));
    }
    return cluster;
  }

  @Test
  void aCoordinatorThatDiesLeavesIntentsThatTheirReadersResolveAsTheRecordSays() {
    DyingCoordinator hooks = new DyingCoordinator();
    Duration timeout = Duration.ofSeconds(1);
    try (TestCluster cluster = threeNodes(hooks, timeout)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("hashrange").shards(6).build()); // the default: replicated
      client.put("t", Key.of("a"), b("a0"));
      client.put("t", Key.of("b"), b("b0"));

      // Dies after the decision: a reader resolves the intents at once, as committed.
      hooks.afterCommit = true;
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("t", Key.of("a"), b("a1")), TxnItem.put("t", Key.of("b"), b("b1")))))
          .isInstanceOf(ShardwiseException.class);
      hooks.afterCommit = false;
      long started = System.nanoTime();
      assertThat(value(client, "t", "b")).contains("b1");
      assertThat(value(client, "t", "a")).contains("a1");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).as("no wait for a decided transaction").isLessThan(timeout);

      // Dies undecided: a writer waits for its deadline, aborts it and goes on; nothing of it is applied.
      hooks.afterPrepare = true;
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("t", Key.of("a"), b("a2")), TxnItem.put("t", Key.of("b"), b("b2")))))
          .isInstanceOf(ShardwiseException.class);
      hooks.afterPrepare = false;
      started = System.nanoTime();
      assertThat(client.put("t", Key.of("b"), b("b3"))).isEqualTo(3);
      Duration waited = Duration.ofNanos(System.nanoTime() - started);
      assertThat(waited).as("the lock outlives its transaction's deadline by little").isLessThan(timeout.plusSeconds(2));
      assertThat(value(client, "t", "a")).contains("a1");
      assertThat(value(client, "t", "b")).contains("b3");

      // Dies undecided again; then the records are purged (the cutoff after every deadline): the
      // undecided one is aborted, its intents resolved, and every record goes; the data stays.
      hooks.afterPrepare = true;
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("t", Key.of("a"), b("a4")), TxnItem.put("t", Key.of("b"), b("b4")))))
          .isInstanceOf(ShardwiseException.class);
      hooks.afterPrepare = false;
      TxnOutcome kept = client.transact(List.of(TxnItem.put("t", Key.of("c"), b("c1")), TxnItem.put("t", Key.of("d"), b("d1"))));
      assertThat(kept.status()).isEqualTo(TxnOutcome.Status.COMMITTED);
      assertThat(records(cluster)).isGreaterThanOrEqualTo(3);
      long after = System.currentTimeMillis() + 60_000;
      java.util.concurrent.atomic.AtomicInteger purged = new java.util.concurrent.atomic.AtomicInteger();
      // The undecided one goes once its deadline has passed on the anchor's clock (it is aborted then).
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> {
        for (ShardwiseNode n : cluster.nodes) {
          purged.addAndGet(n.purgeTxnRecords(after));
        }
        return records(cluster) == 0;
      });
      assertThat(purged.get()).isGreaterThanOrEqualTo(3);
      assertThat(value(client, "t", "a")).contains("a1");
      assertThat(value(client, "t", "b")).contains("b3");
      assertThat(value(client, "t", "c")).contains("c1");
      assertThat(client.txnStatus(kept.txnId()).status()).as("forgotten").isEqualTo(TxnOutcome.Status.UNKNOWN);
    }
  }

  /**
   * Scans are linearizable reads too: a page shows a key as a committed transaction left it even
   * while its intents are unresolved (its coordinator died after the decision) — the intents of a
   * partition lie after its rows, so a page that ends inside a partition must look there too — and
   * as it was before an undecided transaction, without waiting for it.
   */
  @Test
  void scansShowTransactionsAsTheirRecordsSay() {
    DyingCoordinator hooks = new DyingCoordinator();
    Duration timeout = Duration.ofSeconds(5);
    try (TestCluster cluster = threeNodes(hooks, timeout)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("s", TableSpec.builder("hashrange").shards(4).build());
      for (long sort = 1; sort <= 5; sort++) {
        client.put("s", Key.of("p", sort), b("v0"));
        client.put("s", Key.of("q", sort), b("v0"));
      }
      java.util.function.Function<List<io.shardwise.client.KeyValue>, List<String>> rows = page -> page.stream()
          .map(r -> s(r.key().partitionKey()) + Key.decodeOrderedLong(r.key().sortKey()) + "=" + r.valueAsString()).toList();

      // Decided, not resolved: a scan of the partition, a scan of part of it, pages of the whole table.
      hooks.afterCommit = true;
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("s", Key.of("p", 2), b("v1")), TxnItem.put("s", Key.of("p", 6), b("v1")),
          TxnItem.delete("s", Key.of("p", 4)), TxnItem.put("s", Key.of("q", 1), b("v1"))))).isInstanceOf(ShardwiseException.class);
      assertThat(rows.apply(client.scan(io.shardwise.client.Scan.partition("s", "p").limit(100)).rows()))
          .containsExactly("p1=v0", "p2=v1", "p3=v0", "p5=v0", "p6=v1");

      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("s", Key.of("p", 3), b("v2")), TxnItem.put("s", Key.of("q", 2), b("v2")))))
          .isInstanceOf(ShardwiseException.class);
      assertThat(rows.apply(client.scan(io.shardwise.client.Scan.partition("s", "p").sortKeys(Key.orderedLong(2), Key.orderedLong(4))
          .limit(100)).rows())).containsExactly("p2=v1", "p3=v2");

      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("s", Key.of("p", 1), b("v3")), TxnItem.put("s", Key.of("q", 9), b("v3")),
          TxnItem.delete("s", Key.of("q", 5))))).isInstanceOf(ShardwiseException.class);
      hooks.afterCommit = false;
      List<String> all = new ArrayList<>();
      io.shardwise.client.Scan scan = io.shardwise.client.Scan.all("s").limit(2);
      io.shardwise.client.ScanPage page;
      do {
        page = client.scan(scan);
        all.addAll(rows.apply(page.rows()));
        scan = page.hasMore() ? scan.after(page) : scan;
      } while (page.hasMore());
      assertThat(all).containsExactlyInAnyOrder("p1=v3", "p2=v1", "p3=v2", "p5=v0", "p6=v1", "q1=v1", "q2=v2", "q3=v0", "q4=v0", "q9=v3");

      // Undecided: the scan answers the keys as they were, at once.
      hooks.afterPrepare = true;
      assertThatThrownBy(() -> client.transact(List.of(TxnItem.put("s", Key.of("p", 2), b("v4")), TxnItem.put("s", Key.of("p", 7), b("v4")),
          TxnItem.put("s", Key.of("q", 3), b("v4"))))).isInstanceOf(ShardwiseException.class);
      hooks.afterPrepare = false;
      long started = System.nanoTime();
      assertThat(rows.apply(client.scan(io.shardwise.client.Scan.partition("s", "p").limit(100)).rows()))
          .containsExactly("p1=v3", "p2=v1", "p3=v2", "p5=v0", "p6=v1");
      assertThat(rows.apply(client.scan(io.shardwise.client.Scan.partition("s", "q").limit(2)).rows())).containsExactly("q1=v1", "q2=v2");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).as("no wait for an undecided transaction").isLessThan(timeout);
    }
  }

  /**
   * A transaction's intents and record are keys of their shards: split the shards that hold them,
   * move one of the halves to another node, and the transaction still ends as its record says —
   * committed (its coordinator died after the decision) or aborted (it died before).
   */
  @Test
  void intentsAndRecordsGoWithTheirShardsThroughSplitsAndMoves() throws Exception {
    DyingCoordinator hooks = new DyingCoordinator();
    Duration timeout = Duration.ofSeconds(1);
    try (TestCluster cluster = threeNodes(hooks, timeout)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("s", TableSpec.builder("hashrange").shards(2).replicas(1).build()); // one replica: whole shards move
      List<Key> keys = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        keys.add(Key.of("k" + i));
        client.put("s", keys.get(i), b("0"));
      }

      // Committed, its intents left where they are: then every shard splits, and the half that holds k0 moves.
      hooks.afterCommit = true;
      assertThatThrownBy(() -> client.transact(keys.stream().map(k -> TxnItem.put("s", k, b("1"))).toList()))
          .isInstanceOf(ShardwiseException.class);
      hooks.afterCommit = false;
      splitEveryShardAndMoveTheOneOf(cluster, client, keys.get(0));
      for (Key k : keys) {
        assertThat(value(client, "s", s(k.partitionKey()))).as("%s after the splits and the move", k).contains("1");
      }

      // Undecided, its intents left: the same again; a writer then waits out the deadline and aborts it.
      hooks.afterPrepare = true;
      assertThatThrownBy(() -> client.transact(keys.stream().map(k -> TxnItem.put("s", k, b("2"))).toList()))
          .isInstanceOf(ShardwiseException.class);
      hooks.afterPrepare = false;
      splitEveryShardAndMoveTheOneOf(cluster, client, keys.get(1));
      long started = System.nanoTime();
      client.put("s", keys.get(1), b("3"));
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(timeout.plusSeconds(2));
      for (Key k : keys) {
        assertThat(value(client, "s", s(k.partitionKey()))).as("%s: nothing of the aborted one", k).contains(k.equals(keys.get(1)) ? "3" : "1");
      }
    }
  }

  /** Splits every shard of table {@code s} by size, then moves the shard that holds {@code key} to another node. */
  private static void splitEveryShardAndMoveTheOneOf(TestCluster cluster, ShardwiseClient client, Key key) throws Exception {
    for (io.shardwise.client.ShardDescription d : client.describeTable("s", false).shards()) {
      client.splitShard("s", d.number());
    }
    int shards = client.describeTable("s", false).shards().size();
    // Every node has applied the splits (the move's source checks the shard against its own map).
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> cluster.nodes.stream()
        .allMatch(n -> n.map().table("s").orElseThrow().shards().size() == shards));
    io.shardwise.core.map.Table t = cluster.nodes.get(0).map().table("s").orElseThrow();
    io.shardwise.core.map.ShardAssignment shard = t.shardFor(key.partitionKey());
    ShardwiseNode source = cluster.node(shard.owner().value());
    String to = cluster.nodes.stream().map(n -> n.id().value()).filter(id -> !id.equals(shard.owner().value())).findFirst().orElseThrow();
    io.shardwise.proto.v1.MoveProgress last = TestCluster.moveShard(source, t, shard, to, "txn-move-" + System.nanoTime());
    assertThat(last.getPhase()).as(last.toString()).isEqualTo(io.shardwise.proto.v1.MoveProgress.Phase.DONE);
  }

  /** Transaction records kept in the shards the nodes lead. */
  private static int records(TestCluster cluster) {
    int n = 0;
    for (ShardwiseNode node : cluster.nodes) {
      io.shardwise.core.map.Table t = node.map().table("t").orElseThrow();
      for (io.shardwise.core.map.ShardAssignment s : t.shards()) {
        if (s.owner().equals(node.id())) {
          n += node.store().txnRecords(io.shardwise.server.storage.ShardRef.of(t, s.id().number()), 1000).size();
        }
      }
    }
    return n;
  }
}
