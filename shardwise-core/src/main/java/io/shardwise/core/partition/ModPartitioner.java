package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;

/**
 * Hash mod N: shard (and node) {@code hash mod N}, the hash read as unsigned.
 *
 * <p>Kept as the baseline that shows why it is not recommended: going from N to N+1 nodes changes
 * the owner of every key whose residues mod N and mod N+1 differ, about N/(N+1) of all keys, and
 * there is no way to move incrementally.
 */
public final class ModPartitioner implements HashPartitioner {

  private final HashFunction hash;
  private final int nodes;

  public ModPartitioner(HashFunction hash, int nodes) {
    this.hash = hash;
    this.nodes = Validation.positiveNodes(nodes);
  }

  @Override
  public Strategy strategy() {
    return Strategy.MOD;
  }

  @Override
  public HashFunction hashFunction() {
    return hash;
  }

  @Override
  public int shardCount() {
    return nodes;
  }

  @Override
  public int nodeCount() {
    return nodes;
  }

  @Override
  public int shardForHash(long h) {
    return (int) Long.remainderUnsigned(h, nodes);
  }

  @Override
  public int nodeOfShard(int shard) {
    Validation.checkIndex(shard, nodes, "shard");
    return shard;
  }

  @Override
  public ModPartitioner withNodeCount(int newNodes, KeySample sample) {
    return new ModPartitioner(hash, newNodes);
  }
}
