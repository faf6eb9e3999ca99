package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
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
 * Hashing one 16-byte partition key with each registered function: the cost a lookup pays before
 * {@code shardForHash}.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar HashBenchmark -prof gc}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class HashBenchmark {

  @Param({"murmur3-32", "murmur3-128", "xxhash64", "md5", "fnv1a-32", "fnv1a-64", "blake2b-32"})
  public String hash;

  private HashFunction function;
  private final byte[] key = ByteStrings.utf8("user-00000042:ab");

  @Setup
  public void setUp() {
    function = HashFunctions.byName(hash);
  }

  @Benchmark
  public long hash() {
    return function.hash(key);
  }
}
