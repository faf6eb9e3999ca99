package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * Splittable hash ranges: each shard owns a contiguous range of the hash function's value space
 * {@code [0, 2^bits)}, and a shard can be split at any hash value or merged with its upper
 * neighbour (YugabyteDB's and DynamoDB's hash partitions). The ranges always cover the whole space
 * with no gap and no overlap.
 *
 * <p>Resizing follows {@link ContiguousLayout}: growing splits the shard holding the most sampled
 * keys (the widest on a tie) at the midpoint of its range and gives the upper half to the new node.
 *
 * <p>Immutable and thread-safe; {@link #split} and {@link #merge} return new partitioners.
 */
public final class HashRangePartitioner implements HashPartitioner, HashSpaceOwnership {

  private final HashFunction hash;
  private final int nodes;
  /** Inclusive start of each shard, sign bit flipped, strictly ascending; the first is 0. */
  private final long[] flippedStarts;
  private final int[] owners;
  private final HashPointIndex index;

  private HashRangePartitioner(HashFunction hash, int nodes, long[] flippedStarts, int[] owners) {
    this.hash = hash;
    this.nodes = nodes;
    this.flippedStarts = flippedStarts;
    this.owners = owners;
    this.index = new HashPointIndex(flippedStarts, hash.bits());
  }

  /** {@code shards} equal ranges, assigned to {@code nodes} nodes in contiguous blocks. */
  public static HashRangePartitioner evenly(HashFunction hash, int shards, int nodes) {
    Validation.positiveNodes(nodes);
    if (shards < 1) {
      throw new IllegalArgumentException("shard count must be at least 1, not " + shards);
    }
    BigInteger space = new BigInteger(Long.toUnsignedString(hash.maxValue())).add(BigInteger.ONE);
    if (space.compareTo(BigInteger.valueOf(shards)) < 0) {
      throw new IllegalArgumentException(
          "more shards (" + shards + ") than values of " + hash.name());
    }
    long[] starts = new long[shards];
    int[] owners = new int[shards];
    for (int i = 0; i < shards; i++) {
      starts[i] = space.multiply(BigInteger.valueOf(i)).divide(BigInteger.valueOf(shards)).longValue() ^ Long.MIN_VALUE;
      owners[i] = (int) ((long) i * nodes / shards);
    }
    return new HashRangePartitioner(hash, nodes, starts, owners);
  }

  @Override
  public Strategy strategy() {
    return Strategy.HASHRANGE;
  }

  @Override
  public HashFunction hashFunction() {
    return hash;
  }

  @Override
  public int shardCount() {
    return flippedStarts.length;
  }

  @Override
  public int nodeCount() {
    return nodes;
  }

  @Override
  public int shardForHash(long h) {
    // The shard before the first one that starts above h.
    return h == hash.maxValue() ? flippedStarts.length - 1 : index.lowerBound(h + 1) - 1;
  }

  @Override
  public int nodeOfShard(int shard) {
    return owners[shard];
  }

  /** The inclusive first hash value of {@code shard}, unsigned. */
  public long first(int shard) {
    return flippedStarts[shard] ^ Long.MIN_VALUE;
  }

  /** The inclusive last hash value of {@code shard}, unsigned. */
  public long last(int shard) {
    return shard + 1 < flippedStarts.length ? first(shard + 1) - 1 : hash.maxValue();
  }

  /**
   * Splits {@code shard} so that a new shard starts at hash value {@code at} (unsigned) and is owned
   * by {@code newOwner}; shards above it are renumbered up by one.
   *
   * @throws IllegalArgumentException unless {@code first(shard) < at <= last(shard)}
   */
  public HashRangePartitioner split(int shard, long at, int newOwner) {
    Validation.checkIndex(shard, flippedStarts.length, "shard");
    Validation.checkIndex(newOwner, nodes, "node");
    if (Long.compareUnsigned(at, first(shard)) <= 0 || Long.compareUnsigned(at, last(shard)) > 0) {
      throw new IllegalArgumentException(
          "split point " + Long.toUnsignedString(at) + " is not inside shard " + shard + " ("
              + Long.toUnsignedString(first(shard)) + ", " + Long.toUnsignedString(last(shard)) + "]");
    }
    long[] starts = new long[flippedStarts.length + 1];
    int[] next = new int[owners.length + 1];
    System.arraycopy(flippedStarts, 0, starts, 0, shard + 1);
    System.arraycopy(owners, 0, next, 0, shard + 1);
    starts[shard + 1] = at ^ Long.MIN_VALUE;
    next[shard + 1] = newOwner;
    System.arraycopy(flippedStarts, shard + 1, starts, shard + 2, flippedStarts.length - shard - 1);
    System.arraycopy(owners, shard + 1, next, shard + 2, owners.length - shard - 1);
    return new HashRangePartitioner(hash, nodes, starts, next);
  }

  /**
   * Merges {@code shard} with {@code shard + 1}; the merged shard keeps {@code shard}'s owner.
   *
   * @throws IndexOutOfBoundsException if {@code shard} is the last shard
   */
  public HashRangePartitioner merge(int shard) {
    Validation.checkIndex(shard, flippedStarts.length - 1, "shard with an upper neighbour");
    long[] starts = new long[flippedStarts.length - 1];
    int[] next = new int[owners.length - 1];
    System.arraycopy(flippedStarts, 0, starts, 0, shard + 1);
    System.arraycopy(owners, 0, next, 0, shard + 1);
    System.arraycopy(flippedStarts, shard + 2, starts, shard + 1, flippedStarts.length - shard - 2);
    System.arraycopy(owners, shard + 2, next, shard + 1, owners.length - shard - 2);
    return new HashRangePartitioner(hash, nodes, starts, next);
  }

  @Override
  public HashRangePartitioner withNodeCount(int newNodes, KeySample sample) {
    Validation.positiveNodes(newNodes);
    List<Long> starts = new ArrayList<>();
    for (long s : flippedStarts) {
      starts.add(s ^ Long.MIN_VALUE);
    }
    long max = hash.maxValue();
    double space = OwnedHashRange.unsigned(max) + 1.0;
    ContiguousLayout<Long> layout =
        new ContiguousLayout<>(
            starts,
            owners,
            new ContiguousLayout.Measure<>() {
              @Override
              public double size(Long start, Long end) {
                long last = end == null ? max : end - 1;
                // Sampled keys first; the width fraction (< 1) only breaks ties.
                return sample.countHashes(start, last) + (OwnedHashRange.unsigned(last - start) + 1.0) / space * 0.5;
              }

              @Override
              public Long splitPoint(Long start, Long end) {
                long last = end == null ? max : end - 1;
                if (start == last) {
                  return null;
                }
                return start + ((last - start) >>> 1) + 1; // where the upper half starts
              }
            });
    layout.resize(nodes, newNodes);
    long[] flipped = new long[layout.shards()];
    for (int i = 0; i < flipped.length; i++) {
      flipped[i] = layout.start(i) ^ Long.MIN_VALUE;
    }
    return new HashRangePartitioner(hash, newNodes, flipped, layout.ownerArray());
  }

  @Override
  public long spaceMax() {
    return hash.maxValue();
  }

  @Override
  public List<OwnedHashRange> ownership() {
    List<OwnedHashRange> out = new ArrayList<>();
    for (int shard = 0; shard < flippedStarts.length; shard++) {
      if (!out.isEmpty() && out.get(out.size() - 1).node() == owners[shard]) {
        OwnedHashRange prev = out.remove(out.size() - 1);
        out.add(new OwnedHashRange(prev.first(), last(shard), owners[shard]));
      } else {
        out.add(new OwnedHashRange(first(shard), last(shard), owners[shard]));
      }
    }
    return out;
  }
}
