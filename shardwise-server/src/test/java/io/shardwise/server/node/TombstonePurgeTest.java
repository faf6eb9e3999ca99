package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.VersionMismatchException;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.Table;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A node purges tombstones older than its {@code --tombstone-grace}, and versions stay unique after. */
class TombstonePurgeTest {

  @TempDir Path dir;

  @Test
  void aNodePurgesOldTombstonesAndAWriteConditionalOnAVersionFromBeforeTheDeleteStillFails() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      ShardwiseNode node = cluster.startNode(1, c -> c.withTombstoneGrace(Duration.ofMillis(200)));
      cluster.nodes.add(node);
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("t", TableSpec.builder("hashrange").shards(2).build());
      Key key = Key.of("k".getBytes(StandardCharsets.UTF_8));
      long read = client.put("t", key, "first".getBytes(StandardCharsets.UTF_8));
      assertThat(client.delete("t", key)).isTrue();

      Table table = node.map().table("t").orElseThrow();
      ShardRef ref = ShardRef.of(table, table.shardFor(key.partitionKey()).id().number());
      byte[] storeKey = ref.storeKey(key.encode());
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
          .until(() -> node.store().readStored(List.of(storeKey)).get(0).stored() == null);

      // Written again: above the purged tombstone's version, so a client that read version 1 before
      // the delete cannot match the new value (with versions restarting at 1 it would: ABA).
      assertThat(client.put("t", key, "again".getBytes(StandardCharsets.UTF_8))).isEqualTo(3);
      assertThatThrownBy(() -> client.putIfVersion("t", key, "stale".getBytes(StandardCharsets.UTF_8), read))
          .isInstanceOf(VersionMismatchException.class);
    }
  }
}
