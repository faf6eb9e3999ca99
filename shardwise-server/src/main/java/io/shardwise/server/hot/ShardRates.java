package io.shardwise.server.hot;

import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardTraffic;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Requests per second per shard for the last {@link #SECONDS} seconds: the time series that tells a
 * shard that turned hot at once (a key went viral) from one that warmed up over minutes (a
 * monotonic key, a growing tenant). Fed once a second with each owned shard's counts so far
 * ({@link ShardTraffic}); 1.4 KB per shard.
 */
public final class ShardRates {

  /** Seconds kept per shard. */
  public static final int SECONDS = 180;

  private static final class Series {
    final int[] reads = new int[SECONDS];
    final int[] writes = new int[SECONDS];
    int next;
    int filled;
    long lastReads;
    long lastWrites;

    Series(ShardTraffic.Counts start) {
      lastReads = start.reads();
      lastWrites = start.writes();
    }
  }

  /** A shard's reads and writes per second, oldest first (at most {@link #SECONDS} of each). */
  public record History(int[] reads, int[] writes) {
    public static final History NONE = new History(new int[0], new int[0]);
  }

  private final ConcurrentHashMap<ShardRef, Series> series = new ConcurrentHashMap<>();

  /** One second has passed: {@code counts} are the counts so far of every shard this node owns now. */
  public void tick(Map<ShardRef, ShardTraffic.Counts> counts) {
    series.keySet().retainAll(counts.keySet()); // shards that left start afresh if they come back
    counts.forEach((shard, now) -> {
      Series s = series.get(shard);
      if (s == null) {
        series.put(shard, new Series(now)); // the first second starts here
        return;
      }
      synchronized (s) {
        s.reads[s.next] = (int) Math.min(Integer.MAX_VALUE, Math.max(0, now.reads() - s.lastReads));
        s.writes[s.next] = (int) Math.min(Integer.MAX_VALUE, Math.max(0, now.writes() - s.lastWrites));
        s.lastReads = now.reads();
        s.lastWrites = now.writes();
        s.next = (s.next + 1) % SECONDS;
        s.filled = Math.min(SECONDS, s.filled + 1);
      }
    });
  }

  /** The last {@code seconds} seconds of {@code shard} (fewer if it has not been owned that long). */
  public History history(ShardRef shard, int seconds) {
    Series s = series.get(shard);
    if (s == null) {
      return History.NONE;
    }
    synchronized (s) {
      int n = Math.min(Math.min(seconds, SECONDS), s.filled);
      int[] reads = new int[n];
      int[] writes = new int[n];
      for (int i = 0; i < n; i++) {
        int at = Math.floorMod(s.next - n + i, SECONDS);
        reads[i] = s.reads[at];
        writes[i] = s.writes[at];
      }
      return new History(reads, writes);
    }
  }
}
