package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.PendingMarker;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's side of asynchronous global indexes: it drains the pending markers of the shards it
 * leads, reports their lag, and makes a consistent query wait for them.
 *
 * <p><b>Writes.</b> A write of a row of a table with an async global index commits in the row's
 * shard alone; the store writes, in the same batch, the row's {@link PendingMarker} beside it (so
 * the marker is replicated, moved, split and merged with the row, and a new leader after a failover
 * has its old leader's markers).
 *
 * <p><b>Draining</b> (a thread per node, woken by markers written): for each shard this node
 * leads, a page of its pending rows is read, each row read at its leader, and {@link Reconcile}d
 * — its entries moved to its current value in one transaction per page — then the markers lose
 * the changes reconciled ({@link Mutation#reconciled}, through the shard's log: every replica
 * forgets the same ones). A marker written meanwhile keeps the newer changes; a reconcile that did
 * not commit leaves the row pending. A crash anywhere in between costs a reconcile again, never
 * an entry.
 *
 * <p><b>Lag</b> is the age of the oldest change still pending, by the leaders' clocks (the
 * {@code index status}, node stats and the {@code shardwise.index.lag} gauge). A <b>consistent</b>
 * query first asks each data shard's leader to wait until the rows pending when it asked are
 * reconciled up to the versions they had then ({@link #awaitReconciled}) — every write
 * acknowledged before the query began is among them — so no clock is compared across nodes.
 */
public final class AsyncIndexes implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(AsyncIndexes.class);
  /** Pending rows a look takes of each shard, and rows reconciled together (their entries in transactions of up to 100 items). */
  static final int PAGE = 128;
  /** How often the drainer looks for markers when none was written since its last look. */
  private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  /** How long the drainer waits between looks for markers written. */
  private static final long POLL_MILLIS = 2;
  /** How long it waits while no table has an async index (a wake-up every 2 ms on every node was a few % of a busy node's CPU). */
  private static final long NO_INDEX_POLL_MILLIS = 50;
  /** The most pending rows a consistent query's wait follows per shard. */
  static final int AWAIT_LIMIT = 100_000;

  private final ClusterContext ctx;
  private final GlobalIndexes.Cluster cluster;
  private final Reconcile reconcile;
  private final ExecutorService drainers;
  private final Thread loop;
  private final Object wake = new Object();
  private volatile boolean closed;
  /** Consistent queries waiting here now: the drainer looks at once while there are any. */
  private final java.util.concurrent.atomic.AtomicInteger waiting = new java.util.concurrent.atomic.AtomicInteger();

  /** @param parallel shards drained at once */
  public AsyncIndexes(ClusterContext ctx, GlobalIndexes globals, int parallel) {
    this.ctx = ctx;
    this.cluster = globals.cluster();
    this.reconcile = globals.reconcile();
    this.drainers = Executors.newFixedThreadPool(parallel, r -> {
      Thread t = new Thread(r, "index-reconcile-" + ctx.self());
      t.setDaemon(true);
      return t;
    });
    this.loop = new Thread(this::drainLoop, "index-drain-" + ctx.self());
    this.loop.setDaemon(true);
  }

  public void start() {
    loop.start();
  }

  // ------------------------------------------------------------------ draining

  private void drainLoop() {
    long seen = -1;
    long lastLook = 0;
    while (!closed) {
      try {
        long written = ctx.store().markersWritten();
        boolean worked = false;
        if (written != seen || waiting.get() > 0 || System.nanoTime() - lastLook > IDLE_NANOS) {
          seen = written;
          lastLook = System.nanoTime();
          worked = drainOnce() > 0;
        }
        if (!worked) {
          long poll = anyAsyncIndex() ? POLL_MILLIS : NO_INDEX_POLL_MILLIS;
          synchronized (wake) {
            wake.wait(poll);
          }
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        if (!closed) {
          LOG.warn("node {}: draining pending index markers failed (tried again): {}", ctx.self(), e.toString());
          sleepQuietly(100);
        }
      }
    }
  }

  private boolean anyAsyncIndex() {
    for (Table t : ctx.map().current().tables().values()) {
      if (!t.asyncIndexes().isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /**
   * One look at every shard this node leads of a table with an async global index: a page of each
   * one's pending rows, a table's pages reconciled together (rows of several shards share each
   * transaction: fewer, fuller transactions than a shard at a time), chunks at once. Returns the
   * rows whose markers were cleared.
   */
  int drainOnce() throws InterruptedException {
    ShardMap map = ctx.map().current();
    List<Future<Integer>> work = new ArrayList<>();
    for (Table t : map.tables().values()) {
      if (t.asyncIndexes().isEmpty()) {
        continue;
      }
      List<Pending> found = new ArrayList<>();
      for (ShardAssignment s : t.shards()) {
        if (ctx.self().equals(s.owner())) {
          ShardRef ref = ShardRef.of(t, s.id().number());
          ctx.store().pendingRows(ref, new byte[0], PAGE).forEach(r -> found.add(new Pending(ref, r)));
        }
      }
      for (int from = 0; from < found.size(); from += PAGE) {
        List<Pending> chunk = found.subList(from, Math.min(found.size(), from + PAGE));
        work.add(drainers.submit(() -> drain(t, chunk)));
      }
    }
    int cleared = 0;
    for (Future<Integer> f : work) {
      try {
        cleared += f.get();
      } catch (java.util.concurrent.ExecutionException e) {
        LOG.debug("node {}: pending rows were not reconciled (tried again): {}", ctx.self(), e.getCause().toString());
      }
    }
    return cleared;
  }

  /** A pending row of a shard this node leads. */
  private record Pending(ShardRef shard, ShardStore.PendingRow row) {}

  /** Reconciles {@code rows} of {@code table}; returns the rows whose markers lost what was reconciled. */
  private int drain(Table table, List<Pending> rows) {
    List<Key> keys = new ArrayList<>(rows.size());
    rows.forEach(r -> keys.add(Key.decode(r.row().key())));
    List<GetResponse> now = cluster.get(table.name(), keys);
    List<Reconcile.RowNow> read = new ArrayList<>(rows.size());
    for (int i = 0; i < rows.size(); i++) {
      GetResponse g = now.get(i);
      // An absent row was read after its marker: its state is at least as new as the marker's newest change.
      read.add(g.getFound() ? new Reconcile.RowNow(keys.get(i), g.getValue().toByteArray(), g.getVersion())
          : new Reconcile.RowNow(keys.get(i), null, rows.get(i).row().marker().latest()));
    }
    boolean[] done = reconcile.run(table, read, null);
    java.util.Map<ShardRef, List<Mutation>> marks = new java.util.LinkedHashMap<>();
    for (int i = 0; i < rows.size(); i++) {
      if (done[i]) {
        Pending p = rows.get(i);
        marks.computeIfAbsent(p.shard(), r -> new ArrayList<>()).add(Mutation.reconciled(p.shard(), p.row().key(), read.get(i).version()));
      }
    }
    int cleared = 0;
    for (List<Mutation> shardMarks : marks.values()) { // one write per shard: through its log
      try {
        ctx.shards().apply(shardMarks);
        cleared += shardMarks.size();
      } catch (io.shardwise.server.storage.VersionMismatchException e) {
        throw new AssertionError("a reconciled mark has no condition", e);
      } catch (RuntimeException e) {
        LOG.debug("node {}: markers of shard {} not cleared (reconciled again later): {}", ctx.self(), shardMarks.get(0).shard(), e.toString());
      }
    }
    return cleared;
  }

  // ------------------------------------------------------------------ consistent queries

  /**
   * Waits until the rows of {@code ref} (a shard this node leads) pending now are reconciled up to
   * the versions they have now, or {@code millis} pass.
   *
   * @return true once they are; false if the time ran out first
   */
  public boolean awaitReconciled(ShardRef ref, long millis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    List<ShardStore.PendingRow> rows = ctx.shards().pendingRows(ref, AWAIT_LIMIT); // after the read barrier: every acknowledged write applied here
    waiting.incrementAndGet();
    try {
      synchronized (wake) {
        wake.notifyAll();
      }
      int from = 0;
      while (true) {
        while (from < rows.size()) {
          ShardStore.PendingRow r = rows.get(from);
          PendingMarker m = ctx.store().pendingMarker(ref, r.key());
          if (m != null && m.pending(r.marker().latest())) {
            break;
          }
          from++; // reconciled up to what it held then (or further)
        }
        if (from == rows.size()) {
          return true;
        }
        if (System.nanoTime() - deadline > 0) {
          return false;
        }
        Thread.sleep(POLL_MILLIS);
      }
    } finally {
      waiting.decrementAndGet();
    }
  }

  // ------------------------------------------------------------------ lag

  /** Rows pending in the shards this node leads of {@code table}, and the age of the oldest change among them (0: none). */
  public record Lag(long rows, long millis) {}

  public Lag lag(Table table) {
    long rows = 0;
    long oldest = Long.MAX_VALUE;
    if (ctx.self() != null && !table.asyncIndexes().isEmpty()) {
      for (ShardAssignment s : table.shards()) {
        if (ctx.self().equals(s.owner())) {
          ShardStore.PendingSummary p = ctx.store().pendingSummary(ShardRef.of(table, s.id().number()));
          rows += p.rows();
          oldest = Math.min(oldest, p.oldestMillis());
        }
      }
    }
    return new Lag(rows, oldest == Long.MAX_VALUE ? 0 : Math.max(0, System.currentTimeMillis() - oldest));
  }

  /** The largest lag of any table's async indexes at the shards this node leads, in seconds (a gauge). */
  public double lagSeconds() {
    long max = 0;
    for (Table t : ctx.map().current().tables().values()) {
      if (!t.asyncIndexes().isEmpty()) {
        max = Math.max(max, lag(t).millis());
      }
    }
    return max / 1000.0;
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    closed = true;
    loop.interrupt();
    drainers.shutdownNow();
    try {
      loop.join(TimeUnit.SECONDS.toMillis(10));
      drainers.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
