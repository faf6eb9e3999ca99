package io.shardwise.core.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class ReplicaPlannerTest {

  private static List<NodeId> ids(int from, int count) {
    List<NodeId> out = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      out.add(NodeId.of("n" + i));
    }
    return out;
  }

  /** A hashrange table of {@code shards} shards, {@code factor} replicas each, placed over {@code nodes} as table creation does. */
  private static ShardMap table(int shards, int factor, List<NodeId> nodes, Map<NodeId, String> zones) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, shards, nodes.size(), KeySample.empty()).layout();
    ReplicaPlacement placement = new ReplicaPlacement(nodes, zones);
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    for (int i = 0; i < shards; i++) {
      NodeId leader = nodes.get(i % nodes.size());
      placement.count(leader);
      owners.add(leader);
      followers.add(placement.followers(leader, factor - 1));
    }
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, owners, followers, Replication.of(factor))
        .build());
  }

  private static List<NodeCapacity> live(List<NodeId> nodes) {
    return nodes.stream().map(n -> new NodeCapacity(n, 1.0, false)).toList();
  }

  /** Each shard's replicas (leader first) once the plan's moves are done, checking each move is one the cluster can make. */
  private static Map<ShardId, List<NodeId>> apply(ShardMap map, Plan plan) {
    Map<ShardId, List<NodeId>> out = new TreeMap<>();
    Map<ShardId, ShardAssignment> before = new HashMap<>();
    for (ShardAssignment s : map.table("t").orElseThrow().shards()) {
      out.put(s.id(), new ArrayList<>(s.replicas()));
      before.put(s.id(), s);
    }
    Set<ShardId> seen = new HashSet<>();
    for (Move m : plan.moves()) {
      assertThat(seen.add(m.shard())).as("one change per shard per plan: %s", m).isTrue();
      List<NodeId> r = out.get(m.shard());
      if (m.leadership()) {
        assertThat(r.get(0)).as("%s: from leads", m).isEqualTo(m.from());
        assertThat(before.get(m.shard()).inSync()).as("%s: to is an in-sync follower", m).contains(m.to());
        r.remove(m.to());
        r.set(0, m.to());
        r.add(m.from());
      } else {
        assertThat(r).as("%s", m).contains(m.from()).doesNotContain(m.to());
        r.set(r.indexOf(m.from()), m.to()); // a moved leader's lead goes with its replica
      }
    }
    return out;
  }

  private static Map<NodeId, Integer> replicasPerNode(Map<ShardId, List<NodeId>> shards) {
    Map<NodeId, Integer> out = new TreeMap<>();
    shards.values().forEach(r -> r.forEach(n -> out.merge(n, 1, Integer::sum)));
    return out;
  }

  private static Map<NodeId, Integer> leadersPerNode(Map<ShardId, List<NodeId>> shards) {
    Map<NodeId, Integer> out = new TreeMap<>();
    shards.values().forEach(r -> out.merge(r.get(0), 1, Integer::sum));
    return out;
  }

  /**
   * A node joining a replicated ring takes the leads of exactly its arcs, as the simulator's ring of
   * four puts them, and nothing else moves: where it already holds an in-sync replica the lead
   * passes, elsewhere the leader's replica moves to it with the lead.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.EnumSource(value = Strategy.class, names = {"RING", "TOKENS"})
  void aNodeJoiningAReplicatedRingLeadsExactlyItsArcs(Strategy strategy) {
    PartitionerSpec spec = PartitionerSpec.builder(strategy).vnodes(16).tokensPerNode(8).seed(3).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 0, 3, KeySample.empty());
    List<NodeId> nodes = ids(0, 3);
    ReplicaPlacement placement = new ReplicaPlacement(nodes, Map.of());
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    for (int o : initial.owners()) {
      NodeId leader = NodeId.of("n" + o);
      placement.count(leader);
      owners.add(leader);
      followers.add(placement.followers(leader, 1));
    }
    ShardMap created = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), owners, followers,
        Replication.of(2)).build());
    ShardMap map = created.apply(ShardMapDelta.on(created).joinRing("t", NodeId.of("n3")).build());

    Plan plan = ReplicaPlanner.plan(map, "t", live(ids(0, 4)), Map.of(), Map.of());
    Map<ShardId, List<NodeId>> after = apply(map, plan);

    assertThat(plan.note()).contains("ring points of [n3] take over the leads of their arcs");
    io.shardwise.core.map.Table table = map.table("t").orElseThrow();
    int[] memberOf = io.shardwise.core.partition.RingRanges.memberOfRanges(spec, table.layout());
    int arcs = 0;
    for (int position = 0; position < memberOf.length; position++) {
      ShardAssignment s = table.shards().get(position);
      boolean its = memberOf[position] == 3;
      arcs += its ? 1 : 0;
      assertThat(after.get(s.id()).get(0)).as("leader of range %s (member %s)", position, memberOf[position])
          .isEqualTo(its ? NodeId.of("n3") : s.owner());
      if (!its) {
        assertThat(after.get(s.id())).as("replicas of range %s, not n3's", position).isEqualTo(s.replicas());
      }
    }
    assertThat(arcs).isPositive();
    assertThat(plan.moves()).hasSize(arcs).allSatisfy(m -> assertThat(m.to()).isEqualTo(NodeId.of("n3")));
    io.shardwise.core.partition.Partitioner lab = spec.create(4, KeySample.empty());
    for (int i = 0; i < 2_000; i++) {
      byte[] key = ("user-" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
      assertThat(after.get(table.shardFor(key).id()).get(0)).as("leader of user-%s", i).isEqualTo(NodeId.of("n" + lab.nodeFor(key)));
    }
    // Once n3 leads its arcs, the next plan is the usual balancing.
    List<NodeId> leaders = new ArrayList<>();
    List<List<NodeId>> rest = new ArrayList<>();
    for (ShardAssignment s : table.shards()) {
      List<NodeId> r = after.get(s.id());
      leaders.add(r.get(0));
      rest.add(r.subList(1, r.size()));
    }
    ShardMap moved = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, table.layout(), leaders, rest,
        Replication.of(2)).build());
    assertThat(ReplicaPlanner.plan(moved, "t", live(ids(0, 4)), Map.of(), Map.of()).note()).doesNotContain("take over");
  }

  @Test
  void aFourthNodeTakesAQuarterOfTheReplicasAndOfTheLeadersFromTheOthersEvenly() {
    List<NodeId> three = ids(1, 3);
    ShardMap map = table(16, 3, three, Map.of());
    List<NodeId> four = ids(1, 4);

    Plan plan = ReplicaPlanner.plan(map, "t", live(four), Map.of(), Map.of());
    Map<ShardId, List<NodeId>> after = apply(map, plan);

    assertThat(replicasPerNode(after)).containsOnlyKeys(four).allSatisfy((n, c) -> assertThat(c).as("%s", n).isEqualTo(12));
    assertThat(leadersPerNode(after)).containsOnlyKeys(four).allSatisfy((n, c) -> assertThat(c).as("%s", n).isEqualTo(4));
    List<Move> data = plan.moves().stream().filter(m -> !m.leadership()).toList();
    assertThat(data).as("the least that balances: 48 replicas, 12 each").hasSize(12).allSatisfy(m -> assertThat(m.to()).isEqualTo(NodeId.of("n4")));
    for (NodeId n : three) {
      assertThat(data.stream().filter(m -> m.from().equals(n))).as("%s gives its excess of 4", n).hasSize(4);
    }
    assertThat(plan.forecast().shardPeakToAverageAfter()).isEqualTo(1.0);

    // Planned again once done, nothing more moves.
    assertThat(ReplicaPlanner.plan(done(map, after), "t", live(four), Map.of(), Map.of()).moves()).isEmpty();
  }

  /** The map with each shard's replicas (leader first) as given, every follower in sync. */
  private static ShardMap done(ShardMap map, Map<ShardId, List<NodeId>> replicas) {
    PartitionerSpec spec = map.table("t").orElseThrow().spec();
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    replicas.values().forEach(r -> {
      owners.add(r.get(0));
      followers.add(r.subList(1, r.size()));
    });
    ShardLayout layout = map.table("t").orElseThrow().layout();
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, owners, followers,
        map.table("t").orElseThrow().replication()).build());
  }

  @Test
  void leadersBalanceByPassingTheLeadToInSyncFollowersWithoutMovingData() {
    List<NodeId> nodes = ids(1, 3);
    // Every shard on every node, all led by n1.
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 6, 3, KeySample.empty()).layout();
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      owners.add(nodes.get(0));
      followers.add(List.of(nodes.get(1), nodes.get(2)));
    }
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, owners, followers, Replication.of(3))
        .build());

    Plan plan = ReplicaPlanner.plan(map, "t", live(nodes), Map.of(), Map.of());

    assertThat(plan.moves()).hasSize(4).allSatisfy(m -> {
      assertThat(m.leadership()).isTrue();
      assertThat(m.bytes()).isZero();
    });
    assertThat(leadersPerNode(apply(map, plan))).containsOnlyKeys(nodes).allSatisfy((n, c) -> assertThat(c).isEqualTo(2));
    assertThat(plan.forecast().movedBytes()).isZero();
  }

  @Test
  void aMoveNeverTakesAShardOffAZoneItIsOn() {
    Map<NodeId, String> zones = new HashMap<>();
    List<NodeId> six = ids(1, 6);
    for (int i = 0; i < 6; i++) {
      zones.put(six.get(i), "z" + (i / 2)); // n1 n2 in z0, n3 n4 in z1, n5 n6 in z2
    }
    ShardMap map = table(12, 3, six, zones);
    List<NodeId> seven = ids(1, 7);
    zones.put(NodeId.of("n7"), "z0");

    Plan plan = ReplicaPlanner.plan(map, "t", live(seven), zones, Map.of());
    Map<ShardId, List<NodeId>> after = apply(map, plan);

    assertThat(plan.moves().stream().filter(m -> !m.leadership())).isNotEmpty()
        .allSatisfy(m -> assertThat(zones.get(m.from())).as("%s: only a z0 replica can go to z0's new node", m).isEqualTo("z0"));
    after.forEach((s, r) -> assertThat(r.stream().map(zones::get).distinct()).as("%s", s).hasSize(3));
  }

  @Test
  void replicasOnDrainingNodesAreLeftToRepairAndWeightsAreShares() {
    List<NodeId> four = ids(1, 4);
    ShardMap map = table(8, 2, four, Map.of());
    List<NodeCapacity> nodes = List.of(new NodeCapacity(NodeId.of("n1"), 1, true), new NodeCapacity(NodeId.of("n2"), 1, false),
        new NodeCapacity(NodeId.of("n3"), 1, false), new NodeCapacity(NodeId.of("n4"), 1, false), new NodeCapacity(NodeId.of("n5"), 3, false));

    Plan plan = ReplicaPlanner.plan(map, "t", nodes, Map.of(), Map.of());

    assertThat(plan.moves()).noneMatch(m -> m.from().equals(NodeId.of("n1")) || m.to().equals(NodeId.of("n1")));
    Map<NodeId, Integer> after = replicasPerNode(apply(map, plan));
    int placed = after.entrySet().stream().filter(e -> !e.getKey().equals(NodeId.of("n1"))).mapToInt(Map.Entry::getValue).sum();
    // n5 weighs 3 of 6: half of the replicas not on n1.
    assertThat(after.get(NodeId.of("n5"))).isBetween(placed / 2 - 1, placed / 2 + 1);
  }

  @Test
  void aTableOfOneReplicaIsRefused() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 2, 1, KeySample.empty()).layout();
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, List.of(NodeId.of("n1"),
        NodeId.of("n1"))).build());
    assertThatThrownBy(() -> ReplicaPlanner.plan(map, "t", live(ids(1, 2)), Map.of(), Map.of()))
        .hasMessageContaining("one replica").hasMessageContaining("move whole");
  }

  /**
   * Any cluster grown from {@code before} to {@code before + added} nodes: every move is one the
   * cluster can make (a replica to a node without one, a lead to an in-sync follower, one change per
   * shard), and afterwards every node is within one replica of every other — or every shard has
   * moved once and the next plan goes on. Leads never end more uneven than they began.
   */
  @Property(tries = 300, seed = "20261203")
  void everyPlanIsMadeOfPossibleMovesAndEvensReplicasWithinOne(@ForAll @IntRange(min = 2, max = 8) int before,
      @ForAll @IntRange(min = 0, max = 5) int added, @ForAll @IntRange(min = 1, max = 40) int shards,
      @ForAll @IntRange(min = 2, max = 3) int factor) {
    if (factor > before) {
      return;
    }
    ShardMap map = table(shards, factor, ids(1, before), Map.of());
    List<NodeId> all = ids(1, before + added);

    Plan plan = ReplicaPlanner.plan(map, "t", live(all), Map.of(), Map.of());
    Map<ShardId, List<NodeId>> after = apply(map, plan);

    Map<NodeId, Integer> counts = new TreeMap<>();
    all.forEach(n -> counts.put(n, 0));
    replicasPerNode(after).forEach(counts::put);
    int spread = counts.values().stream().mapToInt(Integer::intValue).max().orElseThrow()
        - counts.values().stream().mapToInt(Integer::intValue).min().orElseThrow();
    long dataMoves = plan.moves().stream().filter(m -> !m.leadership()).count();
    assertThat(spread <= 1 || dataMoves == shards).as("replicas per node %s after %d moves", counts, dataMoves).isTrue();
    after.forEach((s, r) -> assertThat(r).as("%s", s).hasSize(factor).doesNotHaveDuplicates());

    Map<NodeId, Integer> leadsBefore = new TreeMap<>();
    Map<NodeId, Integer> leadsAfter = new TreeMap<>();
    all.forEach(n -> {
      leadsBefore.put(n, 0);
      leadsAfter.put(n, 0);
    });
    map.table("t").orElseThrow().shards().forEach(s -> leadsBefore.merge(s.owner(), 1, Integer::sum));
    leadersPerNode(after).forEach(leadsAfter::put);
    assertThat(spreadOf(leadsAfter)).as("leads %s -> %s", leadsBefore, leadsAfter).isLessThanOrEqualTo(Math.max(1, spreadOf(leadsBefore)));
  }

  private static int spreadOf(Map<NodeId, Integer> counts) {
    return counts.values().stream().mapToInt(Integer::intValue).max().orElseThrow()
        - counts.values().stream().mapToInt(Integer::intValue).min().orElseThrow();
  }
}
