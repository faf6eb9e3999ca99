package io.shardwise.core.hash;

import net.openhft.hashing.LongHashFunction;

/** xxHash64 with seed 0 (zero-allocation-hashing's {@code LongHashFunction.xx()}), all 64 bits. */
final class XxHash64 implements HashFunction {

  private static final LongHashFunction XX = LongHashFunction.xx();

  @Override
  public String name() {
    return "xxhash64";
  }

  @Override
  public int bits() {
    return 64;
  }

  @Override
  public long hash(byte[] data, int off, int len) {
    return XX.hashBytes(data, off, len);
  }

  @Override
  public String toString() {
    return name();
  }
}
