package io.shardwise.client;

import java.util.List;

/** The cluster at one map epoch: every node the map knows or ZooKeeper lists, and every table. */
public record ClusterStatus(long mapEpoch, List<NodeStatus> nodes, List<TableDescription> tables) {

  public ClusterStatus {
    nodes = List.copyOf(nodes);
    tables = List.copyOf(tables);
  }
}
