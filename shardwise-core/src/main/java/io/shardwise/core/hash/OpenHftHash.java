package io.shardwise.core.hash;

import net.openhft.hashing.LongHashFunction;

/**
 * Adapts zero-allocation-hashing's {@link LongHashFunction}: all 64 bits of its result, computed
 * without allocating. Which function, and which of its bits, is documented in {@link
 * HashFunctions}.
 */
final class OpenHftHash implements HashFunction {

  private final String name;
  private final LongHashFunction delegate;

  OpenHftHash(String name, LongHashFunction delegate) {
    this.name = name;
    this.delegate = delegate;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int bits() {
    return 64;
  }

  @Override
  public long hash(byte[] data, int off, int len) {
    return delegate.hashBytes(data, off, len);
  }

  @Override
  public String toString() {
    return name;
  }
}
