package io.shardwise.core.txn;

import io.shardwise.core.key.Key;
import java.util.Objects;

/**
 * One item of a cross-shard transaction: a put, a delete or a condition check of one key of one
 * table, with a condition on the key as the transaction finds it. Every item of a transaction is
 * applied, or none is.
 *
 * @param expectedVersion {@link #ANY} (no condition), {@link #EXISTS}, 0 (absent), or a version
 */
public record TxnItem(String table, Key key, Op op, byte[] value, long expectedVersion) {

  /** What the item does to its key. */
  public enum Op { PUT, DELETE, CHECK }

  /** No condition. */
  public static final long ANY = -1;
  /** The key must be live. */
  public static final long EXISTS = -2;
  /** The key must be absent (or deleted). */
  public static final long ABSENT = 0;

  public TxnItem {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(op, "op");
    value = value == null ? new byte[0] : value;
    if (op != Op.PUT && value.length > 0) {
      throw new IllegalArgumentException("only a put carries a value");
    }
    if (expectedVersion < EXISTS) {
      throw new IllegalArgumentException("an expected version is ANY, EXISTS, 0 (absent) or a version, not " + expectedVersion);
    }
    if (op == Op.CHECK && expectedVersion == ANY) {
      throw new IllegalArgumentException("a condition check needs a condition (EXISTS, ABSENT or a version)");
    }
  }

  public static TxnItem put(String table, Key key, byte[] value) {
    return new TxnItem(table, key, Op.PUT, value, ANY);
  }

  public static TxnItem delete(String table, Key key) {
    return new TxnItem(table, key, Op.DELETE, null, ANY);
  }

  /** A check that {@code key} meets {@code expectedVersion} ({@link #EXISTS}, {@link #ABSENT} or a version); it writes nothing. */
  public static TxnItem check(String table, Key key, long expectedVersion) {
    return new TxnItem(table, key, Op.CHECK, null, expectedVersion);
  }

  /** The same item, applied only if its key meets {@code expected} ({@link #EXISTS}, {@link #ABSENT} or a version). */
  public TxnItem onlyIf(long expected) {
    return new TxnItem(table, key, op, value, expected);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TxnItem t && t.table.equals(table) && t.key.equals(key) && t.op == op && java.util.Arrays.equals(t.value, value)
        && t.expectedVersion == expectedVersion;
  }

  @Override
  public int hashCode() {
    return Objects.hash(table, key, op, java.util.Arrays.hashCode(value), expectedVersion);
  }

  @Override
  public String toString() {
    return op + " " + table + "/" + key + (expectedVersion == ANY ? "" : expectedVersion == EXISTS ? " if exists"
        : expectedVersion == ABSENT ? " if absent" : " if version " + expectedVersion);
  }
}
