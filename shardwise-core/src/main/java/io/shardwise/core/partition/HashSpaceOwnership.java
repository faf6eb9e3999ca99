package io.shardwise.core.partition;

import java.util.List;

/**
 * A placement that divides the hash space into contiguous ranges, each owned by one node
 * ({@code ring}, {@code tokens}, {@code hashrange}). Lets a placement change be computed exactly,
 * as hash ranges, without any key sample.
 */
public interface HashSpaceOwnership {

  /**
   * The ranges in ascending order, covering {@code [0, spaceMax()]} with no gap or overlap, adjacent
   * ranges of the same node coalesced.
   */
  List<OwnedHashRange> ownership();

  /** The largest hash value, unsigned ({@code 2^bits - 1}). */
  long spaceMax();
}
