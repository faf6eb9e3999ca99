package io.shardwise.core.hash;

import com.google.common.hash.HashCode;

/**
 * Adapts a Guava hash function. Which bits are returned is chosen per function by the factory in
 * {@link HashFunctions}, where each is documented.
 */
final class GuavaHash implements HashFunction {

  /** How the Guava {@link HashCode} becomes our unsigned value. */
  enum Reading {
    /** {@link HashCode#asInt()}: the first four bytes, little-endian, as unsigned 32 bits. */
    INT_LITTLE_ENDIAN,
    /** The first eight bytes of the digest, big-endian. */
    LONG_BIG_ENDIAN
  }

  private final String name;
  private final int bits;
  private final com.google.common.hash.HashFunction delegate;
  private final Reading reading;

  GuavaHash(String name, int bits, com.google.common.hash.HashFunction delegate, Reading reading) {
    this.name = name;
    this.bits = bits;
    this.delegate = delegate;
    this.reading = reading;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int bits() {
    return bits;
  }

  @Override
  public long hash(byte[] data, int off, int len) {
    HashCode code = delegate.hashBytes(data, off, len);
    switch (reading) {
      case INT_LITTLE_ENDIAN:
        return Integer.toUnsignedLong(code.asInt());
      case LONG_BIG_ENDIAN:
        return Long.reverseBytes(code.asLong());
      default:
        throw new AssertionError(reading);
    }
  }

  @Override
  public String toString() {
    return name;
  }
}
