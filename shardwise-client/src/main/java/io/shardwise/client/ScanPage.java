package io.shardwise.client;

import java.util.List;
import java.util.Optional;

/**
 * One page of a scan: its rows, how many shards answering it took, and the token of the next page
 * (empty on the last).
 */
public record ScanPage(List<KeyValue> rows, int shardsTouched, Optional<byte[]> nextPageToken) {

  public ScanPage {
    rows = List.copyOf(rows);
  }

  public boolean hasMore() {
    return nextPageToken.isPresent();
  }
}
