package io.shardwise.server.rpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.server.storage.KeyLockedException;
import io.shardwise.server.storage.ScanPage;
import io.shardwise.server.storage.Versioned;
import io.shardwise.server.txn.Transactions;
import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;
import java.util.function.Supplier;

/**
 * What a request served at a shard does when it meets a transaction's intent, in one place: a
 * write waits for the transaction (and pushes it past its deadline), a read of a key or a page of a
 * scan answers what the key was beside an undecided transaction and resolves a decided one first
 * ({@link Transactions#resolveLock}). Each call runs its request again until it meets no intent it
 * must wait for; a request that must wait moves off the event loop first ({@link Inline#mayBlock}).
 */
final class MeetingIntents {

  private final Transactions txns;

  MeetingIntents(Transactions txns) {
    this.txns = txns;
  }

  /**
   * {@code serve}'s answer (a write, or a batch); while it meets a transaction's intent ({@link
   * KeyLockedException}: nothing was read or written), the intent is resolved as its transaction's
   * record says, or awaited while that is undecided, and {@code serve} runs again — for at most the transaction timeout and two seconds (past its deadline anyone may
   * abort a transaction, so only an anchor that cannot be reached keeps a key locked longer).
   */
  <R> R served(String tableName, Supplier<R> serve) {
    long deadline = System.nanoTime() + txns.timeout().plusSeconds(2).toNanos();
    long pauseMillis = 1;
    while (true) {
      try {
        return serve.get();
      } catch (KeyLockedException locked) {
        Inline.mayBlock();
        if (System.nanoTime() > deadline) {
          throw Status.UNAVAILABLE.withDescription("a key of table " + tableName + " stayed locked by a transaction that could not be"
              + " resolved within " + txns.timeout().plusSeconds(2) + "; nothing was done: retry").asRuntimeException();
        }
        boolean free;
        try {
          free = txns.resolveLock(tableName, locked);
        } catch (StatusRuntimeException e) {
          free = false; // its anchor is moving or down: wait and look again
        }
        if (!free) {
          sleep(pauseMillis);
          pauseMillis = Math.min(20, pauseMillis * 2);
        }
      }
    }
  }

  /**
   * A linearizable read of one key. A key locked by an undecided transaction reads as it was before
   * the transaction ({@link KeyLockedException#committed}): when its
   * record is found undecided the transaction has not committed, and no one else can write the key
   * meanwhile, so that is the key's value at that moment. A decided transaction's intents are
   * resolved first, and the key read again.
   */
  Versioned read(String tableName, Supplier<Versioned> read) {
    for (int attempt = 0; ; attempt++) {
      try {
        return read.get();
      } catch (KeyLockedException locked) {
        Inline.mayBlock();
        if (!txns.resolveLock(tableName, locked)) {
          return locked.committed();
        }
        if (attempt > 100) {
          throw Status.UNAVAILABLE.withDescription("a key of table " + tableName + " was locked by one transaction after another"
              + " 100 times in a row; nothing was done: retry").asRuntimeException();
        }
      }
    }
  }

  /**
   * A page of a scan, linearizable as a read of one key is ({@link #read}): the page shows
   * its keys as they are beside any transactions' intents on them, which holds while those
   * transactions are undecided; a decided one's intents are resolved first, and the page read again.
   */
  ScanPage scan(String tableName, Supplier<ScanPage> scan) {
    for (int attempt = 0; ; attempt++) {
      ScanPage page = scan.get();
      boolean resolved = false;
      Set<ByteBuffer> looked = new HashSet<>(); // one look per transaction
      for (ScanPage.Locked locked : page.locked()) {
        if (looked.add(ByteBuffer.wrap(locked.intent().txnId()))) {
          Inline.mayBlock();
          resolved |= txns.resolveLock(tableName, locked.key(), locked.intent());
        }
      }
      if (!resolved) {
        return page;
      }
      if (attempt > 100) {
        throw Status.UNAVAILABLE.withDescription("a scan of table " + tableName + " met decided transactions' intents 100 times in"
            + " a row; nothing was done: retry").asRuntimeException();
      }
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted while a key was locked").asRuntimeException();
    }
  }
}
