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
 * What a query without an index costs as the table has more shards: the same documents in tables
 * of 3, 6 and 12 shards (say), each document a {@code color} of {@code colors} values (a query's
 * selectivity is 1 / colors), queried {@code color = 'cN'} by several threads for the same time. A
 * query reads every shard at once and waits for the slowest (scatter/gather): its throughput does
 * not grow with shards, and its tail grows with the fan-out. A local secondary index has the same
 * fan-out (issue 15); a global one reads one index shard.
 */
public final class QueryBench {

  public record Options(int documents, int colors, int threads, Duration duration, Duration warmup, List<Integer> shardCounts, int replicas) {}

  /** One table's figures (latencies in microseconds). */
  public record Result(int shards, long queries, long failed, double seconds, long p50, long p99, double rowsPerQuery, double examinedPerQuery) {

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

  public static List<Result> run(ShardwiseClient client, Options o) throws Exception {
    List<Result> out = new ArrayList<>();
    for (int shards : o.shardCounts()) {
      if (!o.warmup().isZero()) {
        runOne(client, o, shards, o.warmup());
      }
      out.add(runOne(client, o, shards, o.duration()));
    }
    return out;
  }

  private static Result runOne(ShardwiseClient client, Options o, int shards, Duration duration) throws Exception {
    String table = table(shards);
    Recorder latencies = new Recorder(3);
    LongAdder queries = new LongAdder();
    LongAdder failed = new LongAdder();
    LongAdder rows = new LongAdder();
    LongAdder examined = new LongAdder();
    double seconds = ForDuration.run(o.threads(), duration, () -> {
      String where = "color = 'c" + ThreadLocalRandom.current().nextInt(o.colors()) + "'";
      long begin = System.nanoTime();
      QueryResult r = client.query(table, where, 10_000, Duration.ofSeconds(10));
      if (!r.complete()) {
        failed.increment();
        return;
      }
      latencies.recordValue(Math.max(1, (System.nanoTime() - begin) / 1000));
      queries.increment();
      rows.add(r.rows().size());
      examined.add(r.plan().rowsExamined());
    });
    Histogram h = latencies.getIntervalHistogram();
    long n = Math.max(1, queries.sum());
    return new Result(shards, queries.sum(), failed.sum(), seconds, h.getValueAtPercentile(50), h.getValueAtPercentile(99),
        (double) rows.sum() / n, (double) examined.sum() / n);
  }
}
