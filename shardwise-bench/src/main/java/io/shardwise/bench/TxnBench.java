package io.shardwise.bench;

import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * What a transaction costs: single-key writes, then transactions of one shard (two rows of one
 * account, committed in one phase) and of 2, 4, 8 shards (one account on each), each for the same
 * time, with accounts chosen uniformly (little contention) and by a zipfian (much), all in one run.
 * A transaction ABORTED by a conflict is run again under a new token until it commits; its latency
 * is from its first attempt, and the abort rate counts every attempt.
 */
public final class TxnBench {

  /** Ways to write: 0 is a single-key put, 1 a one-shard transaction, n more shards. */
  public static final List<Integer> SPANS = List.of(0, 1, 2, 4, 8);

  public record Options(int accounts, int threads, Duration duration, Duration warmup, List<Integer> spans,
      List<Workload.Distribution> distributions) {}

  /** One configuration's figures (latencies in microseconds, from first attempt to commit). */
  public record Result(int span, Workload.Distribution distribution, long committed, long attempts, long aborted, long cancelled,
      double seconds, long p50, long p99) {

    public double opsPerSecond() {
      return committed / seconds;
    }

    public double abortRate() {
      return attempts == 0 ? 0 : (double) aborted / attempts;
    }

    public String kind() {
      return span == 0 ? "single-key put" : span == 1 ? "txn, 1 shard (2 rows)" : "txn, " + span + " shards";
    }
  }

  private TxnBench() {}

  /** Writes two rows per account: {@code balance} and {@code log}. */
  public static void load(ShardwiseClient client, String table, int accounts) {
    List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
    for (int a = 0; a < accounts; a++) {
      batch.add(Map.entry(Key.of(account(a), "balance"), balance(1000)));
      batch.add(Map.entry(Key.of(account(a), "log"), new byte[16]));
      if (batch.size() >= 500) {
        client.batchPut(table, batch);
        batch.clear();
      }
    }
    if (!batch.isEmpty()) {
      client.batchPut(table, batch);
    }
  }

  public static List<Result> run(ShardwiseClient client, String table, Options o) throws Exception {
    List<Result> out = new ArrayList<>();
    for (Workload.Distribution d : o.distributions()) {
      for (int span : o.spans()) {
        if (!o.warmup().isZero()) {
          runOne(client, table, o, span, d, o.warmup());
        }
        out.add(runOne(client, table, o, span, d, o.duration()));
      }
    }
    return out;
  }

  private static Result runOne(ShardwiseClient client, String table, Options o, int span, Workload.Distribution d, Duration duration)
      throws Exception {
    KeySpace keys = new KeySpace(o.accounts(), 0, d);
    Recorder latencies = new Recorder(3);
    LongAdder committed = new LongAdder();
    LongAdder attempts = new LongAdder();
    LongAdder aborted = new LongAdder();
    LongAdder cancelled = new LongAdder();
    double seconds = ForDuration.run(o.threads(), duration, () -> {
      List<TxnItem> items = items(client, table, keys, span);
      long begin = System.nanoTime();
      if (span == 0) {
        client.put(table, items.get(0).key(), items.get(0).value());
        attempts.increment();
      } else {
        while (true) {
          attempts.increment();
          TxnOutcome r = client.transact(items, Long.toHexString(ThreadLocalRandom.current().nextLong()));
          if (r.status() == TxnOutcome.Status.ABORTED) {
            aborted.increment();
            continue;
          }
          if (r.status() == TxnOutcome.Status.CANCELLED) {
            cancelled.increment();
          }
          break;
        }
      }
      latencies.recordValue(Math.max(1, (System.nanoTime() - begin) / 1000));
      committed.increment();
    });
    Histogram h = latencies.getIntervalHistogram();
    return new Result(span, d, committed.sum(), attempts.sum(), aborted.sum(), cancelled.sum(), seconds, h.getValueAtPercentile(50),
        h.getValueAtPercentile(99));
  }

  /** The items of one write: one key, two rows of one account, or one account's balance on each of {@code span} shards. */
  private static List<TxnItem> items(ShardwiseClient client, String table, KeySpace keys, int span) {
    byte[] value = balance(ThreadLocalRandom.current().nextInt(1000));
    if (span <= 1) {
      String a = account(keys.choose());
      List<TxnItem> one = new ArrayList<>();
      one.add(TxnItem.put(table, Key.of(a, "balance"), value));
      if (span == 1) {
        one.add(TxnItem.put(table, Key.of(a, "log"), value));
      }
      return one;
    }
    List<TxnItem> items = new ArrayList<>();
    Set<Long> shards = new HashSet<>();
    Set<String> chosen = new HashSet<>();
    for (int tries = 0; items.size() < span; tries++) {
      String a = account(tries < 10_000 ? keys.choose() : ThreadLocalRandom.current().nextLong(keys.records()));
      Key k = Key.of(a, "balance");
      if (chosen.add(a) && shards.add(client.shardOf(table, k))) {
        items.add(TxnItem.put(table, k, value));
      }
    }
    return items;
  }

  private static String account(long n) {
    return KeySpace.keyName(n);
  }

  private static byte[] balance(long v) {
    return ByteBuffer.allocate(8).putLong(v).array();
  }
}
