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
 */
public record ReplicationConfig(Duration lagMax, Duration heartbeat, int maxEntriesPerAppend, long maxBytesPerAppend,
    Duration writeTimeout) {

  public static final ReplicationConfig DEFAULT = new ReplicationConfig(Duration.ofSeconds(5), Duration.ofMillis(100), 512,
      4L << 20, Duration.ofSeconds(10));

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
  }

  public ReplicationConfig withLagMax(Duration d) {
    return new ReplicationConfig(d, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout);
  }
}
