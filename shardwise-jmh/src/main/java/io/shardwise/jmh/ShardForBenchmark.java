package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.partition.HashPartitioner;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.Partitioner;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.Strategy;
import io.shardwise.core.util.SplitMix64;
import java.util.Locale;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * Key-to-shard lookup per strategy at 10, 100 and 1000 nodes (ring: 256 virtual nodes each, so
 * 256,000 points at 1000 nodes). Hash strategies look up a pre-hashed key ({@code shardForHash},
 * the allocation-free path); {@code range} looks up raw keys against one split point per node.
 * Keys cycle through 64k random values so lookups are not all cache hits.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar ShardForBenchmark -prof gc}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class ShardForBenchmark {

  private static final int KEYS = 1 << 16;

  @Param({"ring", "mod", "slots", "hashrange", "tokens", "jump", "rendezvous", "range"})
  public String strategy;

  @Param({"10", "100", "1000"})
  public int nodes;

  private HashPartitioner hashed;
  private Partitioner partitioner;
  private long[] hashes;
  private byte[][] keys;
  private int next;

  @Setup
  public void setUp() {
    SplitMix64 random = new SplitMix64(42);
    hashes = new long[KEYS];
    keys = new byte[KEYS][];
    KeySample.Builder sample = KeySample.builder(KEYS, 1, HashFunctions.murmur3_128());
    for (int i = 0; i < KEYS; i++) {
      hashes[i] = random.nextLong();
      keys[i] = ByteStrings.utf8(String.format(Locale.ROOT, "user-%012d", Long.remainderUnsigned(random.nextLong(), 1_000_000_000_000L)));
      sample.add(keys[i]);
    }
    PartitionerSpec spec =
        PartitionerSpec.builder(Strategy.byId(strategy)).vnodes(256).slots(Math.max(1024, nodes)).build();
    partitioner = spec.create(nodes, sample.build());
    hashed = partitioner instanceof HashPartitioner ? (HashPartitioner) partitioner : null;
  }

  @Benchmark
  public int shardFor() {
    int i = next++ & (KEYS - 1);
    return hashed != null ? hashed.shardForHash(hashes[i]) : partitioner.shardFor(keys[i]);
  }
}
