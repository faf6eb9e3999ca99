package io.shardwise.server.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A follower whose node is gone (its host refuses every message, as after {@code kill -9}) leaves
 * its leader's in-sync set after two failed heartbeats, long before the lag max, so that writes,
 * which wait for every in-sync follower, go on with the others; one lost message does not make it
 * leave. On {@link WiredReplicators}: a leader n1 with followers n2 and n3, three replicas, two in
 * sync needed.
 */
class UnreachableFollowerTest {

  private static final NodeId LEADER = NodeId.of("n1");
  private static final NodeId KEPT = NodeId.of("n2");
  private static final NodeId GONE = NodeId.of("n3");
  private static final Duration HEARTBEAT = Duration.ofMillis(100);
  // A lag max far beyond the test's time: whoever leaves the in-sync set here leaves for being unreachable.
  private static final ReplicationConfig CONFIG = new ReplicationConfig(Duration.ofSeconds(60), HEARTBEAT, 64, 1 << 20,
      Duration.ofSeconds(120), 100, 0, Duration.ZERO);

  @TempDir
  Path dir;

  private WiredReplicators nodes;
  private ShardRef ref;

  @BeforeEach
  void oneShardOfThreeReplicasAllInSync() {
    nodes = new WiredReplicators(dir, CONFIG, LEADER, KEPT, GONE);
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout();
    nodes.change(ShardMapDelta.on(nodes.map()).createTable("t", spec, layout, List.of(LEADER), List.of(List.of(KEPT, GONE)),
        new Replication(3, 2)).build());
    Table t = nodes.map().table("t").orElseThrow();
    ref = ShardRef.of(t, 0);
    nodes.tick(Duration.ofSeconds(1).toNanos()); // past any earlier leader's lease: ready, and the followers hear of it
    assertThat(shard().inSync()).containsExactlyInAnyOrder(KEPT, GONE);
  }

  @Test
  void aFollowerThatRefusesEveryMessageForTwoHeartbeatsLeavesTheInSyncSetAndWritesGoOn() {
    nodes.down.add(GONE);
    CompletableFuture<long[]> write = put("k1");
    nodes.deliverAll();
    assertThat(write).as("waits for every in-sync follower").isNotDone();

    nodes.tick(HEARTBEAT.toNanos()); // the second failed message, one heartbeat after the first
    assertThat(shard().inSync()).as("still in sync one heartbeat after its first failure").contains(GONE);
    assertThat(write).isNotDone();

    nodes.tick(HEARTBEAT.toNanos() + 1);
    assertThat(shard().inSync()).as("two heartbeats of failures").containsExactly(KEPT);
    assertThat(write).as("committed by the leader and the follower left in sync").isCompletedWithValueMatching(v -> v.length == 1);
    nodes.tick(HEARTBEAT.toNanos()); // the commit reaches the follower
    assertThat(nodes.engines.get(KEPT).stored(ref.storeKey(storeKey("k1")))).as("applied on the follower that answers").isNotNull();

    nodes.down.remove(GONE); // back: caught up, it joins again
    for (int i = 0; i < 20 && !shard().inSync().contains(GONE); i++) {
      nodes.tick(HEARTBEAT.toNanos());
    }
    assertThat(shard().inSync()).containsExactlyInAnyOrder(KEPT, GONE);
    assertThat(nodes.engines.get(GONE).stored(ref.storeKey(storeKey("k1")))).as("caught up").isNotNull();
  }

  @Test
  void oneLostMessageDoesNotMakeAFollowerLeave() {
    nodes.down.add(GONE);
    CompletableFuture<long[]> write = put("k1");
    nodes.deliverAll(); // its append fails
    nodes.down.remove(GONE);
    for (int i = 0; i < 10; i++) {
      nodes.tick(HEARTBEAT.toNanos()); // it answers the next heartbeat, and every one after
      assertThat(shard().inSync()).as("after heartbeat %d", i + 1).containsExactlyInAnyOrder(KEPT, GONE);
    }
    assertThat(write).isCompletedWithValueMatching(v -> v.length == 1);
  }

  private CompletableFuture<long[]> put(String key) {
    return nodes.nodes.get(LEADER).write(ref, List.of(Mutation.put(ref, storeKey(key), "v".getBytes(StandardCharsets.UTF_8))));
  }

  private static byte[] storeKey(String key) {
    return Key.of(key).encode();
  }

  private ShardAssignment shard() {
    return nodes.map().table("t").orElseThrow().shards().get(0);
  }
}
