package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.IndexBuild;
import io.shardwise.proto.v1.IndexStatus;
import io.shardwise.proto.v1.NodeStatsResponse;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * How far a table's local index is built, from the nodes' stats: each replica of each shard is on
 * a node that indexes the rows it holds, and counts as built once that node's backfill has ended.
 * An index is ready when every replica counts — then every row of the table is indexed wherever
 * it is stored, and every write keeps it so.
 */
public final class IndexProgress {

  private IndexProgress() {}

  /** The status of {@code index} of {@code table}, by the stats of the nodes that answered ({@code stats}). */
  public static IndexStatus of(Table table, IndexDef index, List<NodeStatsResponse> stats) {
    Map<String, IndexBuild> builds = new TreeMap<>();
    for (NodeStatsResponse n : stats) {
      for (IndexBuild b : n.getIndexBuildsList()) {
        if (b.getTableId() == table.id() && b.getIndexId() == index.id()) {
          builds.put(n.getNode(), b);
        }
      }
    }
    int replicas = 0;
    int built = 0;
    TreeSet<String> buildingOn = new TreeSet<>();
    for (ShardAssignment s : table.shards()) {
      for (NodeId node : s.replicas()) {
        replicas++;
        IndexBuild b = builds.get(node.value());
        if (b != null && b.getBuilt()) {
          built++;
        } else {
          buildingOn.add(node.value());
        }
      }
    }
    long rows = builds.values().stream().mapToLong(IndexBuild::getRows).sum();
    long pending = builds.values().stream().mapToLong(IndexBuild::getPendingRows).sum();
    long lag = builds.values().stream().mapToLong(IndexBuild::getLagMillis).max().orElse(0);
    return IndexStatus.newBuilder().setId(index.id()).setField(index.field()).setScope(index.scope().label()).setState(index.state().label())
        .setReplicas(replicas).setReplicasBuilt(built).setRowsIndexed(rows).addAllBuildingOn(buildingOn).setPendingRows(pending)
        .setLagMillis(lag).build();
  }

  /** Whether every replica of the table is on a node whose backfill of the index has ended. */
  public static boolean complete(IndexStatus status) {
    return status.getReplicasBuilt() == status.getReplicas();
  }
}
