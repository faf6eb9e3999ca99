package io.shardwise.server.storage;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Reads and writes served per shard since the store opened: the raw material of requests per
 * second per shard (a caller takes two readings and divides by the time between them). Counts
 * keys, not calls: a batch of ten puts is ten writes. Moves do not count; only served requests do.
 */
public final class ShardTraffic {

  /** Reads and writes of one shard so far. */
  public record Counts(long reads, long writes) {
    public static final Counts ZERO = new Counts(0, 0);
  }

  private static final class Counters {
    final LongAdder reads = new LongAdder();
    final LongAdder writes = new LongAdder();
  }

  private final ConcurrentHashMap<ShardRef, Counters> counters = new ConcurrentHashMap<>();

  void read(ShardRef shard) {
    of(shard).reads.increment();
  }

  void write(ShardRef shard) {
    of(shard).writes.increment();
  }

  /** The shard's counts so far; zero for a shard never served. */
  public Counts counts(ShardRef shard) {
    Counters c = counters.get(shard);
    return c == null ? Counts.ZERO : new Counts(c.reads.sum(), c.writes.sum());
  }

  private Counters of(ShardRef shard) {
    Counters c = counters.get(shard);
    return c != null ? c : counters.computeIfAbsent(shard, s -> new Counters());
  }
}
