package io.shardwise.core.txn;

import java.util.List;

/**
 * How a transaction ended, as its coordinator knows it.
 *
 * @param versions per item, once committed: the version written (0 for a check, or a delete of an absent key)
 * @param cancellations the items whose conditions failed ({@link Status#CANCELLED})
 * @param txnId names the transaction for a status lookup later (always set)
 * @param message why it was aborted, or why its outcome is unknown
 */
public record TxnOutcome(Status status, long[] versions, List<Cancellation> cancellations, String txnId, String message) {

  public enum Status {
    /** Every item was applied. */
    COMMITTED,
    /** A condition failed: nothing was applied. */
    CANCELLED,
    /** Nothing was applied: a conflict with an older transaction, or the deadline passed. Retry as a new transaction. */
    ABORTED,
    /** The coordinator could not learn the outcome: look it up by {@code txnId} later. */
    UNKNOWN,
    /** A status lookup only: the transaction is not decided yet. */
    PENDING
  }

  /** An item whose condition failed, and the key's version when it was checked (0: absent). */
  public record Cancellation(int item, String reason, long currentVersion) {}

  public TxnOutcome {
    versions = versions == null ? new long[0] : versions;
    cancellations = List.copyOf(cancellations);
    message = message == null ? "" : message;
  }

  public boolean committed() {
    return status == Status.COMMITTED;
  }

  @Override
  public String toString() {
    return status + (versions.length > 0 ? " versions " + java.util.Arrays.toString(versions) : "")
        + (cancellations.isEmpty() ? "" : " " + cancellations) + (message.isEmpty() ? "" : " (" + message + ")") + " [" + txnId + "]";
  }
}
