package io.shardwise.client;

import java.util.Map;
import java.util.OptionalLong;

/**
 * One node as {@link ShardwiseClient#clusterStatus} reports it. Keys and bytes are empty when the
 * node did not answer for them (down, or slow): unknown, not zero.
 *
 * @param trashEntries copies of shards in the node's trash (not served; purged after its trash grace)
 */
public record NodeStatus(String id, String address, Map<String, String> labels, boolean up, int shards, OptionalLong keys,
    OptionalLong bytes, int trashEntries, long trashBytes) {

  public NodeStatus {
    labels = Map.copyOf(labels);
  }
}
