package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.server.storage.Intent;
import io.shardwise.server.storage.KeyLockedException;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.TxnStep;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.txn.Participants.OnePhase;
import io.shardwise.server.txn.Participants.Prepared;
import io.shardwise.server.txn.Participants.RecordStep;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What each {@link Participants} call does at one shard: the mutations it applies, in one atomic
 * write of that shard, and how the shard's refusals answer it. Where the shard is — this node, a
 * node the call was forwarded to, a store in a simulation — is the caller's business; this is the
 * same everywhere.
 */
public final class ShardSteps {

  /** A shard's write path: applies a batch of one shard atomically (its fence, its replication log). */
  @FunctionalInterface
  public interface Writer {
    long[] apply(List<Mutation> batch) throws VersionMismatchException;
  }

  private final Writer writer;
  private final LongSupplier clockMillis;

  /** @param clockMillis this shard's clock: a push is decided by the anchor's clock, not the pusher's */
  public ShardSteps(Writer writer, LongSupplier clockMillis) {
    this.writer = writer;
    this.clockMillis = clockMillis;
  }

  /**
   * Writes an intent for each of {@code items} (all in {@code shard}) if its condition holds and no
   * other transaction holds its key, all or none. A refusal names its item as an index into {@code items}.
   */
  public Prepared prepare(ShardRef shard, List<TxnItem> items, byte[] txnId, byte[] meta) {
    List<Mutation> mutations = new ArrayList<>(items.size());
    for (TxnItem item : items) {
      mutations.add(Mutation.txn(shard, item.key().encode(), expectedVersion(item), TxnStep.prepare(intent(item, txnId, meta))));
    }
    try {
      return Prepared.ok(writer.apply(mutations));
    } catch (VersionMismatchException mismatch) {
      return Prepared.conditionFailed(Math.max(0, mismatch.index()), mismatch.actual());
    } catch (KeyLockedException locked) {
      return Prepared.locked(indexOf(items, locked.key()), locked.intent().txnId(), locked.intent().meta());
    }
  }

  /**
   * The one-phase commit of {@code items}, all in {@code shard} with {@code anchor}: their writes
   * and conditions and the record (COMMITTED with their versions) in one atomic write — refused
   * whole by a failed condition or another transaction's intent, and nothing written if a record of
   * {@code txnId} is there (a retry: its record answers).
   */
  public OnePhase onePhase(ShardRef shard, List<TxnItem> items, byte[] txnId, Key anchor, byte[] pending) {
    List<Mutation> mutations = new ArrayList<>(items.size() + 1);
    for (TxnItem item : items) {
      long expected = expectedVersion(item);
      byte[] k = item.key().encode();
      mutations.add(switch (item.op()) {
        case PUT -> new Mutation(shard, k, item.value(), expected);
        case DELETE -> new Mutation(shard, k, null, expected);
        case CHECK -> Mutation.txn(shard, k, expected, TxnStep.check(txnId));
      });
    }
    byte[][] existing = new byte[1][];
    mutations.add(Mutation.txn(shard, anchor.encode(), Mutation.ANY, TxnStep.record(txnId, (current, results) -> {
      if (current != null) {
        existing[0] = current;
        throw new RecordExists();
      }
      return TxnRecord.decode(pending).committed(Arrays.copyOf(results, results.length - 1)).encode();
    })));
    Prepared refused;
    try {
      long[] written = writer.apply(mutations);
      return new OnePhase(Prepared.ok(Arrays.copyOf(written, items.size())), false, null);
    } catch (VersionMismatchException mismatch) {
      refused = Prepared.conditionFailed(Math.max(0, mismatch.index()), mismatch.actual());
    } catch (KeyLockedException locked) {
      refused = Prepared.locked(indexOf(items, locked.key()), locked.intent().txnId(), locked.intent().meta());
    } catch (RecordExists exists) {
      return new OnePhase(null, false, existing[0]);
    }
    // The conditions are evaluated before the record step: a retry of a transaction whose first
    // attempt was applied (its answer lost) fails them on the versions that attempt wrote. Its
    // record, once there, stays (until purged): if it is there now, it answers.
    byte[] record = record(shard, anchor, txnId, RecordStep.READ, null);
    return record != null ? new OnePhase(null, false, record) : new OnePhase(refused, false, null);
  }

  /** Replaces the intents of {@code txnId} on {@code keys} (all in {@code shard}) by the outcome; nothing where there is none. */
  public void resolve(ShardRef shard, List<Key> keys, byte[] txnId, boolean commit) {
    List<Mutation> mutations = new ArrayList<>(keys.size());
    for (Key k : keys) {
      mutations.add(Mutation.txn(shard, k.encode(), Mutation.ANY, TxnStep.resolve(txnId, commit)));
    }
    try {
      writer.apply(mutations);
    } catch (VersionMismatchException e) {
      throw new AssertionError("a resolve has no condition", e);
    }
  }

  /** Applies {@code step} to the record of {@code txnId} beside {@code anchor} (in {@code shard}); the record after it. */
  public byte[] record(ShardRef shard, Key anchor, byte[] txnId, RecordStep step, byte[] proposed) {
    byte[][] after = new byte[1][];
    Mutation m = Mutation.txn(shard, anchor.encode(), Mutation.ANY, TxnStep.record(txnId, current -> {
      after[0] = TxnRecord.step(step, current, proposed, clockMillis.getAsLong());
      return after[0];
    }));
    try {
      writer.apply(List.of(m));
    } catch (VersionMismatchException e) {
      throw new AssertionError("a record step has no condition", e);
    }
    return after[0];
  }

  /** An item's condition as the engine's expected version ({@link Mutation#ANY}, {@link Mutation#EXISTS}, 0 or a version). */
  static long expectedVersion(TxnItem item) {
    return item.expectedVersion() == TxnItem.ANY ? Mutation.ANY : item.expectedVersion() == TxnItem.EXISTS ? Mutation.EXISTS
        : item.expectedVersion();
  }

  /** The intent an item leaves at its key. */
  static Intent intent(TxnItem item, byte[] txnId, byte[] meta) {
    Intent.Op op = switch (item.op()) {
      case PUT -> Intent.Op.PUT;
      case DELETE -> Intent.Op.DELETE;
      case CHECK -> Intent.Op.CHECK;
    };
    return new Intent(txnId, op, item.value(), 0, meta);
  }

  private static int indexOf(List<TxnItem> items, byte[] encodedKey) {
    for (int i = 0; i < items.size(); i++) {
      if (Arrays.equals(items.get(i).key().encode(), encodedKey)) {
        return i;
      }
    }
    return 0;
  }

  /** A one-phase commit found a record of its transaction there: nothing of its batch is written. */
  private static final class RecordExists extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RecordExists() {
      super("a record of this transaction exists", null, false, false);
    }
  }
}
