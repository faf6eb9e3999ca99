package io.shardwise.core.util;

/**
 * SplitMix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number Generators", 2014), the
 * seeded generator behind random tokens, key samples and generated keys.
 *
 * <p>Written out rather than taken from {@code java.util.SplittableRandom} because placement must
 * give the same tokens on every JVM forever, and only a fixed, written-down algorithm promises
 * that. Not thread-safe; use a fresh instance per stream.
 */
public final class SplitMix64 {

  private static final long GOLDEN_GAMMA = 0x9e3779b97f4a7c15L;

  private long state;

  public SplitMix64(long seed) {
    this.state = seed;
  }

  public long nextLong() {
    long z = (state += GOLDEN_GAMMA);
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  /** A uniform value in {@code [0, bound)}, by rejection so there is no modulo bias. */
  public int nextInt(int bound) {
    long limit = (1L << 32) - ((1L << 32) % bound);
    while (true) {
      long r = nextLong() >>> 32;
      if (r < limit) {
        return (int) (r % bound);
      }
    }
  }
}
