package io.shardwise.client;

/**
 * What a client's near-cache has done since the client was built: reads it answered ({@code
 * hits}), reads it passed on to the cluster ({@code misses}), and about how many keys it holds now.
 */
public record NearCacheStats(long hits, long misses, long entries) {

  /** The share of reads the cache answered, 0 with no reads yet. */
  public double hitRate() {
    long reads = hits + misses;
    return reads == 0 ? 0 : (double) hits / reads;
  }
}
