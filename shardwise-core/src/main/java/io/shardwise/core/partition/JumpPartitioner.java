package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;

/**
 * Jump consistent hash: Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm"
 * (2014), exactly as the paper's reference code, so bucket numbers match every other
 * implementation of it for the same 64-bit input.
 *
 * <p>Growing from N to N+1 buckets moves exactly the keys that land in the new bucket (about
 * 1/(N+1)); it needs no memory, but buckets can only be added or removed at the end.
 */
public final class JumpPartitioner implements HashPartitioner {

  private final HashFunction hash;
  private final int nodes;

  public JumpPartitioner(HashFunction hash, int nodes) {
    this.hash = hash;
    this.nodes = Validation.positiveNodes(nodes);
  }

  /** The paper's {@code JumpConsistentHash(key, num_buckets)}. */
  public static int jump(long key, int buckets) {
    long b = -1;
    long j = 0;
    while (j < buckets) {
      b = j;
      key = key * 2862933555777941757L + 1;
      j = (long) ((b + 1) * ((double) (1L << 31) / (double) ((key >>> 33) + 1)));
    }
    return (int) b;
  }

  @Override
  public Strategy strategy() {
    return Strategy.JUMP;
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
    return jump(h, nodes);
  }

  @Override
  public int nodeOfShard(int shard) {
    Validation.checkIndex(shard, nodes, "shard");
    return shard;
  }

  @Override
  public JumpPartitioner withNodeCount(int newNodes, KeySample sample) {
    return new JumpPartitioner(hash, newNodes);
  }
}
