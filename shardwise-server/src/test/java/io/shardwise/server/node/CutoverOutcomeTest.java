package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Design rule 7, second half: a cutover whose outcome is unknown is resolved by reading the map,
 * never by guessing. Here the compare-and-set is stored and its reply is lost (the retried change
 * then fails its own check); the source must
 * learn from the map that the move happened, and the destination's copy — now the only owner's
 * data — must not be dropped.
 */
@Tag("integration")
class CutoverOutcomeTest {

  @TempDir Path dir;

  @Test
  void aCutoverStoredWhoseReplyIsLostEndsAsDoneAndTheNewOwnerKeepsEveryWrite() throws Exception {
    AtomicBoolean loseReply = new AtomicBoolean(true);
    RequestHooks lostReply = new RequestHooks() {
      @Override
      public void cutOverStored(ShardRef shard) {
        if (loseReply.getAndSet(false)) {
          // What the change's own check throws when Curator retries a compare-and-set that was
          // already applied (the reply was lost): the shard no longer belongs to this node.
          throw io.grpc.Status.FAILED_PRECONDITION.withDescription("shard " + shard + " belongs to n2, not to n1 (injected)")
              .asRuntimeException();
        }
      }
    };
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      cluster.nodes.add(cluster.startNode(1, c -> c.withHooks(lostReply)));
      cluster.nodes.add(cluster.startNode(2));
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("lost", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      ShardwiseNode n1 = cluster.node("n1");
      Table table = n1.map().table("lost").orElseThrow();
      ShardAssignment shard = table.shards().stream().filter(s -> s.owner().equals(n1.id())).findFirst().orElseThrow();
      List<Key> keys = new ArrayList<>();
      for (int i = 0; keys.size() < 50; i++) {
        Key k = Key.of(("k" + i).getBytes(StandardCharsets.UTF_8));
        if (table.shardFor(k.partitionKey()).id().equals(shard.id())) {
          keys.add(k);
          client.put("lost", k, ("v" + i).getBytes(StandardCharsets.UTF_8));
        }
      }

      MoveProgress last = TestCluster.moveShard(n1, table, shard, "n2", "lost-1");
      assertThat(loseReply).as("the reply was lost once").isFalse();
      assertThat(last.getPhase()).as("the source read the map and knows the move happened").isEqualTo(MoveProgress.Phase.DONE);
      assertThat(n1.map().shard(table.id(), shard.id().number()).orElseThrow().owner().value()).isEqualTo("n2");

      ShardRef ref = ShardRef.of(table, shard.id().number());
      ShardwiseNode n2 = cluster.node("n2");
      for (Key k : keys) {
        assertThat(n2.store().get(ref, k.encode())).as("key %s on the new owner", new String(k.partitionKey(), StandardCharsets.UTF_8))
            .isNotNull();
        assertThat(client.get("lost", k)).isPresent();
      }
      client.put("lost", keys.get(0), "after".getBytes(StandardCharsets.UTF_8));
      assertThat(new String(n2.store().get(ref, keys.get(0).encode()).value(), StandardCharsets.UTF_8)).isEqualTo("after");
    }
  }
}
