package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.partition.RingPartitioner;
import io.shardwise.core.util.SplitMix64;
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
 * The ring's prefix-indexed lookup against a plain lower-bound binary search over the same sorted
 * points, in the same run, so the gain reads as a ratio.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar RingLookupBenchmark}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class RingLookupBenchmark {

  private static final int KEYS = 1 << 16;

  @Param({"10", "100", "1000"})
  public int nodes;

  private RingPartitioner ring;
  private long[] flippedPoints;
  private long[] hashes;
  private int next;

  @Setup
  public void setUp() {
    ring = RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), nodes, 256, RingPartitioner.DEFAULT_TEMPLATE);
    flippedPoints = new long[ring.shardCount()];
    for (int i = 0; i < flippedPoints.length; i++) {
      flippedPoints[i] = ring.point(i) ^ Long.MIN_VALUE;
    }
    SplitMix64 random = new SplitMix64(42);
    hashes = new long[KEYS];
    for (int i = 0; i < KEYS; i++) {
      hashes[i] = random.nextLong();
    }
  }

  @Benchmark
  public int indexed() {
    return ring.shardForHash(hashes[next++ & (KEYS - 1)]);
  }

  @Benchmark
  public int binarySearch() {
    long key = hashes[next++ & (KEYS - 1)] ^ Long.MIN_VALUE;
    long[] points = flippedPoints;
    int lo = 0;
    int hi = points.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (points[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo == points.length ? 0 : lo;
  }
}
