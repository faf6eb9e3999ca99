package io.shardwise.client;

import java.util.List;

/**
 * A query's answer ({@link ShardwiseClient#query}): the matching rows (in shard order, then key
 * order), how they were found, and whether the answer is whole.
 *
 * @param complete every shard answered; if not, {@link Plan#missingShards} names those whose rows are not here
 * @param truncated more rows match than the limit asked
 */
public record QueryResult(List<KeyValue> rows, Plan plan, boolean complete, boolean truncated) {

  public QueryResult {
    rows = List.copyOf(rows);
  }

  /**
   * How a query was answered: {@code access} "scan" (every shard read, filtered at its owner), the
   * shards asked and those missing (with why), rows examined and matched, the bytes of matching rows
   * shipped to the node that merged them, and the slowest shard's time.
   */
  public record Plan(String access, int shards, List<String> missingShards, long rowsExamined, long rowsMatched, long bytesShipped,
      long slowestShardMicros) {

    public Plan {
      missingShards = List.copyOf(missingShards);
    }
  }
}
