package io.shardwise.jmh;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * What a local secondary index costs a write in the engine: a put of a JSON document into a shard
 * of a table with 0, 1 or 3 local indexes. Each indexed write also reads the row's old value,
 * parses the old and new documents, and writes (at most) one delete and one put per index whose
 * value changed, in the same RocksDB batch. One hashrange shard of 100,000 documents of about 100
 * bytes; every put changes the document's {@code color}, {@code size} and {@code owner.id}.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar IndexMaintenanceBenchmark}
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class IndexMaintenanceBenchmark {

  private static final int KEYS = 100_000;
  private static final String[] COLORS = {"red", "blue", "green", "silver", "black"};

  @Param({"0", "1", "3"})
  public int indexes;

  private Path dir;
  private ShardStore store;
  private ShardRef shard;
  private byte[][] keys;

  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("index-maintenance-bench");
    store = ShardStore.open(dir.resolve("db"), false);
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).hash(HashFunctions.murmur3_128()).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 1, 1, KeySample.empty());
    ShardMap map = ShardMap.EMPTY;
    map = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.CreateTable("docs", spec, initial.layout(), List.of(NodeId.of("n1")),
        List.of(List.of()), Replication.NONE, ValueFormat.JSON)).build());
    List<IndexDef> defs = new ArrayList<>();
    List<List<String>> paths = List.of(List.of("color"), List.of("size"), List.of("owner", "id"));
    for (int i = 0; i < indexes; i++) {
      defs.add(new IndexDef(map.epoch() + 1 + i, paths.get(i), IndexDef.Scope.LOCAL, IndexDef.State.READY));
    }
    if (!defs.isEmpty()) {
      map = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes("docs", defs)).build());
    }
    Table table = map.table("docs").orElseThrow();
    store.defineIndexes(table);
    shard = ShardRef.of(table, table.shards().get(0).id().number());
    keys = new byte[KEYS][];
    java.util.SplittableRandom random = new java.util.SplittableRandom(1);
    for (int k = 0; k < KEYS; k++) {
      keys[k] = Key.of(("doc-" + k).getBytes(StandardCharsets.UTF_8)).encode();
      store.put(shard, keys[k], document(random));
    }
  }

  private static byte[] document(java.util.SplittableRandom random) {
    return ("{\"color\": \"" + COLORS[random.nextInt(COLORS.length)] + "\", \"size\": " + random.nextInt(1_000) + ", \"owner\": {\"id\": "
        + random.nextInt(10_000) + "}, \"pad\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}").getBytes(StandardCharsets.UTF_8);
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    Dirs.deleteTree(dir);
  }

  @Benchmark
  public long put(WriterThread c) throws Exception {
    byte[] doc = ("{\"color\": \"" + COLORS[c.random.nextInt(COLORS.length)] + "\", \"size\": " + c.random.nextInt(1_000)
        + ", \"owner\": {\"id\": " + c.random.nextInt(10_000) + "}, \"pad\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}").getBytes(StandardCharsets.UTF_8);
    return store.apply(List.of(Mutation.put(shard, keys[c.random.nextInt(KEYS)], doc)))[0];
  }
}
