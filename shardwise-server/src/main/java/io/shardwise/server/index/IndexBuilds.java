package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.IndexBuild;
import io.shardwise.server.storage.ShardStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's local indexes: which the store maintains (set from each map before requests are routed
 * by it, {@link #define}) and the backfills that index the rows stored before an index existed
 * here ({@link #backfill}), one table at a time on a thread of their own while writes go on. A
 * node that restarts, that learns of an index late, or whose backfill was cut short by a crash runs
 * it again (a store records an index built only once its backfill has ended).
 *
 * <p>A global index has no entries here; a node counts it built once it has drained the writes it
 * took under a map without it ({@link GlobalIndexFence#drain}), so that the controller's backfill
 * reads no row such a write may still change.
 */
public final class IndexBuilds implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(IndexBuilds.class);

  private final ShardStore store;
  private final String node;
  private final ExecutorService worker;
  private final Set<Long> queued = ConcurrentHashMap.newKeySet();
  /** Rows indexed by the backfill of each table, this process's runs. */
  private final Map<Long, Long> rows = new ConcurrentHashMap<>();
  /** Global indexes whose earlier writes have drained here (by index id), this process's run. */
  private final Set<Long> drained = ConcurrentHashMap.newKeySet();
  private volatile GlobalIndexFence fence;
  private volatile GlobalIndexes globals;
  private volatile AsyncIndexes async;
  private volatile ShardMap last;

  public IndexBuilds(ShardStore store, String node) {
    this.store = store;
    this.node = node;
    this.worker = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "index-backfill-" + node);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Makes the store keep exactly the local indexes {@code next} gives each table (and none of
   * tables it no longer has). Called before {@code next} routes any request.
   */
  public void define(ShardMap next) {
    Set<Long> kept = store.indexedTables();
    for (Table t : next.tables().values()) {
      if (!t.indexes().isEmpty() || kept.contains(t.id())) {
        List<Long> dropped = store.defineIndexes(t);
        if (!dropped.isEmpty()) {
          LOG.info("node {}: indexes {} of table {} dropped: their entries deleted", node, dropped, t.name());
        }
      }
    }
    for (long tableId : kept) {
      if (next.tableById(tableId).isEmpty()) {
        store.forgetIndexes(tableId);
      }
    }
  }

  /**
   * The fence this node's writes pass (none yet: no write has been taken, nothing to drain), and
   * its side of global indexes (the rows a backfill run here has indexed, reported with the index).
   */
  public void attach(GlobalIndexFence fence, GlobalIndexes globals, AsyncIndexes async) {
    this.fence = fence;
    this.globals = globals;
    this.async = async;
  }

  /**
   * Starts the backfill of every table whose local indexes in {@code next} are not all built here,
   * and the drain of the writes taken before each global index of {@code next} this node has not
   * drained yet. Called once {@code next} routes requests.
   */
  public void backfill(ShardMap next) {
    last = next;
    for (Table t : next.tables().values()) {
      for (IndexDef i : t.globalIndexes()) {
        if (i.state() == IndexDef.State.BUILDING && !drained.contains(i.id())) {
          drain(i.id());
        }
      }
    }
    for (Table t : next.tables().values()) {
      for (IndexDef i : store.definedIndexes(t.id())) {
        if (!store.indexBuilt(t.id(), i.id())) {
          submit(t.id(), t.name());
          break;
        }
      }
    }
  }

  private void drain(long indexId) {
    try {
      worker.execute(() -> {
        GlobalIndexFence f = fence;
        if (f != null) {
          f.drain();
        }
        drained.add(indexId);
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      // closing: nothing more is reported
    }
  }

  private void submit(long tableId, String name) {
    if (!queued.add(tableId)) {
      return;
    }
    try {
      worker.execute(() -> {
        try {
          long started = System.nanoTime();
          ShardStore.Backfill done = store.backfillIndexes(tableId, n -> rows.put(tableId, n));
          rows.put(tableId, done.rows());
          LOG.info("node {}: indexes of table {} built here: {} rows, {} entries, {} ms", node, name, done.rows(), done.entries(),
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        } catch (RuntimeException e) {
          LOG.warn("node {}: backfilling the indexes of table {} failed (the next map change tries again): {}", node, name, e.toString());
        } finally {
          queued.remove(tableId);
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      queued.remove(tableId);
    }
  }

  /** The indexes this node keeps (local) or fences (global), each built (drained) here or not, for the node's stats. */
  public List<IndexBuild> states() {
    List<IndexBuild> out = new ArrayList<>();
    ShardMap map = last;
    if (map != null) {
      for (Table t : map.tables().values()) {
        AsyncIndexes.Lag lag = async == null || t.asyncIndexes().isEmpty() ? null : async.lag(t);
        for (IndexDef i : t.globalIndexes()) {
          GlobalIndexes g = globals;
          IndexBuild.Builder b = IndexBuild.newBuilder().setTableId(t.id()).setIndexId(i.id()).setBuilt(i.state() == IndexDef.State.READY
              || drained.contains(i.id())).setRows(g == null ? 0 : g.backfilled(i.id()));
          if (i.async() && lag != null) {
            b.setPendingRows(lag.rows()).setLagMillis(lag.millis());
          }
          out.add(b.build());
        }
      }
    }
    for (long tableId : store.indexedTables()) {
      for (IndexDef i : store.definedIndexes(tableId)) {
        out.add(IndexBuild.newBuilder().setTableId(tableId).setIndexId(i.id()).setBuilt(store.indexBuilt(tableId, i.id()))
            .setRows(rows.getOrDefault(tableId, 0L)).build());
      }
    }
    return out;
  }

  @Override
  public void close() {
    worker.shutdownNow();
    try {
      worker.awaitTermination(10, TimeUnit.SECONDS); // a batch under way ends before the store closes
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
