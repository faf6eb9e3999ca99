package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import java.util.List;

/**
 * The shards a transaction touches, as its coordinator reaches them: each call goes to the owners
 * (the leaders) of the keys it names, wherever they are, and is applied there through the shard's
 * ordinary write path. On a node these are the data service's node-to-node calls; a test may run
 * them against stores in one process.
 *
 * <p>Every call is idempotent: the coordinator repeats one whose answer it did not get.
 */
public interface Participants {

  /**
   * Writes an intent for each item (all of table {@code table}) if its condition holds and no other
   * transaction holds its key. Atomic per shard only: on a refusal, intents written at other shards
   * stay until this transaction is resolved.
   */
  Prepared prepare(String table, List<TxnItem> items, byte[] txnId, byte[] meta);

  /** True if, by this process's map, every item lies in one shard: a hint ({@link #onePhase} checks it where it applies). */
  boolean oneShard(List<TxnItem> items);

  /**
   * Applies the items (all of table {@code table}) in one atomic write, if they all lie in one
   * shard: their writes and conditions (refused by another transaction's intent like any write)
   * and, beside {@code anchor}, the record — {@code pending}, COMMITTED with the items' versions —
   * unless a record of {@code txnId} is there already (then nothing is written).
   */
  OnePhase onePhase(String table, List<TxnItem> items, byte[] txnId, Key anchor, byte[] pending);

  /**
   * A one-phase answer: applied ({@code prepared} ok, its versions), refused as a prepare is, not
   * one shard, or the record already there ({@code existing}).
   */
  record OnePhase(Prepared prepared, boolean notOneShard, byte[] existing) {}

  /** Replaces the intents of {@code txnId} on {@code keys} by the outcome (nothing where there is none). */
  void resolve(String table, List<Key> keys, byte[] txnId, boolean commit);

  /**
   * Applies {@code step} to the record of {@code txnId} beside {@code anchor}, with {@code proposed}
   * as the new record where the step allows ({@link TxnRecord#step}); returns the record after the
   * step (null: none).
   */
  byte[] record(String table, Key anchor, byte[] txnId, RecordStep step, byte[] proposed);

  /**
   * The keys' values as their leaders hold them now (linearizable reads, each of them waiting
   * behind an undecided transaction's intent and resolving a decided one's), in order.
   */
  List<Read> read(String table, List<Key> keys);

  /** A key's value and version ({@code value} null, version 0: absent). */
  record Read(byte[] value, long version) {}

  /** How a record step may change the record (see {@link Transactions#recordStep}). */
  enum RecordStep { READ, BEGIN, COMMIT, ABORT, PUSH, FORGET }

  /**
   * A prepare's answer: every item's version on commit, or the first refusal — a failed condition
   * ({@code conditionFailed}, the key's {@code currentVersion}) or another transaction's intent
   * ({@code holderTxnId}, {@code holderMeta}) on item {@code failedItem} (an index into the items sent).
   */
  record Prepared(long[] versions, int failedItem, boolean conditionFailed, long currentVersion, byte[] holderTxnId,
      byte[] holderMeta) {

    public static Prepared ok(long[] versions) {
      return new Prepared(versions, -1, false, 0, null, null);
    }

    public static Prepared conditionFailed(int item, long currentVersion) {
      return new Prepared(null, item, true, currentVersion, null, null);
    }

    public static Prepared locked(int item, byte[] holderTxnId, byte[] holderMeta) {
      return new Prepared(null, item, false, 0, holderTxnId, holderMeta);
    }

    public boolean ok() {
      return failedItem < 0;
    }
  }
}
