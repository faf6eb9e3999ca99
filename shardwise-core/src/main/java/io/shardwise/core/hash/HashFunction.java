package io.shardwise.core.hash;

import java.nio.charset.StandardCharsets;

/**
 * A stable, named hash function that maps a byte string to an unsigned integer of {@link #bits()}
 * bits, returned in the low bits of a {@code long}.
 *
 * <p>Placement depends on these values forever: a table's hash name is stored with the table, and
 * every process must compute the same value for the same bytes on every JVM. Implementations are
 * therefore pure functions of their input bytes (no per-process seed, never
 * {@code Object.hashCode}), and each documents exactly which bits of which digest it returns and in
 * which byte order.
 *
 * <p>For a 64-bit function the value uses all 64 bits and must be compared as unsigned
 * ({@link Long#compareUnsigned}); for a function of fewer bits the value lies in {@code [0, 2^bits)}
 * and is never negative.
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface HashFunction {

  /** The name users type (CLI, API, stored maps), for example {@code murmur3-128}. */
  String name();

  /** The width of the values this function returns, between 1 and 64. */
  int bits();

  /** Hashes {@code len} bytes of {@code data} starting at {@code off}. */
  long hash(byte[] data, int off, int len);

  /** Hashes all of {@code data}. */
  default long hash(byte[] data) {
    return hash(data, 0, data.length);
  }

  /** Hashes the UTF-8 encoding of {@code text}. */
  default long hash(CharSequence text) {
    return hash(text.toString().getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The largest value this function can return, as an unsigned 64-bit integer: {@code 2^bits - 1}.
   */
  default long maxValue() {
    return bits() == 64 ? -1L : (1L << bits()) - 1;
  }
}
