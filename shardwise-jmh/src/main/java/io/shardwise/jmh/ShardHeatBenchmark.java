package io.shardwise.jmh;

import io.shardwise.server.hot.ShardHeat;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What hot-key sampling costs a request: {@link ShardHeat#sample} (one request in 16 counted into
 * its shard's Space-Saving sketch of 64 keys) on keys drawn uniformly from 100,000 ({@code keys=uniform},
 * the worst case: nearly every sampled key replaces another) or with one key taking half the
 * requests ({@code keys=celebrity}), over 8 shards, from 2 threads.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar ShardHeatBenchmark}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class ShardHeatBenchmark {

  private static final int KEYS = 100_000;
  private static final int SHARDS = 8;

  @Param({"uniform", "celebrity"})
  public String keys;

  private final ShardHeat heat = new ShardHeat();
  private byte[][] partitionKeys;
  private ShardRef[] shards;

  @Setup
  public void setUp() {
    partitionKeys = new byte[KEYS][];
    for (int i = 0; i < KEYS; i++) {
      partitionKeys[i] = ("user-" + i).getBytes(StandardCharsets.UTF_8);
    }
    shards = new ShardRef[SHARDS];
    for (int s = 0; s < SHARDS; s++) {
      shards[s] = new ShardRef(1, s);
    }
  }

  @State(Scope.Thread)
  public static class Stream {
    final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
  }

  @Benchmark
  public void sample(Stream stream) {
    int k = keys.equals("celebrity") && stream.random.nextBoolean() ? 0 : stream.random.nextInt(KEYS);
    heat.sample(shards[k % SHARDS], partitionKeys[k], false);
  }
}
