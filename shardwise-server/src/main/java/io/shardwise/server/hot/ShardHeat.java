package io.shardwise.server.hot;

import io.shardwise.server.storage.ShardRef;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * How hot each shard a node owns is: its requests per second over the last minutes ({@link
 * #rates}), and which partition keys are hot in it. For the keys, one request in {@link #SAMPLE_EVERY} is
 * counted into the shard's {@link HeavyHitters} (the cost stays small on the request path), and
 * every {@link #HALF_LIFE_NANOS} the counts halve, so a key that cooled down fades within a minute.
 * Estimates of requests are the sampled counts times {@code SAMPLE_EVERY}.
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
    long decayedAt;
    // Monotonic keys: sampled writes, and those that wrote a partition key above every one before.
    long writes;
    long rising;
    byte[] highest;

    Sketch(long now) {
      this.decayedAt = now;
    }
  }

  private final ConcurrentHashMap<ShardRef, Sketch> sketches = new ConcurrentHashMap<>();
  private final ShardRates rates = new ShardRates();
  private final LongSupplier clock;

  public ShardHeat() {
    this(System::nanoTime);
  }

  ShardHeat(LongSupplier nanoClock) {
    this.clock = nanoClock;
  }

  /** A request for {@code partitionKey} of {@code shard}: counted once in {@link #SAMPLE_EVERY} times. */
  public void sample(ShardRef shard, byte[] partitionKey, boolean write) {
    if (ThreadLocalRandom.current().nextInt(SAMPLE_EVERY) != 0) {
      return;
    }
    count(shard, partitionKey, write);
  }

  /** Counts one sampled request (tests call it to count without sampling). */
  void count(ShardRef shard, byte[] partitionKey, boolean write) {
    Sketch s = sketches.computeIfAbsent(shard, r -> new Sketch(clock.getAsLong()));
    synchronized (s) {
      decayIfDue(s);
      s.keys.add(partitionKey, write);
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
      s.writes /= 2;
      s.rising /= 2;
      s.decayedAt += HALF_LIFE_NANOS;
    }
  }
}
