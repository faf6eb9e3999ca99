package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.server.rpc.Limits;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A node started without an id takes the next free nN of its cluster, and keeps it. */
@Tag("integration")
class NodeIdTest {

  @TempDir Path dir;

  @Test
  void aNewNodeWithoutAnIdTakesTheNextFreeNameAndKeepsItAcrossRestarts() {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) { // n1, n2
      Path fresh = dir.resolve("fresh");
      ShardwiseNode third = ShardwiseNode.start(NodeConfig.of(fresh, cluster.zk.connectString()));
      assertThat(third.id().value()).isEqualTo("n3");
      ShardwiseNode fourth = ShardwiseNode.start(NodeConfig.of(dir.resolve("other"), cluster.zk.connectString()));
      assertThat(fourth.id().value()).isEqualTo("n4");
      fourth.close();
      third.close();
      try (ShardwiseNode again = ShardwiseNode.start(NodeConfig.of(fresh, cluster.zk.connectString()))) {
        assertThat(again.id().value()).as("its data directory keeps the name").isEqualTo("n3");
      }
    }
  }
}
