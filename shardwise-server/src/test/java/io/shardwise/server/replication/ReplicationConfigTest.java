package io.shardwise.server.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The replication settings' defaults and bounds. */
class ReplicationConfigTest {

  /**
   * Read leases rest on the nodes' clocks running at about the same rate, which the design's
   * safety rules do not assume: a node (embedded ones included) reads without one unless told to.
   */
  @Test
  void readLeasesAreOffUnlessANodeIsToldOtherwise() {
    assertThat(ReplicationConfig.DEFAULT.readLease()).isZero();
    assertThat(ReplicationConfig.DEFAULT.followerLeaseNanos()).isZero();
    assertThat(ReplicationConfig.DEFAULT.leaderLeaseNanos()).isZero();
    ReplicationConfig leased = ReplicationConfig.DEFAULT.withReadLease(Duration.ofMillis(500));
    assertThat(leased.leaderLeaseNanos()).as("the leader counts less than the follower promised")
        .isEqualTo((long) (Duration.ofMillis(500).toNanos() * ReplicationConfig.LEASE_MARGIN)).isLessThan(leased.followerLeaseNanos());
  }

  @Test
  void aReadLeaseIsLongerThanTheHeartbeatAndShorterThanTheLagMax() {
    Duration heartbeat = ReplicationConfig.DEFAULT.heartbeat();
    Duration lagMax = ReplicationConfig.DEFAULT.lagMax();
    assertThatThrownBy(() -> ReplicationConfig.DEFAULT.withReadLease(heartbeat)).hasMessageContaining("longer than the heartbeat");
    assertThatThrownBy(() -> ReplicationConfig.DEFAULT.withReadLease(lagMax)).hasMessageContaining("shorter than the lag max");
    assertThatThrownBy(() -> ReplicationConfig.DEFAULT.withReadLease(Duration.ofMillis(-1))).hasMessageContaining("0 (off)");
    assertThat(ReplicationConfig.DEFAULT.withReadLease(heartbeat.plusMillis(1)).readLease()).isEqualTo(heartbeat.plusMillis(1));
  }
}
