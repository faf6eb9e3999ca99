package io.shardwise.client;

/** How a global secondary index follows its rows' writes ({@link ShardwiseClient#createGlobalIndex}). */
public enum GlobalIndexMode {
  /**
   * A write of a row commits in its shard alone; the row's entry follows, moved by its shard's
   * leader (the index's lag: {@link IndexInfo#lagMillis}). A query may miss the newest writes, or
   * wait for them ({@code consistent}). A write costs about what it costs without the index.
   */
  ASYNC,
  /** A write of a row and its entries commit in one transaction: never stale; a write costs a two-phase commit. */
  SYNC;

  String label() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
