package io.shardwise.core.map;

/**
 * How many copies of each shard a table keeps, and how many must have a write before it is
 * acknowledged.
 *
 * @param factor replicas per shard: the leader and {@code factor - 1} followers, on distinct nodes
 *     (1: no replication, as before replicas existed)
 * @param minInSync the fewest in-sync replicas (the leader counted) with which the leader still
 *     acknowledges writes; with fewer it refuses them, so an acknowledged write is on at least this
 *     many nodes. Kafka's {@code min.insync.replicas}.
 * @param versionFloor for a replicated table: at least the highest version of any tombstone its
 *     leaders have purged (0 if none). A key written where nothing is stored gets a version above
 *     it, on every replica that ever leads, so a purged key never comes back at a version a
 *     client has already seen. Only rises ({@link ShardMapDelta.RaiseVersionFloor}); a leader
 *     raises it before it appends the purge.
 * @param since the map epoch at which the table last began to keep replicas, having kept one (0:
 *     it kept them from its creation). Every log entry and log start of the shards' replicas since
 *     then carries a leader epoch at least this high, so a replica's log whose last epoch is lower
 *     is left from an earlier time the table kept replicas, and is dropped, never matched.
 */
public record Replication(int factor, int minInSync, long versionFloor, long since) {

  /** The most replicas a shard may have. */
  public static final int MAX_FACTOR = 7;

  /** One replica: what every table had before replication. */
  public static final Replication NONE = new Replication(1, 1);

  public Replication(int factor, int minInSync) {
    this(factor, minInSync, 0);
  }

  public Replication(int factor, int minInSync, long versionFloor) {
    this(factor, minInSync, versionFloor, 0);
  }

  public Replication {
    if (since < 0) {
      throw new IllegalArgumentException("a replication start is a map epoch, 0 or more, not " + since);
    }
    if (versionFloor < 0) {
      throw new IllegalArgumentException("a version floor is 0 or more, not " + versionFloor);
    }
    if (factor < 1 || factor > MAX_FACTOR) {
      throw new IllegalArgumentException("a table keeps 1 to " + MAX_FACTOR + " replicas of each shard, not " + factor);
    }
    if (minInSync < 1 || minInSync > factor) {
      throw new IllegalArgumentException("min in-sync replicas must be 1 to the replication factor (" + factor + "), not " + minInSync);
    }
  }

  /** The default for {@code factor} replicas: a majority of them, at least 1 (2 of 3, 3 of 5). */
  public static Replication of(int factor) {
    return new Replication(factor, factor / 2 + 1);
  }

  /** The same with the floor raised to {@code floor} (unchanged if it is already that high). */
  public Replication withVersionFloor(long floor) {
    return floor <= versionFloor ? this : new Replication(factor, minInSync, floor, since);
  }

  /** The same with the replication start {@code epoch} ({@link #since}). */
  public Replication since(long epoch) {
    return new Replication(factor, minInSync, versionFloor, epoch);
  }

  public boolean replicated() {
    return factor > 1;
  }
}
