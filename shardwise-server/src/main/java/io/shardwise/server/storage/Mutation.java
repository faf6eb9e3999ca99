package io.shardwise.server.storage;

/**
 * One write of a batch: a put ({@code value != null}) or a delete ({@code value == null}) of
 * {@code key} in {@code shard}, unconditional ({@code expectedVersion == ANY}) or only at
 * {@code expectedVersion} (0: only if absent), with the client's write id ({@code requestId},
 * {@code null} for none) that makes a retry of it answer the first result instead of writing again.
 * With a {@code transform} (a counter operation, {@link io.shardwise.core.key.Counters}) the value
 * written is the transform of the key's live value ({@code null} if absent), computed when the
 * write is applied, under the same locks as its version; {@code value} is then ignored.
 */
public record Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion, byte[] requestId,
    java.util.function.UnaryOperator<byte[]> transform, TxnStep txn) {

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
    if (txn != null && shard.intentKey(key) != null) {
      return java.util.List.of(txn.kind() == TxnStep.Kind.RECORD ? shard.txnRecordKey(key, txn.txnId()) : shard.intentKey(key),
          shard.storeKey(key));
    }
    return requestId == null ? java.util.List.of(shard.storeKey(key)) : java.util.List.of(shard.storeKey(key), shard.recordKey(key, requestId));
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
    return new Mutation(shard, key, value, expectedVersion, id == null || id.length == 0 ? null : id, transform, txn);
  }
}
