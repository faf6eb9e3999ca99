package io.shardwise.server.storage;

import java.util.function.BiFunction;

/**
 * One step of a cross-shard transaction on one shard, carried by a {@link Mutation} so that it takes
 * the shard's ordinary write path (its fence, its replication log, a move's change log):
 *
 * <ul>
 *   <li>{@link Kind#PREPARE}: checks the mutation's condition on its key and writes {@code intent};
 *       refused if another transaction holds the key ({@link KeyLockedException}). Repeated, it
 *       answers the version again and writes nothing.
 *   <li>{@link Kind#RESOLVE}: replaces the key's intent of {@code txnId} by its outcome — the new
 *       value ({@code commit}) or nothing. No intent of that transaction: nothing to do.
 *   <li>{@link Kind#CHECK}: checks the mutation's condition on its key, which no other transaction
 *       may hold; writes nothing (a one-phase transaction's condition check).
 *   <li>{@link Kind#RECORD}: the transaction's record at its anchor key: {@code record} is given the
 *       record's bytes ({@code null}: none) and the results of the batch's other mutations, and
 *       returns the new bytes, or the same array to leave it. It runs once, under the record's lock,
 *       after the batch's other mutations are evaluated; if it throws, nothing of the batch is
 *       written.
 * </ul>
 */
public record TxnStep(Kind kind, byte[] txnId, Intent intent, boolean commit, BiFunction<byte[], long[], byte[]> record) {

  public enum Kind { PREPARE, RESOLVE, CHECK, RECORD }

  public static TxnStep prepare(Intent intent) {
    return new TxnStep(Kind.PREPARE, intent.txnId(), intent, false, null);
  }

  public static TxnStep resolve(byte[] txnId, boolean commit) {
    return new TxnStep(Kind.RESOLVE, txnId, null, commit, null);
  }

  public static TxnStep check(byte[] txnId) {
    return new TxnStep(Kind.CHECK, txnId, null, false, null);
  }

  public static TxnStep record(byte[] txnId, java.util.function.UnaryOperator<byte[]> record) {
    return new TxnStep(Kind.RECORD, txnId, null, false, (current, results) -> record.apply(current));
  }

  /** A record step that also sees the results of the batch's other mutations (a one-phase commit records their versions). */
  public static TxnStep record(byte[] txnId, BiFunction<byte[], long[], byte[]> record) {
    return new TxnStep(Kind.RECORD, txnId, null, false, record);
  }
}
