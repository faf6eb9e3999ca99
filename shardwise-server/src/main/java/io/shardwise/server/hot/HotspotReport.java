package io.shardwise.server.hot;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ShardInfo;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What two readings of every node's shard counters (and, in the second, each shard's hot keys and
 * rate history) say about hotspots — for {@code shardwise hotspots} and the console alike: each
 * shard's requests per second and how many times its table's average shard that is, the keys that
 * take the largest shares of a hot shard's sampled requests, how its share got there (sudden,
 * gradual, steady), and one finding per hot shard with the remedy that fits it.
 */
public final class HotspotReport {

  private HotspotReport() {}

  /** A shard this hot (times its table's average shard) is a hotspot. */
  public static final double HOT = 2.0;

  /** A key taking at least this share of a hot shard's requests (guaranteed, not estimated) makes it a hot-key finding. */
  public static final double ONE_KEY = 0.5;

  /** One key of a shard: its share of the shard's sampled requests (at least {@code guaranteedShare}) and its mix. */
  public record Key(String key, double share, double guaranteedShare, double writeShare) {}

  /** Sampled writes before a shard's keys may be called monotonic. */
  public static final long MONOTONIC_MIN_WRITES = 20;

  /** The share of a shard's sampled writes that set a new highest key, from which its key is monotonic. */
  public static final double MONOTONIC = 0.8;

  /** What the findings need to know of a table. */
  public record TableShape(int shards, String strategy) {}

  /**
   * One shard over the interval. {@code writeShareOfTable}: its share of its table's writes;
   * {@code risingShare}: of its sampled writes, the share that wrote a partition key above every
   * one before ({@code highestKey}).
   */
  public record Shard(String table, long number, String owner, double readsPerSecond, double writesPerSecond, double timesAverage, List<Key> keys,
      String strategy, double writeShareOfTable, long sampledWrites, double risingShare, String highestKey, double[] shareHistory) {
    public double requestsPerSecond() {
      return readsPerSecond + writesPerSecond;
    }

    public String name() {
      return table + "/" + number;
    }
  }

  /** The shards by requests per second, busiest first. */
  public static List<Shard> shards(List<NodeStatsResponse> first, List<NodeStatsResponse> second, Map<String, TableShape> tables,
      double seconds) {
    Map<String, ShardInfo> before = new HashMap<>();
    first.forEach(r -> r.getShardsList().forEach(s -> before.put(s.getTable() + "/" + s.getNumber(), s)));
    record Rate(ShardInfo info, double reads, double writes) {}
    List<Rate> rates = new ArrayList<>();
    Map<String, Double> perTable = new HashMap<>();
    Map<String, Double> writesPerTable = new HashMap<>();
    for (NodeStatsResponse r : second) {
      for (ShardInfo s : r.getShardsList()) {
        ShardInfo was = before.get(s.getTable() + "/" + s.getNumber());
        double reads = was == null ? 0 : Math.max(0, s.getReads() - was.getReads()) / seconds;
        double writes = was == null ? 0 : Math.max(0, s.getWrites() - was.getWrites()) / seconds;
        rates.add(new Rate(s, reads, writes));
        perTable.merge(s.getTable(), reads + writes, Double::sum);
        writesPerTable.merge(s.getTable(), writes, Double::sum);
      }
    }
    // Each table's requests per second, aligned at the newest second (nodes tick on their own clocks: a second's skew).
    Map<String, double[]> tableSeconds = new HashMap<>();
    for (Rate rate : rates) {
      ShardInfo s = rate.info();
      int n = s.getReadsHistoryCount();
      double[] sum = tableSeconds.computeIfAbsent(s.getTable(), t -> new double[HISTORY_SECONDS]);
      for (int back = 0; back < Math.min(n, HISTORY_SECONDS); back++) {
        sum[HISTORY_SECONDS - 1 - back] += s.getReadsHistory(n - 1 - back) + s.getWritesHistory(n - 1 - back);
      }
    }
    List<Shard> out = new ArrayList<>();
    for (Rate rate : rates) {
      ShardInfo s = rate.info();
      TableShape shape = tables.getOrDefault(s.getTable(), new TableShape(1, ""));
      double average = perTable.get(s.getTable()) / Math.max(1, shape.shards());
      double tableWrites = writesPerTable.get(s.getTable());
      List<Key> keys = new ArrayList<>();
      for (HotKey k : s.getHotKeysList()) {
        double sampled = Math.max(1, s.getHotSampled());
        keys.add(new Key(ByteStrings.toDisplay(k.getKey().toByteArray()), k.getCount() / sampled, (k.getCount() - k.getError()) / sampled,
            k.getReads() + k.getWrites() == 0 ? 0 : (double) k.getWrites() / (k.getReads() + k.getWrites())));
      }
      out.add(new Shard(s.getTable(), s.getNumber(), s.getOwner(), rate.reads(), rate.writes(),
          average == 0 ? 0 : (rate.reads() + rate.writes()) / average, keys, shape.strategy(), tableWrites == 0 ? 0 : rate.writes() / tableWrites,
          s.getHotSampledWrites(), s.getHotSampledWrites() == 0 ? 0 : (double) s.getHotRisingWrites() / s.getHotSampledWrites(),
          ByteStrings.toDisplay(s.getHotHighestKey().toByteArray()), shareHistory(s, tableSeconds.get(s.getTable()))));
    }
    out.sort(Comparator.comparingDouble(Shard::requestsPerSecond).reversed().thenComparing(Shard::name));
    return out;
  }

  /** Seconds of history asked of each node. */
  public static final int HISTORY_SECONDS = 180;

  /** The shard's share of its table's requests, per second, oldest first (seconds the table had no request are left out). */
  private static double[] shareHistory(ShardInfo s, double[] table) {
    int n = Math.min(s.getReadsHistoryCount(), HISTORY_SECONDS);
    List<Double> shares = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int at = s.getReadsHistoryCount() - n + i;
      double total = table[HISTORY_SECONDS - n + i];
      if (total > 0) {
        shares.add((s.getReadsHistory(at) + s.getWritesHistory(at)) / total);
      }
    }
    return shares.stream().mapToDouble(Double::doubleValue).toArray();
  }

  /** Seconds per window when telling sudden from gradual. */
  public static final int WINDOW = 10;

  /**
   * How a shard's share of its table's requests got where it is, from its per-second history
   * (oldest first): <b>sudden</b> when most of the rise happened between two adjacent 10-second
   * windows (one key turned hot), <b>gradual</b> when it rose over the whole history (a monotonic
   * key, a growing tenant), or <b>steady</b>.
   */
  public static String trend(double[] shares) {
    int n = shares.length;
    if (n < 3 * WINDOW) {
      return String.format(Locale.ROOT, "only %d s of history: too short to tell sudden from gradual", n);
    }
    double earliest = mean(shares, 0, WINDOW);
    double recent = mean(shares, n - WINDOW, n);
    if (recent < 1.5 * earliest + 0.05) {
      return String.format(Locale.ROOT, "steady: %.0f%% of its table's requests %d s ago, %.0f%% now", 100 * earliest, n, 100 * recent);
    }
    double biggest = 0;
    int at = WINDOW;
    for (int t = WINDOW; t + WINDOW <= n; t++) {
      double step = mean(shares, t, t + WINDOW) - mean(shares, t - WINDOW, t);
      if (step > biggest) {
        biggest = step;
        at = t;
      }
    }
    if (biggest >= 0.6 * (recent - earliest)) {
      return String.format(Locale.ROOT, "sudden: its share of the table's requests jumped from %.0f%% to %.0f%% within %d s, %d s ago"
          + " (one key turning hot looks like this)", 100 * mean(shares, at - WINDOW, at), 100 * mean(shares, at, at + WINDOW), WINDOW, n - at);
    }
    return String.format(Locale.ROOT, "gradual: its share of the table's requests rose from %.0f%% to %.0f%% over %d s"
        + " (a monotonic key or a growing tenant looks like this)", 100 * earliest, 100 * recent, n);
  }

  private static double mean(double[] v, int from, int to) {
    double sum = 0;
    for (int i = from; i < to; i++) {
      sum += v[i];
    }
    return sum / (to - from);
  }

  /** One line per hot shard: what it is and what would fix it; or why there is nothing to fix. */
  public static List<String> findings(List<Shard> shards) {
    List<String> out = new ArrayList<>();
    for (Shard s : shards) {
      // A monotonic key on a range table: every insert lands on the shard holding the top of the key space.
      if (s.strategy().equals("range") && s.sampledWrites() >= MONOTONIC_MIN_WRITES && s.risingShare() >= MONOTONIC
          && s.writeShareOfTable() >= ONE_KEY) {
        out.add(String.format(Locale.ROOT, "%s takes %.0f%% of range table %s's writes, and %.0f%% of its sampled writes set a new highest key"
            + " (now '%s'): a monotonic key, such as a timestamp or a counter, sends every insert to one shard — hash it (a hashrange"
            + " table), or prefix it with a high-cardinality component (range scans over it then visit every shard)",
            s.name(), 100 * s.writeShareOfTable(), s.table(), 100 * s.risingShare(), s.highestKey()));
        continue;
      }
      if (s.timesAverage() < HOT || s.requestsPerSecond() == 0) {
        continue;
      }
      Key top = s.keys().isEmpty() ? null : s.keys().get(0);
      String head = String.format(Locale.ROOT, "%s is %.1f× its table's average shard (%,.0f requests/s; %s)", s.name(), s.timesAverage(),
          s.requestsPerSecond(), trend(s.shareHistory()));
      if (top != null && top.guaranteedShare() >= ONE_KEY) {
        boolean writeHot = top.writeShare() >= 0.5;
        out.add(head + String.format(Locale.ROOT, "; one key, '%s', takes at least %.0f%% of its requests (%.0f%% writes): a %s key — %s",
            top.key(), 100 * top.guaranteedShare(), 100 * top.writeShare(), writeHot ? "write-hot" : "read-hot",
            writeHot ? "isolate it in a shard of its own, or salt it if its value merges (a counter, an append)"
                : "isolate it, or spread its reads over replicas or a client near-cache")
            + (s.strategy().equals("range") || s.strategy().equals("hashrange")
                ? "; to isolate it: shardwise hotspots fix " + s.table() + " '" + top.key() + "'" : ""));
      } else {
        out.add(head + String.format(Locale.ROOT, "; no single key dominates (the hottest takes %.0f%%): split the shard by load and move a half",
            top == null ? 0 : 100 * top.share()));
      }
    }
    if (out.isEmpty()) {
      double busiest = shards.stream().mapToDouble(Shard::timesAverage).max().orElse(0);
      out.add(String.format(Locale.ROOT, "no hotspot: the busiest shard is %.1f× its table's average (a hotspot is %.1f× or more)", busiest, HOT));
    }
    return out;
  }
}
