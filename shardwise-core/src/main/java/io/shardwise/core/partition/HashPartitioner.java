package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;

/**
 * A partitioner that hashes the partition key with a stable {@link HashFunction} and places the
 * hash. {@link #shardForHash(long)} is the allocation-free lookup path for a pre-hashed key.
 */
public interface HashPartitioner extends Partitioner {

  HashFunction hashFunction();

  /** The shard that owns a key whose partition key hashes to {@code hash}. Allocation-free. */
  int shardForHash(long hash);

  /** The node that owns a key whose partition key hashes to {@code hash}. Allocation-free. */
  default int nodeForHash(long hash) {
    return nodeOfShard(shardForHash(hash));
  }

  @Override
  default int shardFor(byte[] partitionKey) {
    return shardForHash(hashFunction().hash(partitionKey));
  }
}
