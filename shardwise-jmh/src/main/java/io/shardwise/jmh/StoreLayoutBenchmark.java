package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.Key;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
 * What placement order costs the store's hot path, in one run: puts (with a write id) and gets of
 * 100-byte values over 100,000 keys in one shard laid out as a bucket (a shard-number prefix, as
 * every table was before), as a range shard (the key itself), and as a hashrange shard (the
 * partition key's hash first: one decode of the partition key and one hash per key).
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar StoreLayoutBenchmark}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class StoreLayoutBenchmark {

  private static final int KEYS = 100_000;

  @Param({"bucket", "range", "hashrange"})
  public String layout;

  private Path dir;
  private ShardStore store;
  private ShardRef shard;
  private byte[][] keys;
  private final byte[] value = new byte[100];

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("layout-bench");
    store = ShardStore.open(dir.resolve("db"), false);
    shard = switch (layout) {
      case "range" -> ShardRef.ofKeyRange(1, 0, new byte[0], null);
      case "hashrange" -> ShardRef.ofHashRange(1, 0, HashFunctions.defaultFunction(), 0, HashFunctions.defaultFunction().maxValue());
      default -> new ShardRef(1, 0);
    };
    keys = new byte[KEYS][];
    for (int k = 0; k < KEYS; k++) {
      keys[k] = Key.of(("user" + k).getBytes(StandardCharsets.UTF_8)).encode();
      store.put(shard, keys[k], value);
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    Dirs.deleteTree(dir);
  }

  @Benchmark
  public long put(WriterThread c) throws Exception {
    return store.apply(List.of(Mutation.put(shard, keys[c.random.nextInt(KEYS)], value).withRequestId(c.nextWriteId())))[0];
  }

  @Benchmark
  public Object get(WriterThread c) {
    return store.get(shard, keys[c.random.nextInt(KEYS)]);
  }
}
