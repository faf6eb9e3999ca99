package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.IndexStatus;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's part in building an index (run by the balancer's leader at every tick): once
 * every replica of a table is on a node whose backfill of a building index has ended ({@link
 * IndexProgress}), it marks the index ready in the map, by compare-and-set — from then on queries
 * use it. A controller that dies before does nothing harmful: the next leader looks again.
 *
 * <p>A global index counts a replica built once its node has drained the writes planned without the
 * index; then the controller backfills it ({@link GlobalIndexes#backfill}, on a thread of its own:
 * ticks go on) and marks it ready when the backfill has read every row. A backfill cut short (the
 * controller died, a row too long) is run again from the start by the next look: it only writes
 * entries rows call for, each checked against its row.
 */
public final class IndexReadiness {

  /** Writes a global index's entries for every row of its table; returns the rows indexed. */
  @FunctionalInterface
  public interface Backfill {
    long run(Table table, IndexDef index);
  }

  private static final Logger LOG = LoggerFactory.getLogger(IndexReadiness.class);
  private static final NodeStatsRequest INDEX_STATS = NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).build();

  private final Coordinator coordinator;
  private final Peers peers;
  private final Backfill backfill;
  private final java.util.concurrent.ExecutorService backfills = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "global-index-backfill");
    t.setDaemon(true);
    return t;
  });
  /** Global indexes (by id) whose backfill runs now. */
  private final java.util.Set<Long> running = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** Global indexes (by id) whose last backfill failed, and when it may run again (System.nanoTime). */
  private final java.util.Map<Long, Long> retryAfter = new java.util.concurrent.ConcurrentHashMap<>();
  /** How long a failed backfill waits before it runs again: each run reads every row of the table. */
  private static final java.time.Duration RETRY = java.time.Duration.ofSeconds(10);

  /** @param backfill how a global index is backfilled (null: global indexes are never made ready here) */
  public IndexReadiness(Coordinator coordinator, Peers peers, Backfill backfill) {
    this.coordinator = coordinator;
    this.peers = peers;
    this.backfill = backfill;
  }

  /** Marks ready every index of {@code map} whose backfills have all ended (global: starts its backfill); returns how many. */
  public int run(ShardMap map) {
    List<Table> building = new ArrayList<>();
    for (Table t : map.tables().values()) {
      if (t.indexes().stream().anyMatch(i -> i.state() == IndexDef.State.BUILDING)) {
        building.add(t);
      }
    }
    if (building.isEmpty()) {
      return 0;
    }
    List<NodeStatsResponse> stats = NodeStatsPoll.ask(peers, coordinator.liveNodesNow().values(), INDEX_STATS, Duration.ofSeconds(2))
        .answers();
    int ready = 0;
    for (Table t : building) {
      for (IndexDef i : t.indexes()) {
        if (i.state() != IndexDef.State.BUILDING) {
          continue;
        }
        IndexStatus status = IndexProgress.of(t, i, stats);
        if (i.scope() == IndexDef.Scope.GLOBAL) {
          if (IndexProgress.complete(status)) {
            startBackfill(t, i);
          }
          continue;
        }
        if (IndexProgress.complete(status) && markReady(t.name(), i.id())) {
          LOG.info("index {} of table {} is ready: {} rows indexed over {} replicas", i.field(), t.name(), status.getRowsIndexed(),
              status.getReplicas());
          ready++;
        }
      }
    }
    return ready;
  }

  private void startBackfill(Table table, IndexDef index) {
    Long after = retryAfter.get(index.id());
    if (backfill == null || (after != null && System.nanoTime() - after < 0) || !running.add(index.id())) {
      return;
    }
    try {
      backfills.execute(() -> {
        try {
          long started = System.nanoTime();
          long rows = backfill.run(table, index);
          if (markReady(table.name(), index.id())) {
            LOG.info("global index {} of table {} is ready: {} rows indexed in {} ms", index.field(), table.name(), rows,
                java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
          }
        } catch (RuntimeException e) {
          retryAfter.put(index.id(), System.nanoTime() + RETRY.toNanos());
          LOG.warn("backfilling global index {} of table {} failed (tried again in {} s): {}", index.field(), table.name(),
              RETRY.toSeconds(), e.toString());
        } finally {
          running.remove(index.id());
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      running.remove(index.id());
    }
  }

  /** Stops a backfill under way (the next controller runs it again). */
  public void close() {
    backfills.shutdownNow();
  }

  private boolean markReady(String table, long indexId) {
    ShardMap before = coordinator.readMap().map();
    ShardMap after = coordinator.updateMap(m -> {
      Optional<Table> t = m.table(table);
      if (t.isEmpty() || t.get().index(indexId).filter(i -> i.state() == IndexDef.State.BUILDING).isEmpty()) {
        return Optional.empty(); // dropped, or marked already
      }
      List<IndexDef> next = t.get().indexes().stream().map(i -> i.id() == indexId ? i.withState(IndexDef.State.READY) : i).toList();
      return Optional.of(ShardMapDelta.on(m).add(new ShardMapDelta.SetIndexes(table, next)).build());
    });
    return after.epoch() != before.epoch();
  }
}
