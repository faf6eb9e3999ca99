package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardDescription;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableDescription;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.Versioned;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicated tables on a real cluster (RocksDB nodes, ZooKeeper, gRPC): every write is on every
 * in-sync replica's store before it is acknowledged (the followers apply it by the next heartbeat),
 * reads and conditional writes at the leader see every acknowledged write, and the table says where
 * its replicas are.
 */
@Tag("integration")
class ReplicationTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyAcknowledgedWriteIsOnEveryReplicaAndReadsSeeIt() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      TableDescription created = client.createTable("r", TableSpec.builder("hashrange").shards(3).replicas(3).build());
      assertThat(created.replicas()).isEqualTo(3);
      assertThat(created.minInSync()).isEqualTo(2);
      for (ShardDescription s : created.shards()) {
        assertThat(s.followers()).hasSize(2).doesNotContain(s.owner()).doesNotHaveDuplicates();
        assertThat(s.inSync()).containsExactlyElementsOf(s.followers());
      }
      for (int i = 0; i < 300; i++) {
        assertThat(client.put("r", Key.of("k" + i), b("v" + i))).isEqualTo(1);
      }
      for (int i = 0; i < 300; i += 7) {
        assertThat(new String(client.get("r", Key.of("k" + i)).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("v" + i);
      }
      // Conditional writes and deletes through the log.
      assertThat(client.putIfVersion("r", Key.of("k1"), b("again"), 1)).isEqualTo(2);
      assertThatThrownBy(() -> client.putIfVersion("r", Key.of("k1"), b("stale"), 1))
          .isInstanceOf(io.shardwise.client.VersionMismatchException.class);
      assertThat(client.delete("r", Key.of("k2"))).isTrue();
      assertThat(client.get("r", Key.of("k2"))).isEmpty();

      // Every replica's store holds every key (followers apply up to the commit they have heard of).
      Table t = cluster.nodes.get(0).map().table("r").orElseThrow();
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        for (int i = 0; i < 300; i++) {
          Key k = Key.of("k" + i);
          ShardAssignment a = t.shardFor(k.partitionKey());
          ShardRef ref = ShardRef.of(t, a.id().number());
          for (String replica : a.replicas().stream().map(n -> n.value()).toList()) {
            Versioned v = cluster.node(replica).store().get(ref, k.encode());
            if (i == 2) {
              assertThat(v).as("deleted on %s", replica).isNull();
            } else {
              assertThat(v).as("k%d on %s", i, replica).isNotNull();
              assertThat(v.version()).isEqualTo(i == 1 ? 2 : 1);
            }
          }
        }
      });
    }
  }

  @Test
  void aTableCannotKeepMoreReplicasThanThereAreNodes() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      assertThatThrownBy(() -> client.createTable("r", TableSpec.builder("hashrange").replicas(3).build()))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("a table of 3 replicas needs 3 live nodes").hasMessageContaining("2 are live");
      assertThatThrownBy(() -> client.createTable("r", TableSpec.builder("hashrange").replicas(2).minInSync(3).build()))
          .hasMessageContaining("min in-sync replicas must be 1 to the replication factor (2), not 3");
      assertThat(client.listTables()).isEmpty();
    }
  }
}
