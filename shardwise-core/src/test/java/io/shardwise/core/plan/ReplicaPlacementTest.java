package io.shardwise.core.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.map.NodeId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReplicaPlacementTest {

  private static List<NodeId> nodes(int n) {
    List<NodeId> out = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      out.add(NodeId.of("n" + i));
    }
    return out;
  }

  @Test
  void followersAreDistinctFromTheLeaderAndSpreadEvenlyOverTheNodes() {
    List<NodeId> nodes = nodes(5);
    ReplicaPlacement placement = new ReplicaPlacement(nodes, Map.of());
    Map<NodeId, Integer> replicas = new HashMap<>();
    for (int shard = 0; shard < 100; shard++) {
      NodeId leader = nodes.get(shard % 5);
      placement.count(leader);
      replicas.merge(leader, 1, Integer::sum);
      List<NodeId> f = placement.followers(leader, 2);
      assertThat(f).hasSize(2).doesNotHaveDuplicates().doesNotContain(leader);
      f.forEach(n -> replicas.merge(n, 1, Integer::sum));
    }
    assertThat(replicas.values()).as("300 replicas over 5 nodes: %s", replicas).allSatisfy(n -> assertThat(n).isBetween(58, 62));
  }

  @Test
  void followersGoToZonesTheShardIsNotOnYet() {
    List<NodeId> nodes = nodes(6);
    Map<NodeId, String> zones = new HashMap<>();
    for (int i = 0; i < 6; i++) {
      zones.put(nodes.get(i), "z" + (i % 3)); // n1,n4 in z0; n2,n5 in z1; n3,n6 in z2
    }
    ReplicaPlacement placement = new ReplicaPlacement(nodes, zones);
    for (NodeId leader : nodes) {
      List<NodeId> f = placement.followers(leader, 2);
      assertThat(f.stream().map(zones::get).toList()).doesNotContain(zones.get(leader)).doesNotHaveDuplicates();
    }
    // More replicas than zones: every zone first, then the least loaded.
    assertThat(new ReplicaPlacement(nodes, zones).followers(NodeId.of("n1"), 4).stream().map(zones::get).limit(2).toList())
        .containsExactlyInAnyOrder("z1", "z2");
  }

  @Test
  void tooFewNodesIsRefusedWithTheCounts() {
    assertThatThrownBy(() -> new ReplicaPlacement(nodes(2), Map.of()).followers(NodeId.of("n1"), 2))
        .hasMessage("2 followers need 3 nodes; there are 2");
  }

  @Test
  void moreReplicasAvoidTheShardsNodesFullNodesAndTheirZonesAndStopWhenNodesRunOut() {
    List<NodeId> nodes = nodes(5);
    Map<NodeId, String> zones = Map.of(nodes.get(0), "a", nodes.get(1), "b", nodes.get(2), "a", nodes.get(3), "c", nodes.get(4), "c");
    ReplicaPlacement placement = new ReplicaPlacement(nodes, zones);
    // A shard on n1 (a) and on n6, a node gone from the placement's list: one more goes to zone b or c, not a; n2 (b) is full.
    List<NodeId> one = placement.more(List.of(nodes.get(0), NodeId.of("n6")), 1, java.util.Set.of(nodes.get(1)));
    assertThat(one).hasSize(1).allMatch(n -> zones.get(n).equals("c"));
    // Four more wanted, three nodes left that are neither replicas nor full: three come back.
    assertThat(placement.more(List.of(nodes.get(0)), 4, java.util.Set.of(nodes.get(1)))).hasSize(3).doesNotContain(nodes.get(0), nodes.get(1));
  }
}
