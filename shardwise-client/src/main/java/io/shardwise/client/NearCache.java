package io.shardwise.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import io.shardwise.core.key.Key;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The client's opt-in near-cache: values of recently read keys, kept for a short TTL so that a
 * read-hot key is answered in the client instead of by its shard's node (the hotspot remedy for a
 * key read far more than it is written).
 *
 * <p><b>What it costs.</b> A cached read may miss another client's write for up to the TTL: reads
 * are then stale by at most the TTL, not linearizable. This client's own writes are never missed:
 * a write marks its key before it is sent and again once it is acknowledged, and a read that was
 * in flight across either mark does not store what it fetched, so a read that starts after a write
 * returned fetches again. Absent keys are cached too (as absent).
 *
 * <p>Caffeine bounds the entries (W-TinyLFU keeps the frequently read ones) and expires them
 * {@code ttl} after they were stored. Thread-safe.
 */
final class NearCache {

  /** The longest TTL allowed: a near-cache trades staleness for load, and longer is rarely what anyone wants. */
  static final Duration MAX_TTL = Duration.ofSeconds(10);

  record CacheKey(String table, ByteBuffer key) {}

  /** What the cache holds for a key: a value read, or the mark of a write of this client. */
  sealed interface Entry permits Read, Written {}

  private record Read(Optional<Versioned> value) implements Entry {}

  /** A fresh object per write: a read in flight compares by identity, so any later write is seen. */
  private static final class Written implements Entry {}

  private final Cache<CacheKey, Entry> cache;
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();

  NearCache(Duration ttl, long maxKeys) {
    this(ttl, maxKeys, Ticker.systemTicker());
  }

  /** With a clock of its own, for tests. */
  NearCache(Duration ttl, long maxKeys, Ticker ticker) {
    validate(ttl, maxKeys);
    // Maintenance (eviction, expiry) on the calling thread, not on the common pool: on a small
    // machine that pool has one thread, shared with everything else in the process.
    this.cache = Caffeine.newBuilder().expireAfterWrite(ttl).maximumSize(maxKeys).ticker(ticker).executor(Runnable::run).build();
  }

  /**
   * @throws IllegalArgumentException unless {@code ttl} is in (0, {@link #MAX_TTL}] and {@code maxKeys} at least 1
   */
  static void validate(Duration ttl, long maxKeys) {
    if (ttl.isNegative() || ttl.isZero() || ttl.compareTo(MAX_TTL) > 0) {
      throw new IllegalArgumentException("a near-cache TTL must be above 0 and at most " + MAX_TTL.toSeconds() + " s, not " + ttl);
    }
    if (maxKeys < 1) {
      throw new IllegalArgumentException("a near-cache holds at least 1 key, not " + maxKeys);
    }
  }

  /**
   * A read's view of the cache: a hit with its value, or a miss with what the cache held for the key
   * then ({@code seen}, null or a write's mark), against which {@link #store} compares.
   */
  record Lookup(boolean hit, Optional<Versioned> value, CacheKey key, Entry seen) {}

  Lookup lookup(String table, Key key) {
    CacheKey k = new CacheKey(table, ByteBuffer.wrap(key.encode()));
    Entry seen = cache.getIfPresent(k);
    if (seen instanceof Read read) {
      hits.increment();
      return new Lookup(true, read.value(), k, seen);
    }
    misses.increment();
    return new Lookup(false, Optional.empty(), k, seen);
  }

  /** Stores what a read fetched after a {@link #lookup} missed, unless a write of the key was marked since. */
  void store(Lookup missed, Optional<Versioned> fetched) {
    cache.asMap().compute(missed.key(), (k, now) -> now == missed.seen() ? new Read(fetched) : now);
  }

  /** The cached value of {@code key}, or what {@code fetch} returns (then stored, see {@link #store}). */
  Optional<Versioned> get(String table, Key key, Supplier<Optional<Versioned>> fetch) {
    Lookup l = lookup(table, key);
    if (l.hit()) {
      return l.value();
    }
    Optional<Versioned> fetched = fetch.get();
    store(l, fetched);
    return fetched;
  }

  /** Marks a write of {@code key} by this client: call before sending it and again once it is answered. */
  void written(String table, Key key) {
    cache.put(new CacheKey(table, ByteBuffer.wrap(key.encode())), new Written());
  }

  /** Forgets every key of {@code table} (dropped, or brought back). */
  void forgetTable(String table) {
    cache.asMap().keySet().removeIf(k -> k.table().equals(table));
  }

  NearCacheStats stats() {
    return new NearCacheStats(hits.sum(), misses.sum(), cache.estimatedSize());
  }
}
