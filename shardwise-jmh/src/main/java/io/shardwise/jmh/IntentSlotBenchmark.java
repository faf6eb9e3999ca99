package io.shardwise.jmh;

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
 * What a transaction's intent slot costs requests that never meet a transaction: every get and
 * write of a table key also reads the slot beside it ({@code ShardRef.intentKey}), one more point
 * read that finds nothing. Keys that are not encoded table keys ({@code plain}: the engine's own
 * tests use such) have no slot, so the same calls skip that read: the difference is its price. One
 * range shard of 100,000 keys with 100-byte values, in the memtable ({@code memtable}) or in a
 * file after a reopen ({@code files}, where bloom filters answer for absent keys).
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar IntentSlotBenchmark}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class IntentSlotBenchmark {

  private static final int KEYS = 100_000;

  @Param({"table", "plain"})
  public String keys;

  @Param({"memtable", "files"})
  public String data;

  private Path dir;
  private ShardStore store;
  private final ShardRef shard = ShardRef.ofKeyRange(1, 0, new byte[0], null);
  private byte[][] stored;
  private final byte[] value = new byte[100];

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("intent-slot-bench");
    store = ShardStore.open(dir.resolve("db"), false);
    stored = new byte[KEYS][];
    for (int k = 0; k < KEYS; k++) {
      byte[] name = ("user" + k).getBytes(StandardCharsets.UTF_8);
      stored[k] = keys.equals("table") ? Key.of(name).encode() : name;
      store.put(shard, stored[k], value);
    }
    if (data.equals("files")) { // reopened, the store replays its log into a file (RocksDB flushes on recovery)
      store.close();
      store = ShardStore.open(dir.resolve("db"), false);
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    Dirs.deleteTree(dir);
  }

  @Benchmark
  public Object get(WriterThread c) {
    return store.get(shard, stored[c.random.nextInt(KEYS)]);
  }

  @Benchmark
  public long put(WriterThread c) throws Exception {
    return store.apply(List.of(Mutation.put(shard, stored[c.random.nextInt(KEYS)], value)))[0];
  }
}
