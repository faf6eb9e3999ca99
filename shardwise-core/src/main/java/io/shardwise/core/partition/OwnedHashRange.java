package io.shardwise.core.partition;

/**
 * An inclusive range {@code [first, last]} of hash values (unsigned 64-bit) owned by one node.
 */
public record OwnedHashRange(long first, long last, int node) {

  public OwnedHashRange {
    if (Long.compareUnsigned(first, last) > 0) {
      throw new IllegalArgumentException(
          "hash range first " + Long.toUnsignedString(first) + " is above last " + Long.toUnsignedString(last));
    }
  }

  /** The number of hash values in the range, as a double (a full 64-bit space is 2^64). */
  public double width() {
    return unsigned(last - first) + 1.0;
  }

  static double unsigned(long value) {
    return value >= 0 ? value : (double) (value >>> 1) * 2.0 + (value & 1);
  }
}
