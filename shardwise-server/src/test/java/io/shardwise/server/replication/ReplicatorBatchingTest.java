package io.shardwise.server.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardMap;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a leader's writes leave for a follower, on two {@link WiredReplicators}: every task runs at
 * once on the calling thread (the worst case for batching: a sender woken by the first append
 * would send before the next one is made).
 */
class ReplicatorBatchingTest {

  private static final NodeId LEADER = NodeId.of("n1");
  private static final NodeId FOLLOWER = NodeId.of("n2");
  private static final ReplicationConfig CONFIG = new ReplicationConfig(Duration.ofMillis(500), Duration.ofMillis(100), 4, 1 << 20,
      Duration.ofSeconds(10), 1, 0, Duration.ofMillis(300));

  @TempDir
  Path dir;

  @Test
  void aRequestsPartsInSeveralShardsLeaveForAFollowerInOneMessage() {
    WiredReplicators nodes = new WiredReplicators(dir, CONFIG, LEADER, FOLLOWER);
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 2, KeySample.empty()).layout();
    nodes.change(ShardMapDelta.on(nodes.map()).createTable("t", spec, layout, List.of(LEADER, LEADER, LEADER),
        List.of(List.of(FOLLOWER), List.of(FOLLOWER), List.of(FOLLOWER)), Replication.of(2)).build());
    // A heartbeat past any lease an earlier leader could hold: the new leader, which has nothing to
    // commit, is ready, and its followers hear of it.
    nodes.tick(Duration.ofSeconds(1).toNanos());
    nodes.sent.clear();

    ShardMap map = nodes.map();
    Table t = map.table("t").orElseThrow();
    Map<ShardRef, List<Mutation>> parts = new LinkedHashMap<>();
    for (int i = 0; parts.size() < 3; i++) { // one key in each shard
      Key key = Key.of("k" + i);
      ShardRef ref = ShardRef.of(t, t.shardFor(key.partitionKey()).id().number());
      parts.putIfAbsent(ref, List.of(Mutation.put(ref, key.encode(), ("v" + i).getBytes(StandardCharsets.UTF_8))));
    }
    Map<ShardRef, CompletableFuture<long[]>> started = nodes.nodes.get(LEADER).write(parts);

    assertThat(nodes.sent).as("messages to the follower").singleElement().extracting(Map.Entry::getValue).satisfies(b -> {
      assertThat(b.shards()).extracting(Messages.ShardAppend::shard).containsExactlyInAnyOrderElementsOf(parts.keySet());
      assertThat(b.shards()).allSatisfy(a -> assertThat(a.entries()).hasSize(1));
    });
    nodes.deliverAll();
    assertThat(started.values()).as("committed after one round").allMatch(f -> f.isDone() && !f.isCompletedExceptionally());
  }
}
