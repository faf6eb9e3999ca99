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
 */
public final class IndexReadiness {

  private static final Logger LOG = LoggerFactory.getLogger(IndexReadiness.class);
  private static final NodeStatsRequest INDEX_STATS = NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).build();

  private final Coordinator coordinator;
  private final Peers peers;

  public IndexReadiness(Coordinator coordinator, Peers peers) {
    this.coordinator = coordinator;
    this.peers = peers;
  }

  /** Marks ready every local index of {@code map} whose backfills have all ended; returns how many. */
  public int run(ShardMap map) {
    List<Table> building = new ArrayList<>();
    for (Table t : map.tables().values()) {
      if (t.indexes().stream().anyMatch(i -> i.scope() == IndexDef.Scope.LOCAL && i.state() == IndexDef.State.BUILDING)) {
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
        if (i.scope() != IndexDef.Scope.LOCAL || i.state() != IndexDef.State.BUILDING) {
          continue;
        }
        IndexStatus status = IndexProgress.of(t, i, stats);
        if (IndexProgress.complete(status) && markReady(t.name(), i.id())) {
          LOG.info("index {} of table {} is ready: {} rows indexed over {} replicas", i.field(), t.name(), status.getRowsIndexed(),
              status.getReplicas());
          ready++;
        }
      }
    }
    return ready;
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
