package io.shardwise.client;

import java.util.List;

/**
 * A secondary index of a table ({@link ShardwiseClient#indexes}): its field, scope and state, and
 * how far it is built — each replica of the table's shards is on a node that indexes the rows it
 * holds; {@code replicasBuilt} of {@code replicas} have ended their backfill, and {@code buildingOn}
 * names the nodes still at it (or not answering).
 *
 * <p>A global index counts a replica built once its node has fenced the writes planned without
 * the index; the controller then writes every row's entry, and marks it ready.
 *
 * @param id the map epoch that created it
 * @param scope "local" or "global"
 * @param state "building" (writes maintain it; queries do not use it yet) or "ready"
 * @param indexTable a global index's table ({@code table.field}); empty for a local index
 * @param mode a global index's: "sync" or "async"; empty for a local index
 * @param pendingRows an async index: rows written that it does not show yet (over every shard's leader)
 * @param lagMillis an async index: the age of the oldest such write (0: it shows every write)
 * @param covering a covering global index's covered fields (its entries hold them and the indexed one)
 */
public record IndexInfo(long id, String field, String scope, String state, int replicas, int replicasBuilt, long rowsIndexed,
    List<String> buildingOn, String indexTable, String mode, long pendingRows, long lagMillis, List<String> covering) {

  public IndexInfo {
    buildingOn = List.copyOf(buildingOn);
    covering = List.copyOf(covering);
  }

  /** Whether queries use it. */
  public boolean ready() {
    return "ready".equals(state);
  }
}
