package io.shardwise.server.hot;

import io.shardwise.server.storage.ShardRef;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import java.util.function.LongUnaryOperator;

/**
 * How hot each shard a node owns is: its requests per second over the last minutes ({@link
 * #rates}), and which partition keys are hot in it. For the keys, one request in {@link #SAMPLE_EVERY} is
 * counted into the shard's {@link HeavyHitters} (the cost stays small on the request path), and
 * every {@link #HALF_LIFE_NANOS} the counts halve, so a key that cooled down fades within a minute.
 * Estimates of requests are the sampled counts times {@code SAMPLE_EVERY}. The same samples feed
 * each range and hashrange shard's {@link LoadSplitFinder} ({@link #loadSplit}).
 */
public final class ShardHeat {

  /** One request in this many is sampled. */
  public static final int SAMPLE_EVERY = 16;

  /** Keys held per shard. */
  public static final int KEYS_PER_SHARD = 64;

  /** How often the counts halve: 10 s. */
  static final long HALF_LIFE_NANOS = 10_000_000_000L;

  private static final class Sketch {
    final HeavyHitters keys = new HeavyHitters(KEYS_PER_SHARD);
    final LoadSplitFinder splits; // range and hashrange shards only
    long decayedAt;
    // Monotonic keys: sampled writes, and those that wrote a partition key above every one before.
    long writes;
    long rising;
    byte[] highest;

    Sketch(long now, boolean ordered) {
      this.decayedAt = now;
      this.splits = ordered ? new LoadSplitFinder() : null;
    }
  }

  private final ConcurrentHashMap<ShardRef, Sketch> sketches = new ConcurrentHashMap<>();
  private final ShardRates rates = new ShardRates();
  private final LongSupplier clock;
  private final LongUnaryOperator random;
  private volatile boolean sampling = true;

  public ShardHeat() {
    this(System::nanoTime, bound -> ThreadLocalRandom.current().nextLong(bound));
  }

  /**
   * @param nanoClock the time counts decay by
   * @param random {@code n -> } a uniform integer in {@code [0, n)}: picks the load split finders'
   *     candidates (tests pass a seeded one, so a split point replays exactly)
   */
  ShardHeat(LongSupplier nanoClock, LongUnaryOperator random) {
    this.clock = nanoClock;
    this.random = random;
  }

  /** A request for {@code partitionKey} of {@code shard}: counted once in {@link #SAMPLE_EVERY} times. */
  public void sample(ShardRef shard, byte[] partitionKey, boolean write) {
    sample(shard, partitionKey, write, false);
  }

  /** {@link #sample(ShardRef, byte[], boolean)}; {@code merge}: the write merges (an increment or an append). */
  public void sample(ShardRef shard, byte[] partitionKey, boolean write, boolean merge) {
    if (!sampling || ThreadLocalRandom.current().nextInt(SAMPLE_EVERY) != 0) {
      return;
    }
    count(shard, partitionKey, write, merge);
  }

  /** Counts one sampled request (tests call it to count without sampling). */
  void count(ShardRef shard, byte[] partitionKey, boolean write) {
    count(shard, partitionKey, write, false);
  }

  void count(ShardRef shard, byte[] partitionKey, boolean write, boolean merge) {
    Sketch s = sketches.computeIfAbsent(shard, r -> new Sketch(clock.getAsLong(), r.layout() == ShardRef.Layout.KEY || r.layout() == ShardRef.Layout.HASH));
    synchronized (s) {
      decayIfDue(s);
      s.keys.add(partitionKey, write, merge);
      if (s.splits != null) {
        s.splits.record(shard.placementKey(partitionKey), random);
      }
      if (write) {
        s.writes++;
        if (s.highest == null || java.util.Arrays.compareUnsigned(partitionKey, s.highest) > 0) {
          s.rising++;
          s.highest = partitionKey.clone();
        }
      }
    }
  }

  /**
   * The shard's hottest keys now (sampled counts) and the sampled total they are shares of; of the
   * sampled writes, how many wrote a partition key above every one before ({@code rising}: nearly
   * all of them for a timestamp or a counter, few for random keys), and the highest key written.
   */
  public record Hot(List<HeavyHitters.Entry> keys, long sampled, long sampledWrites, long rising, byte[] highest) {
    public static final Hot NONE = new Hot(List.of(), 0, 0, 0, new byte[0]);
  }

  public Hot hottest(ShardRef shard, int k) {
    Sketch s = sketches.get(shard);
    if (s == null) {
      return Hot.NONE;
    }
    synchronized (s) {
      decayIfDue(s);
      return new Hot(s.keys.top(k), s.keys.total(), s.writes, s.rising, s.highest == null ? new byte[0] : s.highest.clone());
    }
  }

  /**
   * Where a load split of a range or hashrange shard would go, from its sampled requests: the
   * point's placement key ({@link ShardRef#placementKey}) and the share of requests below it; or,
   * with {@code point} null, why there is none.
   */
  public record LoadSplit(LoadSplitFinder.Point point, String refusal) {}

  /** A hot key holding more than this share of one side's sampled requests makes a load split pointless. */
  static final double HOT_KEY_SHARE = 0.5;

  /** With no even split, a key holding more than this share of the requests is named as the reason. */
  static final double UNEVEN_HOT_KEY_SHARE = 0.25;

  /**
   * The load split point of {@code shard}, unless the requests are too few, no candidate balances
   * them, or one partition key carries most of a side's requests: a split there would leave the
   * key as hot as before, alone or nearly so in its half (a hot key is isolated or salted, not
   * split around).
   */
  public LoadSplit loadSplit(ShardRef shard) {
    Sketch s = sketches.get(shard);
    if (s == null || s.splits == null) {
      return new LoadSplit(null, s == null ? "no requests sampled" : "only range and hashrange shards split by load");
    }
    synchronized (s) {
      decayIfDue(s);
      LoadSplitFinder.Point p = s.splits.best();
      List<HeavyHitters.Entry> top = s.keys.top(1);
      if (p == null) {
        long counted = s.splits.mostCounted();
        if (counted < LoadSplitFinder.MIN_COUNTED) {
          return new LoadSplit(null, "too few requests sampled (" + counted + " of the " + LoadSplitFinder.MIN_COUNTED + " a point needs)");
        }
        if (!top.isEmpty() && top.get(0).guaranteed() > UNEVEN_HOT_KEY_SHARE * s.keys.total()) {
          return new LoadSplit(null, "one partition key carries about " + Math.round(100.0 * top.get(0).guaranteed() / s.keys.total())
              + "% of the shard's requests, so no split divides them evenly: a hot key to isolate or salt, not a split");
        }
        return new LoadSplit(null, "no sampled key splits the requests evenly enough (a few keys take most of them)");
      }
      if (!top.isEmpty() && s.keys.total() > 0) {
        HeavyHitters.Entry hot = top.get(0);
        boolean lower = java.util.Arrays.compareUnsigned(shard.placementKey(hot.key()), p.key()) < 0;
        double side = s.keys.total() * (lower ? p.lowerShare() : 1 - p.lowerShare());
        if (hot.guaranteed() > HOT_KEY_SHARE * side) {
          return new LoadSplit(null, "one partition key carries about " + Math.round(100 * Math.min(1, hot.guaranteed() / side))
              + "% of the " + (lower ? "lower" : "upper") + " half's requests: a hot key to isolate or salt, not a split");
        }
      }
      return new LoadSplit(p, "");
    }
  }

  /** Partition keys, over every shard sampled here, that take at least {@code share} of their shard's sampled requests (guaranteed). */
  public int hotKeys(double share) {
    int n = 0;
    for (Sketch s : sketches.values()) {
      synchronized (s) {
        decayIfDue(s);
        long total = s.keys.total();
        for (HeavyHitters.Entry e : s.keys.top(KEYS_PER_SHARD)) {
          if (total > 0 && e.guaranteed() >= share * total) {
            n++;
          }
        }
      }
    }
    return n;
  }

  /** Turns the sampling of keys on or off (off: only to measure its cost; no key is ever hot then). Rates are kept either way. */
  public void sampling(boolean on) {
    this.sampling = on;
  }

  /** Each shard's requests per second over the last minutes (the node ticks it once a second). */
  public ShardRates rates() {
    return rates;
  }

  /** Forgets a shard (it moved away or was dropped). */
  public void forget(ShardRef shard) {
    sketches.remove(shard);
  }

  private void decayIfDue(Sketch s) {
    long now = clock.getAsLong();
    while (now - s.decayedAt >= HALF_LIFE_NANOS) {
      s.keys.decay();
      if (s.splits != null) {
        s.splits.decay();
      }
      s.writes /= 2;
      s.rising /= 2;
      s.decayedAt += HALF_LIFE_NANOS;
    }
  }
}
