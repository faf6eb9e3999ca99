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
import io.shardwise.server.move.MemoryEngine;
import io.shardwise.server.replication.Messages.AppendBatch;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a leader's writes leave for a follower, on two {@link Replicator}s wired by hand: every
 * task runs at once on the calling thread (the worst case for batching: a sender woken by the
 * first append would send before the next one is made), and messages wait on a wire the test
 * delivers.
 */
class ReplicatorBatchingTest {

  private static final NodeId LEADER = NodeId.of("n1");
  private static final NodeId FOLLOWER = NodeId.of("n2");
  private static final ReplicationConfig CONFIG = new ReplicationConfig(Duration.ofMillis(500), Duration.ofMillis(100), 4, 1 << 20,
      Duration.ofSeconds(10), 1, 0, Duration.ofMillis(300));

  @TempDir
  Path dir;

  private final ArrayDeque<Runnable> wire = new ArrayDeque<>();
  private final List<AppendBatch> toFollower = new ArrayList<>();
  private final java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong();

  @Test
  void aRequestsPartsInSeveralShardsLeaveForAFollowerInOneMessage() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 2, KeySample.empty()).layout();
    MemoryEngine leaderEngine = new MemoryEngine("n1-store", () -> 0L);
    MemoryEngine followerEngine = new MemoryEngine("n2-store", () -> 0L);
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, List.of(LEADER, LEADER, LEADER),
        List.of(List.of(FOLLOWER), List.of(FOLLOWER), List.of(FOLLOWER)), Replication.of(2)).build());
    map = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.GrantStore(LEADER, leaderEngine.storeId()))
        .add(new ShardMapDelta.GrantStore(FOLLOWER, followerEngine.storeId())).build());
    Replicator[] follower = new Replicator[1];
    Replicator leader = new Replicator(LEADER, leaderEngine, new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<Messages.AppendReply, Throwable> done) {
        toFollower.add(batch);
        wire.add(() -> done.accept(follower[0].onAppend(batch), null));
      }

      @Override
      public void sendSnapshot(NodeId to, NodeId from, Messages.SnapshotOffer offer, Path file,
          java.util.function.BiConsumer<Messages.ShardReply, Throwable> done) {
        throw new AssertionError("no follower here lacks what the log holds");
      }
    }, (change, done) -> { }, Runnable::run, Runnable::run, dir.resolve("n1"), clock::get, CONFIG);
    follower[0] = new Replicator(FOLLOWER, followerEngine, new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<Messages.AppendReply, Throwable> done) {
        throw new AssertionError("the follower leads nothing");
      }

      @Override
      public void sendSnapshot(NodeId to, NodeId from, Messages.SnapshotOffer offer, Path file,
          java.util.function.BiConsumer<Messages.ShardReply, Throwable> done) {
        throw new AssertionError("the follower leads nothing");
      }
    }, (change, done) -> { }, Runnable::run, Runnable::run, dir.resolve("n2"), clock::get, CONFIG);
    leader.apply(ShardMap.EMPTY, map);
    follower[0].apply(ShardMap.EMPTY, map);
    clock.addAndGet(Duration.ofSeconds(1).toNanos()); // past any lease an earlier leader could hold
    leader.tick(); // a heartbeat: the new leader, which has nothing to commit, is ready, and its followers hear of it
    deliverAll();
    toFollower.clear();

    Table t = map.table("t").orElseThrow();
    Map<ShardRef, List<Mutation>> parts = new LinkedHashMap<>();
    for (int i = 0; parts.size() < 3; i++) { // one key in each shard
      Key key = Key.of("k" + i);
      ShardRef ref = ShardRef.of(t, t.shardFor(key.partitionKey()).id().number());
      parts.putIfAbsent(ref, List.of(Mutation.put(ref, key.encode(), ("v" + i).getBytes(StandardCharsets.UTF_8))));
    }
    Map<ShardRef, CompletableFuture<long[]>> started = leader.write(parts);

    assertThat(toFollower).as("messages to the follower").singleElement().satisfies(b -> {
      assertThat(b.shards()).extracting(Messages.ShardAppend::shard).containsExactlyInAnyOrderElementsOf(parts.keySet());
      assertThat(b.shards()).allSatisfy(a -> assertThat(a.entries()).hasSize(1));
    });
    deliverAll();
    assertThat(started.values()).as("committed after one round").allMatch(f -> f.isDone() && !f.isCompletedExceptionally());
  }

  private void deliverAll() {
    for (int i = 0; !wire.isEmpty(); i++) {
      assertThat(i).as("messages delivered").isLessThan(1_000);
      wire.poll().run();
    }
  }
}
