package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Design rule 7: the ownership check and the write are one atomic step under the local shard's
 * fence. A hook parks a write after the old owner routed it to its own shard and before it is
 * written, across a whole move and cutover; released, the write must not be acknowledged by the
 * node that no longer owns the shard (it would be dropped with the old copy).
 */
@Tag("integration")
class CutoverFenceTest {

  @TempDir Path dir;

  /** Parks the first write routed to {@link #target} until {@link #release} opens. */
  static final class ParkOneWrite implements RequestHooks {
    final AtomicReference<ShardRef> target = new AtomicReference<>();
    final CountDownLatch parked = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public void routedHere(ShardRef shard, boolean write) {
      ShardRef wanted = target.get();
      if (write && shard.equals(wanted) && target.compareAndSet(wanted, null)) {
        parked.countDown();
        try {
          release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  @Test
  void aWriteRoutedBeforeACutoverAndWrittenAfterItIsNotAcknowledgedByTheOldOwner() throws Exception {
    ParkOneWrite hook = new ParkOneWrite();
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      cluster.nodes.add(cluster.startNode(1, c -> c.withHooks(hook)));
      cluster.nodes.add(cluster.startNode(2));
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("race", TableSpec.builder("hashrange").shards(4).replicas(1).build());

      ShardwiseNode n1 = cluster.node("n1");
      Table table = n1.map().table("race").orElseThrow();
      Key key = null;
      ShardAssignment shard = null;
      for (int i = 0; key == null; i++) {
        Key k = Key.of(("k" + i).getBytes(StandardCharsets.UTF_8));
        ShardAssignment s = table.shardFor(k.partitionKey());
        if (s.owner().equals(n1.id())) {
          key = k;
          shard = s;
        }
      }
      client.put("race", key, "before".getBytes(StandardCharsets.UTF_8));
      hook.target.set(ShardRef.of(table, shard.id().number()));

      Key parkedKey = key;
      CompletableFuture<Long> parkedWrite = CompletableFuture.supplyAsync(
          () -> client.put("race", parkedKey, "parked".getBytes(StandardCharsets.UTF_8)));
      assertThat(hook.parked.await(30, TimeUnit.SECONDS)).as("the write reached n1 and was routed to its shard").isTrue();

      // The whole move runs while the write is parked: copy, catch-up, pause, cutover.
      MoveProgress last = TestCluster.moveShard(n1, table, shard, "n2", "race-1");
      assertThat(last.getPhase()).isEqualTo(MoveProgress.Phase.DONE);
      ShardMap after = n1.map();
      assertThat(after.shard(table.id(), shard.id().number()).orElseThrow().owner().value()).isEqualTo("n2");

      hook.release.countDown();
      Long version;
      try {
        version = parkedWrite.get(60, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(ShardwiseException.class);
        version = null; // refused: allowed, as long as it was not acknowledged
      }
      if (version != null) {
        assertThat(client.get("race", key).map(v -> new String(v.value(), StandardCharsets.UTF_8)))
            .as("the acknowledged write (version %d) is on the new owner", version).contains("parked");
        assertThat(cluster.node("n2").store().get(ShardRef.of(table, shard.id().number()), key.encode()))
            .as("stored on n2").isNotNull();
      }
    }
  }
}
