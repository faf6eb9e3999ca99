package io.shardwise.client;

import java.util.List;

/**
 * A table as the cluster reports it: its name and id, its partitioning with the values in effect,
 * its shards in position order, and the map epoch the answer was read at.
 */
public record TableDescription(String name, long id, TableSpec spec, List<ShardDescription> shards, long mapEpoch) {

  public TableDescription {
    shards = List.copyOf(shards);
  }
}
