package io.shardwise.server.storage;

import java.util.List;

/**
 * One page of a scan, in key order. When the scan stopped at its limit with live keys left,
 * {@code resumeFrom} is the first of them (scan again from it, inclusive); otherwise {@code null}.
 *
 * <p>{@code locked} are the transactions' intents on keys of the range the page covers (from the
 * scan's start to {@code resumeFrom}, or to its end), with or without a row: the page shows the
 * keys as they are beside the intents, which is right only while those transactions are undecided.
 * The caller looks at their records, and scans again after resolving any that is decided.
 */
public record ScanPage(List<StoredEntry> entries, byte[] resumeFrom, List<Locked> locked) {

  /** A transaction's intent on {@code key} (encoded), met by a scan. */
  public record Locked(byte[] key, Intent intent) {}

  public ScanPage(List<StoredEntry> entries, byte[] resumeFrom) {
    this(entries, resumeFrom, List.of());
  }

  public boolean hasMore() {
    return resumeFrom != null;
  }
}
