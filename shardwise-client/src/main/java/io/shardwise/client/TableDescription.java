package io.shardwise.client;

import java.util.List;

/**
 * A table as the cluster reports it: its name and id, its partitioning with the values in effect,
 * its shards in position order, and the map epoch the answer was read at.
 *
 * @param ringMembers a {@code ring} or {@code tokens} table of hash ranges: the nodes whose points
 *     are on its ring, in ring index order (node i of {@code simulate}); empty otherwise, and for a
 *     ring of whole arcs (one arc per shard, created before rings were hash ranges)
 * @param replicas replicas per shard (1: not replicated)
 * @param minInSync the fewest in-sync replicas a write needs
 */
public record TableDescription(String name, long id, TableSpec spec, List<ShardDescription> shards, long mapEpoch, List<String> ringMembers,
    int replicas, int minInSync, List<Index> indexes) {

  public TableDescription {
    shards = List.copyOf(shards);
    ringMembers = List.copyOf(ringMembers);
    indexes = List.copyOf(indexes);
  }

  /** A secondary index as the map has it: its field, "local" or "global", "building" or "ready" ({@link ShardwiseClient#indexes} tells its progress). */
  public record Index(String field, String scope, String state) {}

  /** True if every shard is a range of hashes, {@code [hashFirst, hashLast]}: hashrange, and rings of hash ranges. */
  public boolean hashRanges() {
    return spec.strategy().equals("hashrange") || !ringMembers.isEmpty();
  }
}
