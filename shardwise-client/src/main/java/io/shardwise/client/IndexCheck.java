package io.shardwise.client;

import java.util.List;

/**
 * One local index on one node compared with the node's rows ({@link ShardwiseClient#checkIndexes}):
 * the rows of the table there, the index's entries, entries missing for a row and entries no row
 * calls for.
 */
public record IndexCheck(String node, String field, long rows, long entries, long missing, long extra) {

  public boolean exact() {
    return missing == 0 && extra == 0;
  }

  /** Every node's checks, and the nodes that did not answer (their indexes unchecked). */
  public record Report(List<IndexCheck> checks, List<String> unreachable) {

    public Report {
      checks = List.copyOf(checks);
      unreachable = List.copyOf(unreachable);
    }

    /** Every index on every live node exact, and every live node checked. */
    public boolean exact() {
      return unreachable.isEmpty() && checks.stream().allMatch(IndexCheck::exact);
    }
  }
}
