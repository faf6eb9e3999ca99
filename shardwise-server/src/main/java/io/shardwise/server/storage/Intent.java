package io.shardwise.server.storage;

import java.nio.ByteBuffer;

/**
 * A transaction's lock on one key, holding what the key becomes if the transaction commits: stored
 * beside the key ({@link ShardRef#intentKey}) and written through the shard's ordinary write path, so
 * it is replicated, moved, split and merged with the key. While it is there no other write of the
 * key is applied, and reads of the key wait until it is resolved ({@link KeyLockedException}).
 *
 * @param txnId the transaction's id (its record's key at the anchor)
 * @param op what the transaction does to the key
 * @param value the new value of a {@link Op#PUT}; empty otherwise
 * @param version the version the key gets if the transaction commits (0: nothing is written — a
 *     check, or a delete of an absent key). The key cannot change while the intent holds it, so the
 *     version reckoned when the intent was written is the one the commit writes.
 * @param meta the transaction layer's own bytes (where its record lies, its age, its deadline)
 */
public record Intent(byte[] txnId, Op op, byte[] value, long version, byte[] meta) {

  /** What a transaction does to one key. */
  public enum Op { PUT, DELETE, CHECK }

  public Intent {
    if (txnId.length == 0) {
      throw new IllegalArgumentException("a transaction id is not empty");
    }
    if (op != Op.PUT && value.length > 0) {
      throw new IllegalArgumentException("only a put carries a value");
    }
  }

  /** The same intent, to write {@code newVersion} on commit. */
  public Intent withVersion(long newVersion) {
    return new Intent(txnId, op, value, newVersion, meta);
  }

  public boolean sameTransaction(byte[] otherTxnId) {
    return java.util.Arrays.equals(txnId, otherTxnId);
  }

  /** The stored form: id, op, version, value and meta, each byte string behind its length. */
  public byte[] encode() {
    ByteBuffer out = ByteBuffer.allocate(4 + txnId.length + 1 + 8 + 4 + value.length + 4 + meta.length);
    out.putInt(txnId.length).put(txnId).put((byte) op.ordinal()).putLong(version);
    out.putInt(value.length).put(value).putInt(meta.length).put(meta);
    return out.array();
  }

  public static Intent decode(byte[] bytes, int offset) {
    ByteBuffer in = ByteBuffer.wrap(bytes, offset, bytes.length - offset);
    byte[] id = new byte[in.getInt()];
    in.get(id);
    Op op = Op.values()[in.get()];
    long version = in.getLong();
    byte[] value = new byte[in.getInt()];
    in.get(value);
    byte[] meta = new byte[in.getInt()];
    in.get(meta);
    return new Intent(id, op, value, version, meta);
  }
}
