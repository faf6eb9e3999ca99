package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;

/**
 * Rendezvous (highest random weight) hashing, Thaler and Ravishankar (1998): every node scores the
 * key and the highest score wins.
 *
 * <p>The score of node n for a key hash k is {@code fmix64(k XOR seed(n))}, unsigned, where
 * {@code seed(n)} is the table's hash of the node's decimal number and {@code fmix64} is
 * MurmurHash3's 64-bit finalizer; ties go to the lower node. A node's seed never depends on the
 * other nodes, so adding a node moves only the keys the new node wins (about 1/(N+1)). Lookup
 * costs O(N).
 */
public final class RendezvousPartitioner implements HashPartitioner {

  private final HashFunction hash;
  private final long[] seeds;

  public RendezvousPartitioner(HashFunction hash, int nodes) {
    this.hash = hash;
    this.seeds = new long[Validation.positiveNodes(nodes)];
    for (int n = 0; n < nodes; n++) {
      seeds[n] = hash.hash(Integer.toString(n));
    }
  }

  /** MurmurHash3's fmix64 finalizer. */
  static long fmix64(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    k ^= k >>> 33;
    return k;
  }

  @Override
  public Strategy strategy() {
    return Strategy.RENDEZVOUS;
  }

  @Override
  public HashFunction hashFunction() {
    return hash;
  }

  @Override
  public int shardCount() {
    return seeds.length;
  }

  @Override
  public int nodeCount() {
    return seeds.length;
  }

  @Override
  public int shardForHash(long h) {
    int best = 0;
    long bestScore = fmix64(h ^ seeds[0]) ^ Long.MIN_VALUE;
    for (int n = 1; n < seeds.length; n++) {
      long score = fmix64(h ^ seeds[n]) ^ Long.MIN_VALUE; // flipped: signed order == unsigned order
      if (score > bestScore) {
        bestScore = score;
        best = n;
      }
    }
    return best;
  }

  @Override
  public int nodeOfShard(int shard) {
    Validation.checkIndex(shard, seeds.length, "shard");
    return shard;
  }

  @Override
  public RendezvousPartitioner withNodeCount(int newNodes, KeySample sample) {
    return new RendezvousPartitioner(hash, newNodes);
  }
}
