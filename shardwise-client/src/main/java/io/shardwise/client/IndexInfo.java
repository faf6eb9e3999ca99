package io.shardwise.client;

import java.util.List;

/**
 * A secondary index of a table ({@link ShardwiseClient#indexes}): its field, scope and state, and
 * how far it is built — each replica of the table's shards is on a node that indexes the rows it
 * holds; {@code replicasBuilt} of {@code replicas} have ended their backfill, and {@code buildingOn}
 * names the nodes still at it (or not answering).
 *
 * @param id the map epoch that created it
 * @param state "building" (writes maintain it; queries do not use it yet) or "ready"
 */
public record IndexInfo(long id, String field, String scope, String state, int replicas, int replicasBuilt, long rowsIndexed,
    List<String> buildingOn) {

  public IndexInfo {
    buildingOn = List.copyOf(buildingOn);
  }

  /** Whether queries use it. */
  public boolean ready() {
    return "ready".equals(state);
  }
}
