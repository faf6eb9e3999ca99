package io.shardwise.core.partition;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The partitioning strategies, by the names users type everywhere (CLI, API, config). */
public enum Strategy {
  /** Sorted split points over partition keys; cheap range scans, monotonic keys make hotspots. */
  RANGE("range", false),
  /** Hash mod N: the baseline; growing N to N+1 moves about N/(N+1) of the keys. */
  MOD("mod", true),
  /** Consistent hashing with virtual nodes: growing moves about 1/(N+1). */
  RING("ring", true),
  /** A fixed number of hash slots assigned to nodes (Redis Cluster's 16384). */
  SLOTS("slots", true),
  /** Contiguous ranges of the hash space that split and merge. */
  HASHRANGE("hashrange", true),
  /** Random tokens per node on a ring (Cassandra's num_tokens), seeded. */
  TOKENS("tokens", true),
  /** Jump consistent hash (Lamping and Veach); a reference for the lab. */
  JUMP("jump", true),
  /** Rendezvous (highest random weight) hashing; a reference for the lab. */
  RENDEZVOUS("rendezvous", true);

  private final String id;
  private final boolean hashed;

  Strategy(String id, boolean hashed) {
    this.id = id;
    this.hashed = hashed;
  }

  /** The user-facing name. */
  public String id() {
    return id;
  }

  /** Whether the strategy hashes the partition key (every one but {@link #RANGE}). */
  public boolean hashed() {
    return hashed;
  }

  /**
   * The strategy with this user-facing name (case-insensitive).
   *
   * @throws IllegalArgumentException naming the valid choices
   */
  public static Strategy byId(String id) {
    String lower = id.trim().toLowerCase(Locale.ROOT);
    for (Strategy s : values()) {
      if (s.id.equals(lower)) {
        return s;
      }
    }
    throw new IllegalArgumentException("unknown strategy '" + id + "'; valid strategies: " + validIds());
  }

  /** The valid names, comma-separated, in declaration order. */
  public static String validIds() {
    return Arrays.stream(values()).map(Strategy::id).collect(Collectors.joining(", "));
  }

  @Override
  public String toString() {
    return id;
  }
}
