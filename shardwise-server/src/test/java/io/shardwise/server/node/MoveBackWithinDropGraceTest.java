package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardTrash;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node keeps the copy of a shard that moved away for its drop grace, then trashes it, unless it
 * owns the shard again or is receiving it. Here a shard comes back into its old node while that
 * timer runs, the second move slowed down (a bandwidth limit) so that the timer fires in the middle
 * of it: the snapshot being received must not go to the trash with the stale copy, and after the
 * cutover every key written before, between and after the moves is there. The same holds when only
 * half of a split comes back. (The fault these pin down: a move into a node within its drop grace
 * lost its snapshot with the node's stale copy, found by the growth test, fixed in 367655b.)
 */
@Tag("integration")
class MoveBackWithinDropGraceTest {

  /** Long enough for the move back to start first, short enough to fire while its snapshot streams. */
  private static final Duration DROP_GRACE = Duration.ofSeconds(3);
  /** The move back streams about 400 KB at 50 KB/s: about 8 s, so the timer fires well inside it. */
  private static final long SLOW_BYTES_PER_SECOND = 50_000;
  private static final int KEYS = 400;

  @TempDir Path dir;

  private static Key key(int i) {
    return Key.of(("key-" + i).getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] value(int i, int round) {
    byte[] v = new byte[1000];
    new SplittableRandom(i * 31L + round).nextBytes(v);
    return v;
  }

  private TestCluster cluster() {
    TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT);
    for (int i = 1; i <= 2; i++) {
      cluster.nodes.add(cluster.startNode(i, c -> c.withDropGrace(DROP_GRACE)));
    }
    return cluster;
  }

  @Test
  void aShardThatComesBackWhileItsOldCopyWaitsForTheTrashKeepsEveryKey() throws Exception {
    try (TestCluster cluster = cluster()) {
      OneShard one = oneShard(cluster, "back");
      ShardwiseClient client = one.client;
      Table table = one.table;
      ShardAssignment shard = one.shard;
      ShardwiseNode source = one.source;
      ShardwiseNode other = one.other;

      // Away, and at once back: the source's drop timer for its old copy starts with the first cutover.
      TestCluster.moveShard(source, table, shard, other.id().value(), "away");
      for (int i = 0; i < KEYS; i += 2) {
        client.put("back", key(i), value(i, 1)); // written on the other node, between the moves
      }
      Table moved = other.map().table("back").orElseThrow();
      MoveProgress back = TestCluster.moveShard(other, moved, moved.shards().get(0), source.id().value(), "back", SLOW_BYTES_PER_SECOND);
      assertThat(back.getPhase()).isEqualTo(MoveProgress.Phase.DONE);
      assertThat(back.getTotalBytes()).as("the move back streamed long enough to span the timer").isGreaterThan(DROP_GRACE.getSeconds()
          * SLOW_BYTES_PER_SECOND);
      for (int i = 1; i < KEYS; i += 4) {
        client.put("back", key(i), value(i, 2)); // on the source again
      }

      // The other node trashes its copy after the same grace, started later than the source's timer.
      ShardRef ref = ShardRef.of(source.map().table("back").orElseThrow(), shard.id().number());
      await().atMost(Duration.ofSeconds(30)).until(() -> trashed(other, ref));
      assertThat(trashed(source, ref)).as("the source trashed the copy it had received back: %s", source.store().trash().entries()).isFalse();
      // (Its stale copy of before the moves went to the trash as the snapshot replaced it: that one is kept, as REPLACED.)
      for (int i = 0; i < KEYS; i++) {
        byte[] last = value(i, i % 4 == 1 ? 2 : i % 2 == 0 ? 1 : 0);
        assertThat(client.get("back", key(i))).as("key-" + i).get().satisfies(v -> assertThat(v.value()).isEqualTo(last));
        assertThat(source.store().get(ref, key(i).encode())).as("key-" + i + " on the source's store").isNotNull();
      }
    }
  }

  @Test
  void halfOfASplitThatComesBackWhileTheWholeWaitsForTheTrashKeepsEveryKey() throws Exception {
    try (TestCluster cluster = cluster()) {
      OneShard one = oneShard(cluster, "halves");
      ShardwiseClient client = one.client;
      Table table = one.table;
      ShardAssignment whole = one.shard;
      ShardwiseNode source = one.source;
      ShardwiseNode other = one.other;

      TestCluster.moveShard(source, table, whole, other.id().value(), "away");
      client.splitShardAtHash("halves", whole.id().number(), Long.MIN_VALUE); // at the middle of the hashes
      await().atMost(Duration.ofSeconds(10)).until(() -> other.map().table("halves").orElseThrow().shards().size() == 2);
      Table split = other.map().table("halves").orElseThrow();
      ShardAssignment upper = split.shards().get(1);
      MoveProgress back = TestCluster.moveShard(other, split, upper, source.id().value(), "back", SLOW_BYTES_PER_SECOND / 2);
      assertThat(back.getPhase()).isEqualTo(MoveProgress.Phase.DONE);
      for (int i = 1; i < KEYS; i += 2) {
        client.put("halves", key(i), value(i, 1));
      }

      // The whole's old copy goes when its timer fires: only the lower half's range, which is the other node's now.
      Table now = source.map().table("halves").orElseThrow();
      ShardRef lower = ShardRef.of(now, split.shards().get(0).id().number());
      ShardRef upperRef = ShardRef.of(now, upper.id().number());
      await().atMost(Duration.ofSeconds(30)).until(() -> trashed(source, lower));
      assertThat(trashed(source, upperRef)).as("the half that came back").isFalse();
      for (int i = 0; i < KEYS; i++) {
        byte[] last = value(i, i % 2 == 1 ? 1 : 0);
        assertThat(client.get("halves", key(i))).as("key-" + i).get().satisfies(v -> assertThat(v.value()).isEqualTo(last));
      }
    }
  }

  /** A hashrange table of one shard holding {@link #KEYS} keys (round 0), on {@code source}; the balancer off. */
  private record OneShard(ShardwiseClient client, Table table, ShardAssignment shard, ShardwiseNode source, ShardwiseNode other) {}

  private static OneShard oneShard(TestCluster cluster, String name) {
    ShardwiseClient client = cluster.client(Routing.CLIENT);
    manual(cluster);
    client.createTable(name, TableSpec.builder("hashrange").shards(1).replicas(1).build());
    Table table = cluster.node("n1").map().table(name).orElseThrow();
    ShardAssignment shard = table.shards().get(0);
    ShardwiseNode source = cluster.node(shard.owner().value());
    ShardwiseNode other = cluster.node(source.id().value().equals("n1") ? "n2" : "n1");
    for (int i = 0; i < KEYS; i++) {
      client.put(name, key(i), value(i, 0));
    }
    return new OneShard(client, table, shard, source, other);
  }

  /** True if the node's drop grace sent its copy of {@code shard} to the trash as moved away. */
  private static boolean trashed(ShardwiseNode node, ShardRef shard) {
    List<ShardTrash.Entry> entries = new ArrayList<>(node.store().trash().entries());
    return entries.stream().anyMatch(e -> e.kind() == ShardTrash.Kind.MOVED_AWAY && e.shard().tableId() == shard.tableId()
        && e.shard().shardNumber() == shard.shardNumber());
  }

  /** No balancer plans: the test moves the shards itself. */
  private static void manual(TestCluster cluster) {
    try (var c = io.shardwise.server.coordination.Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10),
        Duration.ofSeconds(10))) {
      new io.shardwise.server.balance.RebalanceRecords(c).updateSettings(s -> s.toBuilder()
          .setMode(io.shardwise.proto.v1.BalancerSettings.Mode.MANUAL).build());
    }
  }
}
