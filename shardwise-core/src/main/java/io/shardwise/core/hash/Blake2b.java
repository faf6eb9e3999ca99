package io.shardwise.core.hash;

import org.bouncycastle.crypto.digests.Blake2bDigest;

/**
 * BLAKE2b (RFC 7693, unkeyed) with a digest of {@code digestBits} bits, computed by BouncyCastle.
 *
 * <p>The value is the digest read as an unsigned big-endian integer: a 32-bit digest gives a value
 * in {@code [0, 2^32)}, exactly what Python's {@code int.from_bytes(blake2b(key,
 * digest_size=4).digest(), "big")} gives, so published simulations written that way can be
 * reproduced. Digests longer than 64 bits contribute their first eight bytes, big-endian.
 */
final class Blake2b implements HashFunction {

  private final int digestBits;

  Blake2b(int digestBits) {
    if (digestBits < 8 || digestBits > 512 || digestBits % 8 != 0) {
      throw new IllegalArgumentException(
          "blake2b digest size must be a multiple of 8 bits between 8 and 512, not " + digestBits);
    }
    this.digestBits = digestBits;
  }

  @Override
  public String name() {
    return "blake2b-" + digestBits;
  }

  @Override
  public int bits() {
    return Math.min(digestBits, 64);
  }

  @Override
  public long hash(byte[] data, int off, int len) {
    Blake2bDigest digest = new Blake2bDigest(digestBits);
    digest.update(data, off, len);
    byte[] out = new byte[digestBits / 8];
    digest.doFinal(out, 0);
    long value = 0;
    for (int i = 0; i < Math.min(out.length, 8); i++) {
      value = (value << 8) | (out[i] & 0xff);
    }
    return value;
  }

  @Override
  public String toString() {
    return name();
  }
}
