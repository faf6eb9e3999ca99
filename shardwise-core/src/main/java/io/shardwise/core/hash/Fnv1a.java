package io.shardwise.core.hash;

/**
 * FNV-1a, 32 and 64 bit, as specified by Fowler, Noll and Vo (draft-eastlake-fnv): for each byte,
 * {@code hash = (hash XOR byte) * prime}, starting from the offset basis.
 *
 * <p>Written here rather than taken from a library because it is four lines and no well-kept Java
 * library ships the 32- and 64-bit variants with a byte-array API; the known-answer vectors in the
 * tests come from the specification's reference values.
 */
final class Fnv1a implements HashFunction {

  private static final int OFFSET_32 = 0x811c9dc5;
  private static final int PRIME_32 = 0x01000193;
  private static final long OFFSET_64 = 0xcbf29ce484222325L;
  private static final long PRIME_64 = 0x100000001b3L;

  private final int bits;

  Fnv1a(int bits) {
    if (bits != 32 && bits != 64) {
      throw new IllegalArgumentException("FNV-1a has 32- and 64-bit variants, not " + bits);
    }
    this.bits = bits;
  }

  @Override
  public String name() {
    return "fnv1a-" + bits;
  }

  @Override
  public int bits() {
    return bits;
  }

  @Override
  public long hash(byte[] data, int off, int len) {
    if (bits == 32) {
      int h = OFFSET_32;
      for (int i = off; i < off + len; i++) {
        h = (h ^ (data[i] & 0xff)) * PRIME_32;
      }
      return Integer.toUnsignedLong(h);
    }
    long h = OFFSET_64;
    for (int i = off; i < off + len; i++) {
      h = (h ^ (data[i] & 0xff)) * PRIME_64;
    }
    return h;
  }

  @Override
  public String toString() {
    return name();
  }
}
