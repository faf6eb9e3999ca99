package io.shardwise.server.replication;

import java.time.Duration;

/**
 * The replication protocol's settings, with the defaults a node runs with.
 *
 * @param lagMax how long an in-sync follower may go without holding everything the leader has
 *     before the leader asks to drop it from the in-sync set (writes wait for it until then)
 * @param heartbeat how often a leader tells each follower its commit when it has nothing else to
 *     send (also how stale a follower may fall before it is told)
 * @param maxEntriesPerAppend entries of one shard per message, at most
 * @param maxBytesPerAppend bytes of entries of one shard per message, about (at least one entry)
 * @param writeTimeout how long a write waits for its entry to be committed before it answers that
 *     its outcome is unknown
 * @param logRetainEntries applied entries each replica keeps in a shard's log for followers that fall
 *     behind; a follower further behind than that gets a snapshot of the shard instead
 * @param snapshotBytesPerSecond the bandwidth of one snapshot to a follower (0: unlimited)
 */
public record ReplicationConfig(Duration lagMax, Duration heartbeat, int maxEntriesPerAppend, long maxBytesPerAppend,
    Duration writeTimeout, long logRetainEntries, long snapshotBytesPerSecond) {

  public static final ReplicationConfig DEFAULT = new ReplicationConfig(Duration.ofSeconds(5), Duration.ofMillis(100), 512,
      4L << 20, Duration.ofSeconds(10), 10_000, 64L << 20);

  public ReplicationConfig {
    if (lagMax.isNegative() || lagMax.isZero() || heartbeat.isNegative() || heartbeat.isZero() || writeTimeout.isZero()
        || writeTimeout.isNegative()) {
      throw new IllegalArgumentException("replication lag max, heartbeat and write timeout must be positive");
    }
    if (heartbeat.compareTo(lagMax) >= 0) {
      throw new IllegalArgumentException("the replication heartbeat (" + heartbeat + ") must be shorter than the lag max (" + lagMax + ")");
    }
    if (maxEntriesPerAppend < 1 || maxBytesPerAppend < 1) {
      throw new IllegalArgumentException("an append carries at least one entry");
    }
    if (logRetainEntries < 1) {
      throw new IllegalArgumentException("a replica keeps at least one applied entry in its log, not " + logRetainEntries);
    }
    if (snapshotBytesPerSecond < 0) {
      throw new IllegalArgumentException("the snapshot bandwidth is 0 (unlimited) or positive, not " + snapshotBytesPerSecond);
    }
  }

  public ReplicationConfig withLagMax(Duration d) {
    return new ReplicationConfig(d, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, logRetainEntries, snapshotBytesPerSecond);
  }

  public ReplicationConfig withLogRetainEntries(long entries) {
    return new ReplicationConfig(lagMax, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, entries, snapshotBytesPerSecond);
  }

  public ReplicationConfig withSnapshotBytesPerSecond(long bytesPerSecond) {
    return new ReplicationConfig(lagMax, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, logRetainEntries, bytesPerSecond);
  }
}
