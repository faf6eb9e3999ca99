package io.shardwise.core.partition;

import io.shardwise.core.key.Key;

/**
 * Decides where every row lives: a partition key maps to a shard, and a shard to the node that owns
 * it (its assignment). Shards are numbered {@code 0 .. shardCount()-1}, nodes
 * {@code 0 .. nodeCount()-1}.
 *
 * <p>Implementations are immutable values and thread-safe; a change of placement (a split, a new
 * node) yields a new partitioner. Only the partition key is ever consulted.
 */
public interface Partitioner {

  Strategy strategy();

  /** The number of shards (for {@code ring}/{@code tokens}, ring points; for {@code slots}, slots). */
  int shardCount();

  /** The number of nodes shards are assigned to. */
  int nodeCount();

  /** The shard that owns {@code partitionKey}. */
  int shardFor(byte[] partitionKey);

  /** The node that owns {@code shard}. */
  int nodeOfShard(int shard);

  /** The node that owns {@code partitionKey}. */
  default int nodeFor(byte[] partitionKey) {
    return nodeOfShard(shardFor(partitionKey));
  }

  /** The shard that owns {@code key}; only its partition key is consulted. */
  default int shardFor(Key key) {
    return shardFor(key.partitionKey());
  }

  /**
   * The partitioner this one becomes when the cluster grows or shrinks to {@code nodes} nodes,
   * changing as little as the strategy allows. New nodes are numbered after the existing ones;
   * shrinking removes the highest-numbered nodes. Strategies that split by size (range, hashrange)
   * use {@code sample} to find the largest shards.
   *
   * @throws IllegalArgumentException if the strategy cannot place onto {@code nodes} nodes
   */
  Partitioner withNodeCount(int nodes, KeySample sample);
}
