package io.shardwise.jmh;

import io.shardwise.core.key.Key;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What finding a split point by size costs the owner, on one range shard of {@code megabytes} MiB of
 * 100-byte values: {@link ShardStore#sizeSplitPoint} (two reads of the shard: its size, then up to
 * the half), and {@link ShardStore#approximateBytes}, the estimate the balancer polls to decide that
 * a shard is past its split size.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar SplitPointBenchmark}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class SplitPointBenchmark {

  @Param({"64"})
  public int megabytes;

  private Path dir;
  private ShardStore store;
  private ShardRef shard;

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("split-bench");
    store = ShardStore.open(dir.resolve("db"), false);
    shard = ShardRef.ofKeyRange(1, 0, new byte[0], null);
    byte[] value = new byte[100];
    java.util.SplittableRandom random = new java.util.SplittableRandom(1);
    long rows = (long) megabytes * (1 << 20) / 120;
    for (long k = 0; k < rows; k++) {
      random.nextBytes(value); // incompressible: the shard takes its size on disk too
      store.put(shard, Key.of(String.format("user%010d", k).getBytes(StandardCharsets.UTF_8)).encode(), value);
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    Dirs.deleteTree(dir);
  }

  @Benchmark
  public Object sizeSplitPoint() {
    return store.sizeSplitPoint(shard);
  }

  @Benchmark
  public long approximateBytes() {
    return store.approximateBytes(shard);
  }
}
