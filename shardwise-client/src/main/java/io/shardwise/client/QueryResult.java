package io.shardwise.client;

import java.util.List;

/**
 * A query's answer ({@link ShardwiseClient#query}): the matching rows (in shard order, then key
 * order), how they were found, and whether the answer is whole.
 *
 * @param complete every shard answered; if not, {@link Plan#missingShards} names those whose rows are not here
 * @param truncated more rows match than the limit asked
 * @param nextPageToken when truncated: the token of the next page ({@link ShardwiseClient#query(String,
 *     String, int, java.time.Duration, byte[])}); empty otherwise
 */
public record QueryResult(List<KeyValue> rows, Plan plan, boolean complete, boolean truncated, byte[] nextPageToken) {

  public QueryResult {
    rows = List.copyOf(rows);
    nextPageToken = nextPageToken.clone();
  }

  @Override
  public byte[] nextPageToken() {
    return nextPageToken.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof QueryResult q && q.rows.equals(rows) && q.plan.equals(plan) && q.complete == complete && q.truncated == truncated
        && java.util.Arrays.equals(q.nextPageToken, nextPageToken);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(rows, plan, complete, truncated, java.util.Arrays.hashCode(nextPageToken));
  }

  @Override
  public String toString() {
    return rows.size() + " rows, " + plan + (complete ? "" : ", incomplete") + (truncated ? ", truncated" : "");
  }

  /**
   * How a query was answered: {@code access} "scan" (every shard read, filtered at its owner) or
   * "index" (every shard read through its local indexes, or the index shards of its global indexes
   * then the rows they name by key: {@code index} names them and the ranges read, {@code
   * indexEntries} counts the entries read, and {@code postingLists} each probe's — an OR branch's
   * index and range, and the lists an AND intersects — with the entries it read), the shards asked
   * ({@code indexShards} and {@code rowShards} of them for global indexes) and those missing (with
   * why), rows examined and matched, the bytes shipped to the node that merged them (rows; for
   * global indexes the posting lists too), and the slowest shard's time. Through an async global
   * index: {@code stalePossible} if the query did not wait for the index (it may miss the newest
   * writes), else {@code consistentWaitMicros}, how long it waited for the index to catch up.
   * {@code covered}: answered from a covering index's entries alone, no row fetched (versions 0).
   */
  public record Plan(String access, int shards, List<String> missingShards, long rowsExamined, long rowsMatched, long bytesShipped,
      long slowestShardMicros, String index, long indexEntries, List<PostingList> postingLists, int indexShards, int rowShards,
      long consistentWaitMicros, boolean stalePossible, boolean covered) {

    public Plan {
      missingShards = List.copyOf(missingShards);
      postingLists = List.copyOf(postingLists);
    }
  }

  /** One probe of a query through an index, and how many entries it read over every shard: its posting list's length. */
  public record PostingList(String probe, long entries) {
  }
}
