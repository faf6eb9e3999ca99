package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import java.time.Duration;
import java.util.Random;

/** Random splits, merges and moves of a table's shards on a test cluster, for tests that check what follows its rows through them. */
final class RandomReshapes {

  private final TestCluster cluster;
  private final ShardwiseClient client;
  private final Random random;
  private final String tag;
  private int moves;

  RandomReshapes(TestCluster cluster, ShardwiseClient client, Random random, String tag) {
    this.cluster = cluster;
    this.client = client;
    this.random = random;
    this.tag = tag;
  }

  /** Splits a random shard of {@code table} by size (an empty shard has no split by size: nothing happens). */
  void split(String table) {
    Table t = table(table);
    try {
      client.splitShard(table, t.shards().get(random.nextInt(t.shards().size())).id().number());
    } catch (ShardwiseException e) {
      assertThat(e.getMessage()).as("only an empty shard has no split by size").contains("is empty");
    }
  }

  /** Merges a random shard of {@code table} with its right neighbour, moved to its node first if they are apart. */
  void merge(String table) throws InterruptedException {
    Table t = table(table);
    if (t.shards().size() > 1) {
      int left = random.nextInt(t.shards().size() - 1);
      ShardAssignment right = t.shards().get(left + 1);
      String to = t.shards().get(left).owner().value();
      if (!right.owner().value().equals(to)) {
        TestCluster.moveShard(cluster.node(right.owner().value()), t, right, to, tag + "-" + moves++);
        awaitEveryNodeApplied();
      }
      client.mergeShards(table, t.shards().get(left).id().number());
    }
  }

  /** Moves a random shard of {@code table} to a random node (if not there already). */
  void move(String table) throws InterruptedException {
    Table t = table(table);
    ShardAssignment shard = t.shards().get(random.nextInt(t.shards().size()));
    String to = cluster.nodes.get(random.nextInt(cluster.nodes.size())).id().value();
    if (!to.equals(shard.owner().value())) {
      TestCluster.moveShard(cluster.node(shard.owner().value()), t, shard, to, tag + "-" + moves++);
      awaitEveryNodeApplied();
    }
  }

  /**
   * The table as the newest map has it: after every node has applied the newest epoch any of them
   * has (a split just stored may not be on node 0 yet, and a shard picked from an older map may be gone).
   */
  private Table table(String name) {
    awaitEveryNodeApplied();
    return cluster.nodes.get(0).map().table(name).orElseThrow();
  }

  private void awaitEveryNodeApplied() {
    long epoch = cluster.nodes.stream().mapToLong(n -> n.map().epoch()).max().orElseThrow();
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.nodes.stream().allMatch(n -> n.map().epoch() >= epoch));
  }
}
