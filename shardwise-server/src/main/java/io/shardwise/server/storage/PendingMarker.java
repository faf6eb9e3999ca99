package io.shardwise.server.storage;

import java.nio.ByteBuffer;

/**
 * A row's changes that its table's asynchronous global indexes do not show yet: written by the
 * store beside the row ({@link ShardRef#pendingKey}) in the same batch as each write of the row,
 * so it is replicated, moved, split and merged with the row, and removed through the shard's write
 * path once the row's entries have been moved to its current value ({@link Mutation#reconciled}).
 *
 * @param since the row's first version the indexes may not show (the versions below are shown)
 * @param sinceMillis when that version was written, by the clock of the leader that wrote it (the
 *     lag is measured from it)
 * @param latest the row's newest version (a tombstone's for a delete)
 * @param latestMillis when the newest version was written
 */
public record PendingMarker(long since, long sinceMillis, long latest, long latestMillis) {

  static final int BYTES = 32;

  /** The first pending change of a row: its write at {@code version}. */
  static PendingMarker of(long version, long atMillis) {
    return new PendingMarker(version, atMillis, version, atMillis);
  }

  /** This marker with a newer write of its row: still pending since the same change. */
  PendingMarker andThen(long version, long atMillis) {
    return new PendingMarker(since, sinceMillis, version, atMillis);
  }

  /**
   * What is left once the row's changes up to {@code version} show in its indexes: nothing (null)
   * if that is every change, else the changes after it — since the next version, and when that one
   * was written if it is the newest (else the old time stands: a lag never under-reported).
   */
  PendingMarker reconciledThrough(long version) {
    if (latest <= version) {
      return null;
    }
    if (since > version) {
      return this;
    }
    return new PendingMarker(version + 1, latest == version + 1 ? latestMillis : sinceMillis, latest, latestMillis);
  }

  /** True while a change at {@code version} (or before) is still pending. */
  public boolean pending(long version) {
    return since <= version;
  }

  byte[] encode() {
    return ByteBuffer.allocate(BYTES).putLong(since).putLong(sinceMillis).putLong(latest).putLong(latestMillis).array();
  }

  static PendingMarker decode(byte[] raw, int offset) {
    ByteBuffer in = ByteBuffer.wrap(raw, offset, BYTES);
    return new PendingMarker(in.getLong(), in.getLong(), in.getLong(), in.getLong());
  }
}
