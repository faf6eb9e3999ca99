package io.shardwise.jmh;

import io.shardwise.server.shard.LocalShards;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the local shard's fence costs a write: the same RocksDB store written directly
 * ({@code path=store}: the engine alone, as every write was before the fence) and through
 * {@code LocalShards} ({@code path=fenced}: the shared fence, the state check, the change-log hook),
 * with and without a write id ({@code ids}: one more key read and written in the same batch).
 * Each write is a 100-byte value to one of 100,000 keys of 8 shards, from 2 threads.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar FenceBenchmark}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class FenceBenchmark {

  private static final int SHARDS = 8;
  private static final int KEYS = 100_000;

  @Param({"store", "fenced"})
  public String path;

  @Param({"false", "true"})
  public boolean ids;

  private Path dir;
  private ShardStore store;
  private LocalShards shards;
  private final byte[] value = new byte[100];

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("fence-bench");
    store = ShardStore.open(dir.resolve("db"), false);
    shards = new LocalShards(store);
    for (int s = 0; s < SHARDS; s++) {
      shards.own(new ShardRef(1, s), 1);
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    Dirs.deleteTree(dir);
  }

  @Benchmark
  public long write(WriterThread w) throws Exception {
    int k = w.random.nextInt(KEYS);
    ShardRef shard = new ShardRef(1, k % SHARDS);
    byte[] key = ("key-" + k).getBytes(StandardCharsets.UTF_8);
    byte[] id = ids ? w.nextWriteId() : null;
    var mutation = io.shardwise.server.storage.Mutation.put(shard, key, value).withRequestId(id);
    return "store".equals(path) ? store.apply(java.util.List.of(mutation))[0] : shards.apply(java.util.List.of(mutation))[0];
  }
}
