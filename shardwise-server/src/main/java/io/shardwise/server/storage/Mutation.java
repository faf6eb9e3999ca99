package io.shardwise.server.storage;

/**
 * One write of a batch: a put ({@code value != null}) or a delete ({@code value == null}) of
 * {@code key} in {@code shard}, unconditional ({@code expectedVersion == ANY}) or only at
 * {@code expectedVersion} (0: only if absent), with the client's write id ({@code requestId},
 * {@code null} for none) that makes a retry of it answer the first result instead of writing again.
 * With a {@code transform} (a counter operation, {@link io.shardwise.core.key.Counters}) the value
 * written is the transform of the key's live value ({@code null} if absent), computed when the
 * write is applied, under the same locks as its version; {@code value} is then ignored. With
 * {@code reconciled} ({@link #reconciled(ShardRef, byte[], long)}) it writes no row: the row's
 * pending marker loses the changes up to {@code expectedVersion}.
 */
public record Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion, byte[] requestId,
    java.util.function.UnaryOperator<byte[]> transform, TxnStep txn, boolean reconciled) {

  public Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion, byte[] requestId,
      java.util.function.UnaryOperator<byte[]> transform, TxnStep txn) {
    this(shard, key, value, expectedVersion, requestId, transform, txn, false);
  }

  /**
   * The row at {@code key}'s changes up to {@code version} show in its table's asynchronous global
   * indexes: its pending marker ({@link PendingMarker}) goes, or keeps only the later changes. Taken
   * through the shard's write path (its log, a move's change log) so every replica forgets the same
   * changes; writes nothing if the row has no marker.
   */
  public static Mutation reconciled(ShardRef shard, byte[] key, long version) {
    return new Mutation(shard, key, null, version, null, null, null, true);
  }

  /** No condition. */
  public static final long ANY = -1;
  /** Only if the key is live, whatever its version. */
  public static final long EXISTS = -2;

  public Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion, byte[] requestId,
      java.util.function.UnaryOperator<byte[]> transform) {
    this(shard, key, value, expectedVersion, requestId, transform, null);
  }

  /**
   * A transaction's step on {@code key} ({@link TxnStep}); {@code expectedVersion} is a prepare's
   * condition. For a {@link TxnStep.Kind#RECORD} step, {@code key} is the anchor's.
   */
  public static Mutation txn(ShardRef shard, byte[] key, long expectedVersion, TxnStep step) {
    return new Mutation(shard, key, null, expectedVersion, null, null, java.util.Objects.requireNonNull(step, "step"));
  }

  /** True if {@code version} (0: absent) meets {@code expectedVersion}. */
  public static boolean meets(long expectedVersion, long version) {
    return expectedVersion == ANY || (expectedVersion == EXISTS ? version > 0 : expectedVersion == version);
  }

  /** Every store key this mutation may write: a move's change log records them all. */
  public java.util.List<byte[]> storeKeys() {
    byte[] pending = shard.pendingKey(key); // a row's write may leave a pending marker beside it
    if (reconciled) {
      return pending == null ? java.util.List.of() : java.util.List.of(pending);
    }
    java.util.List<byte[]> out = new java.util.ArrayList<>(4);
    if (txn != null && shard.intentKey(key) != null) {
      out.add(txn.kind() == TxnStep.Kind.RECORD ? shard.txnRecordKey(key, txn.txnId()) : shard.intentKey(key));
    }
    out.add(shard.storeKey(key));
    if (requestId != null && txn == null) {
      out.add(shard.recordKey(key, requestId));
    }
    if (pending != null && (txn == null || txn.kind() == TxnStep.Kind.RESOLVE)) {
      out.add(pending);
    }
    return out;
  }

  public static Mutation put(ShardRef shard, byte[] key, byte[] value) {
    return new Mutation(shard, key, value, ANY, null);
  }

  public static Mutation delete(ShardRef shard, byte[] key) {
    return new Mutation(shard, key, null, ANY, null);
  }

  public Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion) {
    this(shard, key, value, expectedVersion, null);
  }

  public Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion, byte[] requestId) {
    this(shard, key, value, expectedVersion, requestId, null);
  }

  /** A counter operation on {@code key}: the value written is {@code transform} of its live value. */
  public static Mutation transform(ShardRef shard, byte[] key, java.util.function.UnaryOperator<byte[]> transform) {
    return new Mutation(shard, key, null, ANY, null, java.util.Objects.requireNonNull(transform, "transform"));
  }

  /**
   * The value this write stores (null for a delete), given the key's stored value {@code raw} and
   * where its bytes start ({@code raw} null or {@code live} false: absent). Only a transform reads
   * (and copies) the stored bytes: a plain put costs nothing more.
   */
  public byte[] valueGiven(byte[] raw, boolean live, int valueOffset) {
    if (transform == null) {
      return value;
    }
    return transform.apply(live ? java.util.Arrays.copyOfRange(raw, valueOffset, raw.length) : null);
  }

  public Mutation {
    if (expectedVersion < EXISTS) {
      throw new IllegalArgumentException("expected version must not be negative, not " + expectedVersion);
    }
  }

  /** The same write with the client's write id ({@code null} or empty: none). */
  public Mutation withRequestId(byte[] id) {
    return new Mutation(shard, key, value, expectedVersion, id == null || id.length == 0 ? null : id, transform, txn, reconciled);
  }
}
