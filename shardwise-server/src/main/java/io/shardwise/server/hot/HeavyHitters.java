package io.shardwise.server.hot;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The most frequent keys of a stream in bounded memory: Metwally, Agrawal and El Abbadi's
 * Space-Saving ("Efficient computation of frequent and top-k elements in data streams", 2005), with
 * reads and writes counted apart and an exponential decay so that heat from long ago fades.
 *
 * <p>It keeps at most {@code capacity} counters. A key already counted adds to its counter; a new key
 * takes a free counter, or else replaces the key with the smallest count, inheriting that count as
 * its {@code error}. The guarantees, for {@code n} counted events since the last decay: every key
 * counted more than {@code n / capacity} times is held; a held key's {@code count} is at least its
 * true count and at most {@code error} more. {@link #decay} halves every count and error (the
 * guarantees then hold for the halved stream).
 *
 * <p>Not thread-safe: the caller serialises access (a node samples into one per shard under a lock).
 */
public final class HeavyHitters {

  /**
   * One held key: its estimated count (of which {@code reads} and {@code writes}, and of the writes
   * {@code merges}: writes that merge, increments and appends), and the most it may be over.
   */
  public record Entry(byte[] key, long count, long error, long reads, long writes, long merges) {
    /** The least the key's true count can be. */
    public long guaranteed() {
      return count - error;
    }
  }

  private static final class Counter {
    final byte[] key;
    long count;
    long error;
    long reads;
    long writes;
    long merges;

    Counter(byte[] key) {
      this.key = key;
    }
  }

  private final int capacity;
  private final Map<ByteBuffer, Counter> counters;
  private long total;

  /** @param capacity the most keys held, 1 to 65,536 */
  public HeavyHitters(int capacity) {
    if (capacity < 1 || capacity > 65_536) {
      throw new IllegalArgumentException("capacity must be between 1 and 65,536, not " + capacity);
    }
    this.capacity = capacity;
    this.counters = new HashMap<>(capacity * 2);
  }

  /** Counts one event of {@code key} ({@code write}: a write, else a read). The key is copied when it is first held. */
  public void add(byte[] key, boolean write) {
    add(key, write, false);
  }

  /** Counts one event of {@code key}: a read, a write, or (with {@code merge}) a write that merges (an increment or an append). */
  public void add(byte[] key, boolean write, boolean merge) {
    total++;
    Counter c = counters.get(ByteBuffer.wrap(key));
    if (c == null) {
      if (counters.size() < capacity) {
        c = new Counter(key.clone());
      } else {
        Counter min = null;
        for (Counter x : counters.values()) {
          if (min == null || x.count < min.count) {
            min = x;
          }
        }
        counters.remove(ByteBuffer.wrap(min.key));
        c = new Counter(key.clone());
        c.count = min.count;
        c.error = min.count;
        // The replaced key's reads and writes are not inherited: they describe only what was seen of this key.
      }
      counters.put(ByteBuffer.wrap(c.key), c);
    }
    c.count++;
    if (write) {
      c.writes++;
      if (merge) {
        c.merges++;
      }
    } else {
      c.reads++;
    }
  }

  /** Halves every count, error and the total; counters that reach zero are freed. */
  public void decay() {
    total /= 2;
    counters.values().removeIf(c -> {
      c.count /= 2;
      c.error /= 2;
      c.reads /= 2;
      c.writes /= 2;
      c.merges /= 2;
      return c.count == 0;
    });
  }

  /** Events counted (halved by each decay). */
  public long total() {
    return total;
  }

  /** The {@code k} keys with the highest estimated counts, highest first (ties by key bytes). */
  public List<Entry> top(int k) {
    List<Entry> all = new ArrayList<>(counters.size());
    for (Counter c : counters.values()) {
      all.add(new Entry(c.key.clone(), c.count, c.error, c.reads, c.writes, c.merges));
    }
    all.sort(Comparator.comparingLong(Entry::count).reversed().thenComparing(Entry::key, java.util.Arrays::compareUnsigned));
    return all.subList(0, Math.min(k, all.size()));
  }
}
