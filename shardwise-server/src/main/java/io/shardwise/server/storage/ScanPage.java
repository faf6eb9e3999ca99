package io.shardwise.server.storage;

import java.util.List;

/**
 * One page of a scan, in key order. When the scan stopped at its limit with live keys left,
 * {@code resumeFrom} is the first of them (scan again from it, inclusive); otherwise {@code null}.
 */
public record ScanPage(List<StoredEntry> entries, byte[] resumeFrom) {

  public boolean hasMore() {
    return resumeFrom != null;
  }
}
