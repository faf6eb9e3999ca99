package io.shardwise.bench;

import io.shardwise.client.QueryResult;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * What a query costs as the table has more shards, without an index and through a local one: the
 * same documents in tables of 3, 6 and 12 shards (say), each document a {@code color} of {@code
 * colors} values (a query's selectivity is 1 / colors), queried {@code color = 'cN'} by several
 * threads for the same time — first every table without an index (each shard scans all its rows),
 * then with a local index on {@code color} (each shard reads only its matching entries and rows).
 * Both read every shard at once and wait for the slowest (scatter/gather): throughput does not
 * grow with shards, and the tail grows with the fan-out. Then the local index is dropped and a
 * global one made ({@code docs_N.color}, hashrange over one shard per node): a query reads one index
 * shard, then fetches its rows by key from the shards that hold them. Between each, the same writes
 * (each document's color changed) without and with the index: what an indexed field costs a write —
 * local: one batch in the row's shard; global: a transaction over the row's shard and the index
 * shards of the old and the new color. Last the sync global index is replaced by an async one:
 * the same queries (and consistent ones, which first wait for the data shards' leaders), the same
 * writes — each one shard's, plus a pending marker its leader drains — with the index's lag
 * sampled while they run, and the time it takes to catch up once they stop. Last, the async index
 * made covering ({@code n}): queries asking for {@code color} and {@code n} only, answered from the
 * entries without fetching a row.
 */
public final class QueryBench {

  /**
   * @param mixes read percentages of the mixed runs (queries and writes by the same threads), on the
   *     table of the most shards, through each index in turn; none: no mixed runs
   */
  public record Options(int documents, int colors, int threads, Duration duration, Duration warmup, List<Integer> shardCounts, int replicas,
      List<Integer> mixes) {}

  /** A mixed run: {@code readPercent} of the operations queries, the rest puts, through one index (ops per second, both kinds). */
  public record Mix(String access, int shards, int readPercent, long operations, double seconds) {

    public double operationsPerSecond() {
      return operations / seconds;
    }
  }

  /** The figures of one table's queries by one access path ("scan" or "local index"; latencies in microseconds). */
  public record Result(String access, int shards, long queries, long failed, double seconds, long p50, long p99, double rowsPerQuery,
      double examinedPerQuery, double shardsPerQuery) {

    public double queriesPerSecond() {
      return queries / seconds;
    }
  }

  private QueryBench() {}

  /** The table of {@code shards} shards this bench queries. */
  public static String table(int shards) {
    return "docs_" + shards;
  }

  /** Creates the tables and writes the same documents to each. */
  public static void load(ShardwiseClient client, Options o) {
    for (int shards : o.shardCounts()) {
      String table = table(shards);
      client.createTable(table, TableSpec.builder("hashrange").shards(shards).replicas(o.replicas()).format(ValueFormat.JSON).build());
      List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
      for (int d = 0; d < o.documents(); d++) {
        String doc = "{\"color\": \"c" + (d % o.colors()) + "\", \"n\": " + d + ", \"pad\": \"" + "x".repeat(40) + "\"}";
        batch.add(Map.entry(Key.of(KeySpace.keyName(d)), doc.getBytes(StandardCharsets.UTF_8)));
        if (batch.size() >= 500) {
          client.batchPut(table, batch);
          batch.clear();
        }
      }
      if (!batch.isEmpty()) {
        client.batchPut(table, batch);
      }
    }
  }

  /** Puts of one table (each a document whose color changes) with the indexes named (latencies in microseconds). */
  public record WriteCost(int shards, String indexes, long puts, double seconds, long p50, long p99) {

    public double putsPerSecond() {
      return puts / seconds;
    }
  }

  /**
   * An async index's lag while a table's writes ran: {@code samples} looks at {@code index status}
   * (every 100 ms), the median and largest lag seen (ms) and the most rows pending; then how long
   * after the writes stopped the index showed every one of them ({@code caughtUpMillis}).
   */
  public record Lag(int shards, int samples, long p50Millis, long maxMillis, long maxPendingRows, long caughtUpMillis) {}

  /**
   * Queries by scan, then by local index, then by global index (sync, then async); the writes' cost
   * without and with each; the mixed runs; the async index's lag.
   */
  public record Report(List<Result> queries, List<WriteCost> writes, List<Mix> mixes, List<Lag> lags) {}

  public static Report run(ShardwiseClient client, Options o) throws Exception {
    List<Result> queries = new ArrayList<>();
    List<WriteCost> writes = new ArrayList<>();
    List<Mix> mixes = new ArrayList<>();
    int widest = o.shardCounts().stream().mapToInt(Integer::intValue).max().orElseThrow();
    for (int shards : o.shardCounts()) {
      queries.add(queries(client, o, shards, "scan"));
      writes.add(writes(client, o, shards, "none"));
    }
    for (int shards : o.shardCounts()) {
      client.createIndex(table(shards), "color");
    }
    awaitReady(client, o);
    for (int shards : o.shardCounts()) {
      queries.add(queries(client, o, shards, "local index"));
      writes.add(writes(client, o, shards, "color (local)"));
    }
    for (int percent : o.mixes()) {
      mixes.add(mix(client, o, widest, "local index", percent));
    }
    for (int shards : o.shardCounts()) {
      client.dropIndex(table(shards), "color");
      client.createGlobalIndex(table(shards), "color", io.shardwise.client.GlobalIndexMode.SYNC, "hashrange", 0);
    }
    awaitReady(client, o);
    for (int shards : o.shardCounts()) {
      queries.add(queries(client, o, shards, "global index"));
      writes.add(writes(client, o, shards, "color (global)"));
    }
    for (int percent : o.mixes()) {
      mixes.add(mix(client, o, widest, "global index", percent));
    }
    List<Lag> lags = new ArrayList<>();
    for (int shards : o.shardCounts()) {
      client.dropIndex(table(shards), "color");
      client.createGlobalIndex(table(shards), "color", io.shardwise.client.GlobalIndexMode.ASYNC, "hashrange", 0);
    }
    awaitReady(client, o);
    for (int shards : o.shardCounts()) {
      awaitCaughtUp(client, table(shards));
      queries.add(queries(client, o, shards, "async index"));
      queries.add(queries(client, o, shards, "async index, consistent"));
      LagSampler sampler = new LagSampler(client, table(shards));
      sampler.start();
      WriteCost cost;
      try {
        cost = writes(client, o, shards, "color (async)");
      } finally {
        sampler.stop();
      }
      writes.add(cost);
      long stopped = System.nanoTime();
      awaitCaughtUp(client, table(shards));
      lags.add(sampler.lag(shards, (System.nanoTime() - stopped) / 1_000_000));
    }
    for (int percent : o.mixes()) {
      mixes.add(mix(client, o, widest, "async index", percent));
    }
    // A covering index: the same async index whose entries also hold n; queries asking for color and n only read no row.
    for (int shards : o.shardCounts()) {
      client.dropIndex(table(shards), "color");
      client.createGlobalIndex(table(shards), "color", io.shardwise.client.GlobalIndexMode.ASYNC, "hashrange", 0, List.of("n"));
    }
    awaitReady(client, o);
    for (int shards : o.shardCounts()) {
      awaitCaughtUp(client, table(shards));
      queries.add(queries(client, o, shards, "async covering, fields color,n"));
    }
    return new Report(queries, writes, mixes, lags);
  }

  private static void awaitCaughtUp(ShardwiseClient client, String table) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    while (client.indexes(table).stream().anyMatch(i -> i.pendingRows() > 0)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the async index of " + table + " did not catch up within 10 minutes");
      }
      Thread.sleep(20); // a poll of the nodes' reports
    }
  }

  /** Samples an async index's lag and pending rows ({@code index status}) every 100 ms on a thread of its own. */
  private static final class LagSampler {
    private final ShardwiseClient client;
    private final String table;
    private final Histogram lags = new Histogram(3);
    private long maxPending;
    private volatile boolean running = true;
    private final Thread thread;

    LagSampler(ShardwiseClient client, String table) {
      this.client = client;
      this.table = table;
      this.thread = new Thread(this::sample, "lag-sampler");
      this.thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    private void sample() {
      while (running) {
        for (io.shardwise.client.IndexInfo i : client.indexes(table)) {
          if ("async".equals(i.mode())) {
            synchronized (this) {
              lags.recordValue(i.lagMillis());
              maxPending = Math.max(maxPending, i.pendingRows());
            }
          }
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    void stop() throws InterruptedException {
      running = false;
      thread.join();
    }

    synchronized Lag lag(int shards, long caughtUpMillis) {
      return new Lag(shards, (int) lags.getTotalCount(), lags.getValueAtPercentile(50), lags.getMaxValue(), maxPending, caughtUpMillis);
    }
  }

  private static void awaitReady(ShardwiseClient client, Options o) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    for (int shards : o.shardCounts()) {
      while (!client.indexes(table(shards)).stream().allMatch(io.shardwise.client.IndexInfo::ready)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the index of " + table(shards) + " was not ready within 10 minutes");
        }
        Thread.sleep(100); // a poll of the cluster's progress
      }
    }
  }

  private static Result queries(ShardwiseClient client, Options o, int shards, String access) throws Exception {
    if (!o.warmup().isZero()) {
      runOne(client, o, shards, o.warmup(), access);
    }
    return runOne(client, o, shards, o.duration(), access);
  }

  private static WriteCost writes(ShardwiseClient client, Options o, int shards, String indexes) throws Exception {
    if (!o.warmup().isZero()) {
      writesFor(client, o, shards, indexes, o.warmup().dividedBy(2));
    }
    return writesFor(client, o, shards, indexes, o.duration().dividedBy(2));
  }

  private static WriteCost writesFor(ShardwiseClient client, Options o, int shards, String indexes, Duration duration) throws Exception {
    String table = table(shards);
    Recorder latencies = new Recorder(3);
    LongAdder puts = new LongAdder();
    double seconds = ForDuration.run(o.threads(), duration, () -> {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      int d = random.nextInt(o.documents());
      // The same document, another color: an index's entry moves from one value to another.
      String doc = "{\"color\": \"c" + random.nextInt(o.colors()) + "\", \"n\": " + d + ", \"pad\": \"" + "x".repeat(40) + "\"}";
      long begin = System.nanoTime();
      client.put(table, Key.of(KeySpace.keyName(d)), doc.getBytes(StandardCharsets.UTF_8));
      latencies.recordValue(Math.max(1, (System.nanoTime() - begin) / 1000));
      puts.increment();
    });
    Histogram h = latencies.getIntervalHistogram();
    return new WriteCost(shards, indexes, puts.sum(), seconds, h.getValueAtPercentile(50), h.getValueAtPercentile(99));
  }

  /** {@code readPercent} of the operations queries ({@code color = 'cN'}), the rest puts changing a document's color, by the same threads. */
  private static Mix mix(ShardwiseClient client, Options o, int shards, String access, int readPercent) throws Exception {
    String table = table(shards);
    LongAdder operations = new LongAdder();
    Runnable op = () -> {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      if (random.nextInt(100) < readPercent) {
        client.query(table, "color = 'c" + random.nextInt(o.colors()) + "'", 10_000, Duration.ofSeconds(10));
      } else {
        int d = random.nextInt(o.documents());
        client.put(table, Key.of(KeySpace.keyName(d)), ("{\"color\": \"c" + random.nextInt(o.colors()) + "\", \"n\": " + d
            + ", \"pad\": \"" + "x".repeat(40) + "\"}").getBytes(StandardCharsets.UTF_8));
      }
      operations.increment();
    };
    if (!o.warmup().isZero()) {
      ForDuration.run(o.threads(), o.warmup().dividedBy(2), op);
      operations.reset();
    }
    double seconds = ForDuration.run(o.threads(), o.duration().dividedBy(2), op);
    return new Mix(access, shards, readPercent, operations.sum(), seconds);
  }

  private static Result runOne(ShardwiseClient client, Options o, int shards, Duration duration, String access) throws Exception {
    String table = table(shards);
    Recorder latencies = new Recorder(3);
    LongAdder queries = new LongAdder();
    LongAdder failed = new LongAdder();
    LongAdder rows = new LongAdder();
    LongAdder examined = new LongAdder();
    LongAdder shardsAsked = new LongAdder();
    double seconds = ForDuration.run(o.threads(), duration, () -> {
      String where = "color = 'c" + ThreadLocalRandom.current().nextInt(o.colors()) + "'";
      long begin = System.nanoTime();
      boolean covering = access.startsWith("async covering");
      QueryResult r = client.query(table, null, where, 10_000, Duration.ofSeconds(10), new byte[0], access.endsWith("consistent"),
          covering ? List.of("color", "n") : List.of());
      boolean global = r.plan().indexShards() > 0;
      boolean wantGlobal = access.startsWith("global") || access.startsWith("async");
      if (!r.complete() || !r.plan().access().equals(access.equals("scan") ? "scan" : "index") || global != wantGlobal
          || r.plan().covered() != covering) {
        failed.increment();
        return;
      }
      latencies.recordValue(Math.max(1, (System.nanoTime() - begin) / 1000));
      queries.increment();
      rows.add(r.rows().size());
      examined.add(r.plan().access().equals("index") ? r.plan().indexEntries() : r.plan().rowsExamined());
      shardsAsked.add(r.plan().shards());
    });
    Histogram h = latencies.getIntervalHistogram();
    long n = Math.max(1, queries.sum());
    return new Result(access, shards, queries.sum(), failed.sum(), seconds, h.getValueAtPercentile(50), h.getValueAtPercentile(99),
        (double) rows.sum() / n, (double) examined.sum() / n, (double) shardsAsked.sum() / n);
  }
}
