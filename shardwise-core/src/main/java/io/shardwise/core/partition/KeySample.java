package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.util.SplitMix64;
import java.util.Arrays;

/**
 * A uniform sample of partition keys (with repeats, so hot keys weigh what they weigh), sorted, with
 * their hashes under one hash function. Range strategies use it to pre-split a table into roughly
 * equal shards and to find the largest shard to split; nothing else needs it.
 *
 * <p>Built by reservoir sampling (Vitter's Algorithm R) with a seeded generator, so the same keys
 * and seed give the same sample everywhere. Immutable once built.
 */
public final class KeySample {

  private static final KeySample EMPTY = new KeySample(new byte[0][], new HashPointIndex(new long[0], 64), 0);

  private final byte[][] keys;
  /** Hashes of {@link #keys}, ascending. */
  private final HashPointIndex hashes;
  private final long population;

  private KeySample(byte[][] keys, HashPointIndex hashes, long population) {
    this.keys = keys;
    this.hashes = hashes;
    this.population = population;
  }

  /** A sample of no keys. */
  public static KeySample empty() {
    return EMPTY;
  }

  /** A builder that keeps at most {@code capacity} keys. */
  public static Builder builder(int capacity, long seed, HashFunction hash) {
    return new Builder(capacity, seed, hash);
  }

  /** The sampled keys. */
  public int size() {
    return keys.length;
  }

  /** How many keys were offered to the builder. */
  public long population() {
    return population;
  }

  /** The sampled keys in unsigned byte order, repeats kept. Callers must not modify them. */
  byte[][] sortedKeys() {
    return keys;
  }

  /** Sampled keys in {@code [start, end)}; {@code end == null} is unbounded. */
  public int countKeys(byte[] start, byte[] end) {
    return lowerBound(end) - lowerBound(start);
  }

  /**
   * A split point for {@code [start, end)} that halves its sampled keys: the smallest sampled key at
   * or after the middle one that is strictly above {@code start}, or {@code null} if the range holds
   * no such key.
   */
  public byte[] medianKey(byte[] start, byte[] end) {
    int lo = lowerBound(start);
    int hi = lowerBound(end);
    for (int i = lo + (hi - lo) / 2; i < hi; i++) {
      if (Arrays.compareUnsigned(keys[i], start) > 0) {
        return keys[i].clone();
      }
    }
    return null;
  }

  /** Sampled keys whose hash lies in {@code [first, last]} (unsigned). */
  public int countHashes(long first, long last) {
    int end = last == -1L ? hashes.size() : hashes.lowerBound(last + 1);
    return end - hashes.lowerBound(first);
  }

  private int lowerBound(byte[] key) {
    if (key == null) {
      return keys.length;
    }
    int lo = 0;
    int hi = keys.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(keys[mid], key) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** Collects a sample. Not thread-safe. */
  public static final class Builder {
    private final byte[][] reservoir;
    private final SplitMix64 random;
    private final HashFunction hash;
    private long seen;

    private Builder(int capacity, long seed, HashFunction hash) {
      if (capacity < 1) {
        throw new IllegalArgumentException("sample capacity must be at least 1, not " + capacity);
      }
      this.reservoir = new byte[capacity][];
      this.random = new SplitMix64(seed);
      this.hash = hash;
    }

    /** Offers one key; the builder keeps it with probability capacity/seen. */
    public Builder add(byte[] key) {
      if (seen < reservoir.length) {
        reservoir[(int) seen] = key.clone();
      } else {
        long slot = Long.remainderUnsigned(random.nextLong(), seen + 1);
        if (slot < reservoir.length) {
          reservoir[(int) slot] = key.clone();
        }
      }
      seen++;
      return this;
    }

    public KeySample build() {
      byte[][] keys = Arrays.copyOf(reservoir, (int) Math.min(seen, reservoir.length));
      Arrays.sort(keys, Arrays::compareUnsigned);
      long[] hashes = new long[keys.length];
      for (int i = 0; i < keys.length; i++) {
        hashes[i] = hash.hash(keys[i]) ^ Long.MIN_VALUE;
      }
      Arrays.sort(hashes);
      return new KeySample(keys, new HashPointIndex(hashes, hash.bits()), seen);
    }
  }
}
