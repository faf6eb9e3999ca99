package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.TableAdmin;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A table of the most shards a table may have: its map (about 1.4 MB, more than a znode holds) is
 * stored in chunks, and its drop record in parts, so it is created, written, dropped and brought
 * back like any other.
 */
@Tag("integration")
class LargeTableTest {

  @TempDir Path dir;

  @Test
  void aTableOfTheMostShardsIsCreatedDroppedAndBroughtBack() {
    try (TestCluster cluster = new TestCluster(dir, 1, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("huge", TableSpec.builder("hashrange").shards(TableAdmin.MAX_SHARDS).build());
      client.put("huge", Key.of("k"), "v".getBytes(StandardCharsets.UTF_8));
      client.dropTable("huge");
      assertThat(client.undropTable("huge").table().shards()).hasSize(TableAdmin.MAX_SHARDS);
      assertThat(client.get("huge", Key.of("k"))).isPresent();
    }
  }
}
