package io.shardwise.server.storage;

/**
 * A shard as the store knows it: the table's never-reused id and the shard's number. Every stored
 * key starts with these 16 bytes, big-endian, so a shard is one contiguous key range.
 */
public record ShardRef(long tableId, long shardNumber) {

  static final int PREFIX_BYTES = 16;

  /** The shard a stored key belongs to. */
  static ShardRef ofStoreKey(byte[] storeKey) {
    if (storeKey.length < PREFIX_BYTES) {
      throw new IllegalArgumentException("a stored key has at least " + PREFIX_BYTES + " bytes");
    }
    return new ShardRef(getLong(storeKey, 0), getLong(storeKey, 8));
  }

  private static long getLong(byte[] in, int at) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (in[at + i] & 0xff);
    }
    return v;
  }

  /** The 16-byte prefix of every key of this shard. */
  byte[] prefix() {
    byte[] out = new byte[PREFIX_BYTES];
    putLong(out, 0, tableId);
    putLong(out, 8, shardNumber);
    return out;
  }

  /** The smallest key above every key of this shard. */
  byte[] prefixEnd() {
    byte[] out = prefix();
    for (int i = out.length - 1; i >= 0; i--) {
      if (++out[i] != 0) {
        return out;
      }
    }
    throw new IllegalStateException("shard " + this + " has no key above it");
  }

  /** {@code prefix + key}: the key as the store keeps it. */
  public byte[] storeKey(byte[] key) {
    byte[] out = new byte[PREFIX_BYTES + key.length];
    putLong(out, 0, tableId);
    putLong(out, 8, shardNumber);
    System.arraycopy(key, 0, out, PREFIX_BYTES, key.length);
    return out;
  }

  private static void putLong(byte[] out, int at, long value) {
    for (int i = 7; i >= 0; i--) {
      out[at + i] = (byte) value;
      value >>>= 8;
    }
  }

  @Override
  public String toString() {
    return tableId + "/" + shardNumber;
  }
}
