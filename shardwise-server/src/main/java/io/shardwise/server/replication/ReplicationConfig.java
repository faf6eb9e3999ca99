package io.shardwise.server.replication;

import java.time.Duration;

/**
 * The replication protocol's settings, with the defaults a node runs with.
 *
 * @param lagMax how long an in-sync follower may go without holding everything the leader has
 *     before the leader asks to drop it from the in-sync set (writes wait for it until then)
 * @param heartbeat how often a leader tells each follower its commit when it has nothing else to
 *     send (also how stale a follower may fall before it is told); a follower whose messages keep
 *     failing for two heartbeats leaves the in-sync set without waiting out the lag max ({@link
 *     #unreachableAfter})
 * @param maxEntriesPerAppend entries of one shard per message, at most
 * @param maxBytesPerAppend bytes of entries of one shard per message, about (at least one entry)
 * @param writeTimeout how long a write waits for its entry to be committed before it answers that
 *     its outcome is unknown
 * @param logRetainEntries applied entries each replica keeps in a shard's log for followers that fall
 *     behind; a follower further behind than that gets a snapshot of the shard instead
 * @param snapshotBytesPerSecond the bandwidth of one snapshot to a follower (0: unlimited)
 * @param readLease how long a follower's answer lets its leader serve linearizable reads without
 *     asking the followers again (a read lease, {@link Replica#readBarrier}); the leader counts
 *     {@link #LEASE_MARGIN} of it from before it sent the append, the follower the whole of it from
 *     when it answered, and does not serve as a leader itself before then. Safe while the nodes'
 *     clocks run at rates within that margin of each other and no node's clock stands still while
 *     it runs (a suspended machine); {@code ZERO} (the default) turns leases off: every leader read
 *     then waits for a round to the followers, resting on no clock at all. Longer than the
 *     heartbeat, so an idle shard keeps its lease; a leadership handed over waits for it to run out.
 */
public record ReplicationConfig(Duration lagMax, Duration heartbeat, int maxEntriesPerAppend, long maxBytesPerAppend,
    Duration writeTimeout, long logRetainEntries, long snapshotBytesPerSecond, Duration readLease) {

  /** The share of a read lease its leader counts on: clocks may run 10% apart in rate. */
  public static final double LEASE_MARGIN = 0.9;

  public static final ReplicationConfig DEFAULT = new ReplicationConfig(Duration.ofSeconds(5), Duration.ofMillis(100), 512,
      4L << 20, Duration.ofSeconds(10), 10_000, 64L << 20, Duration.ZERO);

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
    if (readLease.isNegative() || (!readLease.isZero() && (readLease.compareTo(heartbeat) <= 0 || readLease.compareTo(lagMax) >= 0))) {
      throw new IllegalArgumentException("the read lease (" + readLease + ") is 0 (off) or longer than the heartbeat (" + heartbeat
          + ") and shorter than the lag max (" + lagMax + ")");
    }
  }

  /**
   * How long a follower's messages must have failed, with no answer between, before its leader asks
   * to drop it from the in-sync set: two heartbeats, each of which sends to it again.
   */
  Duration unreachableAfter() {
    return heartbeat.multipliedBy(2);
  }

  /** The lease a follower's answer gives, on the follower's clock (0: leases off). */
  long followerLeaseNanos() {
    return readLease.toNanos();
  }

  /** The lease a follower's answer gives, on the leader's clock, from before the append went out (0: leases off). */
  long leaderLeaseNanos() {
    return (long) (readLease.toNanos() * LEASE_MARGIN);
  }

  public ReplicationConfig withLagMax(Duration d) {
    return new ReplicationConfig(d, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, logRetainEntries, snapshotBytesPerSecond, readLease);
  }

  public ReplicationConfig withLogRetainEntries(long entries) {
    return new ReplicationConfig(lagMax, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, entries, snapshotBytesPerSecond, readLease);
  }

  public ReplicationConfig withSnapshotBytesPerSecond(long bytesPerSecond) {
    return new ReplicationConfig(lagMax, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, logRetainEntries, bytesPerSecond, readLease);
  }

  public ReplicationConfig withReadLease(Duration lease) {
    return new ReplicationConfig(lagMax, heartbeat, maxEntriesPerAppend, maxBytesPerAppend, writeTimeout, logRetainEntries, snapshotBytesPerSecond,
        lease);
  }
}
