package io.shardwise.server.balance;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ShardInfo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The size, load and merge policies on given stats, without a cluster. */
class ResizerTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final Map<NodeId, NodeInfo> LIVE = Map.of(N1, NodeInfo.newBuilder().setId("n1").build(), N2,
      NodeInfo.newBuilder().setId("n2").build());
  private static final BalancerSettings AUTO = BalancerSettings.newBuilder().setMode(BalancerSettings.Mode.AUTO)
      .setSplitBytes(1 << 20).setSplitRps(1_000).setSplitRpsSeconds(5).setMergeSeconds(10).build();

  /** A range table "t" of four shards (split at b, c, d), owners as given. */
  private static ShardMap map(NodeId... owners) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.RANGE).hash(HashFunctions.murmur3_128())
        .splitPoints(List.of(b("b"), b("c"), b("d"))).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 4, 1, KeySample.empty());
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), List.of(owners)).build());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Stats of every shard: {@code bytes[i]} bytes and {@code rps[i]} requests in each of {@code seconds} seconds. */
  private static List<NodeStatsResponse> stats(ShardMap map, long[] bytes, int[] rps, int seconds, Map<Integer, String> loadSplits) {
    Table t = map.table("t").orElseThrow();
    Map<String, NodeStatsResponse.Builder> nodes = new LinkedHashMap<>();
    for (int i = 0; i < t.shards().size(); i++) {
      var s = t.shards().get(i);
      ShardInfo.Builder info = ShardInfo.newBuilder().setTable("t").setNumber(s.id().number()).setOwner(s.owner().value())
          .setApproximateBytes(bytes[i]);
      for (int k = 0; k < seconds; k++) {
        info.addReadsHistory(rps[i] / 2).addWritesHistory(rps[i] - rps[i] / 2);
      }
      if (loadSplits.containsKey(i)) {
        info.setHasLoadSplit(true).setLoadSplitKey(ByteString.copyFromUtf8(loadSplits.get(i))).setLoadSplitLowerShare(0.5)
            .setLoadSplitCounted(400);
      } else {
        info.setLoadSplitRefusal("one partition key carries about 90% of the shard's requests");
      }
      nodes.computeIfAbsent(s.owner().value(), n -> NodeStatsResponse.newBuilder().setNode(n)).addShards(info);
    }
    List<NodeStatsResponse> out = new ArrayList<>();
    nodes.values().forEach(n -> out.add(n.build()));
    return out;
  }

  private static List<ResizeRecord> propose(BalancerSettings settings, ShardMap map, List<NodeStatsResponse> stats, Set<Long> resized,
      List<String> refusals) {
    return Resizer.propose(settings, map, stats, LIVE, id -> resized, Set.of(), Set.of(), (shard, why) -> refusals.add(shard + ": " + why));
  }

  private static List<String> merges(List<ResizeRecord> r) {
    return r.stream().filter(x -> x.getKind() == ResizeRecord.Kind.MERGE).map(x -> x.getNumber() + "+" + x.getRightNumber()).toList();
  }

  @Test
  void aShardPastTheSplitSizeSplitsBySizeTheFurthestFirst() {
    ShardMap map = map(N1, N1, N1, N1);
    List<ResizeRecord> r = propose(AUTO, map, stats(map, new long[] {2 << 20, 100, 5 << 20, 100}, new int[4], 10, Map.of()), Set.of(),
        new ArrayList<>());
    assertThat(r).extracting(ResizeRecord::getKind).containsOnly(ResizeRecord.Kind.SPLIT);
    assertThat(r).extracting(ResizeRecord::getNumber).containsExactly(2L, 0L);
    assertThat(r.get(0).getBySize()).isTrue();
    assertThat(r.get(0).getWhy()).contains("past the split size of 1.0 MiB");
  }

  @Test
  void aShardAboveTheSplitRateForTheWholeWindowSplitsAtItsLoadPoint() {
    ShardMap map = map(N1, N1, N1, N1);
    List<ResizeRecord> r = propose(AUTO, map, stats(map, new long[4], new int[] {0, 1_500, 0, 0}, 5, Map.of(1, "bm")), Set.of(),
        new ArrayList<>());
    assertThat(r).hasSize(1);
    assertThat(r.get(0).getNumber()).isEqualTo(1);
    assertThat(r.get(0).getAtPartitionKey().toStringUtf8()).isEqualTo("bm");
    assertThat(r.get(0).getWhy()).contains("at least 1,500 requests/s in each of the last 5 s");
    // One quiet second in the window: not above the rate for the whole window.
    NodeStatsResponse.Builder n1 = stats(map, new long[4], new int[] {0, 1_500, 0, 0}, 5, Map.of(1, "bm")).get(0).toBuilder();
    n1.getShardsBuilder(1).setReadsHistory(2, 0).setWritesHistory(2, 0);
    assertThat(propose(AUTO, map, List.of(n1.build()), Set.of(), new ArrayList<>())).isEmpty();
    // A window not yet filled (the shard is new on its node): not yet.
    assertThat(propose(AUTO, map, stats(map, new long[4], new int[] {0, 1_500, 0, 0}, 4, Map.of(1, "bm")), Set.of(), new ArrayList<>()))
        .isEmpty();
  }

  @Test
  void aLoadSplitsUpperHalfMovesToTheLeastLoadedNodeOnlyIfThatLowersThePeak() {
    // Two hot shards on n1, n2 idle: each upper half (750/s) goes to n2, counted as the plan goes (n1 3,000 -> 1,500, n2 0 -> 1,500).
    ShardMap map = map(N1, N1, N1, N1);
    List<ResizeRecord> r = propose(AUTO, map, stats(map, new long[4], new int[] {0, 1_500, 1_500, 0}, 5, Map.of(1, "bm", 2, "cm")),
        Set.of(), new ArrayList<>());
    assertThat(r).hasSize(2).allSatisfy(x -> assertThat(x.getUpperTo()).isEqualTo("n2"));
    assertThat(r).extracting(ResizeRecord::getToRequestsPerSecond).containsExactlyInAnyOrder(0L, 750L);
    assertThat(r.get(0).getKeyRequestsPerSecond()).isEqualTo(750);
    assertThat(r.get(0).getWhy()).contains("then the upper half (about 750 requests/s) moves from n1 (about 3,000 -> 2,250) to n2 (0 -> 750)");
    // n2 as busy as n1 already: the half would only move the peak, so both halves stay.
    ShardMap even = map(N1, N1, N2, N2);
    r = propose(AUTO, even, stats(even, new long[4], new int[] {0, 1_500, 1_400, 0}, 5, Map.of(1, "bm")), Set.of(), new ArrayList<>());
    assertThat(r).singleElement().satisfies(x -> {
      assertThat(x.getUpperTo()).isEmpty();
      assertThat(x.getWhy()).contains("both halves stay on n1");
    });
  }

  @Test
  void aHotShardWithoutALoadPointIsNotSplitAndSaysWhy() {
    ShardMap map = map(N1, N1, N1, N1);
    List<String> refusals = new ArrayList<>();
    assertThat(propose(AUTO, map, stats(map, new long[4], new int[] {0, 5_000, 0, 0}, 5, Map.of()), Set.of(), refusals)).isEmpty();
    assertThat(refusals).singleElement().asString().contains("t/1").contains("90%");
  }

  @Test
  void aHotShardWhoseLoadIsOneKeyIsolatesTheKeyOnTheLeastLoadedNodeOnce() {
    ShardMap map = map(N1, N1, N1, N1);
    List<NodeStatsResponse> stats = withHotKey(stats(map, new long[4], new int[] {0, 5_000, 0, 0}, 5, Map.of()), 1, "bob", 0.9);
    List<ResizeRecord> r = propose(AUTO, map, stats, Set.of(), new ArrayList<>());
    assertThat(r).singleElement().satisfies(x -> {
      assertThat(x.getKind()).isEqualTo(ResizeRecord.Kind.ISOLATE);
      assertThat(x.getHotKey().toStringUtf8()).isEqualTo("bob");
      assertThat(x.getIsolateTo()).isEqualTo("n2");
      assertThat(x.getWhy()).startsWith("load: at least 5,000 requests/s").contains("key 'bob' takes at least 90%");
    });
    // A key under half of the shard's requests is not isolated: the shard has no load point, and says why.
    List<String> refusals = new ArrayList<>();
    assertThat(propose(AUTO, map, withHotKey(stats(map, new long[4], new int[] {0, 5_000, 0, 0}, 5, Map.of()), 1, "bob", 0.4), Set.of(),
        refusals)).isEmpty();
    assertThat(refusals).singleElement().asString().contains("90%");
    // Once the key is alone in a shard on the least-loaded node that helps, nothing more is proposed.
    Table t = map.table("t").orElseThrow();
    ShardMap cut = map.apply(ShardMapDelta.on(map).splitShard(ShardMapDelta.SplitShard.atKey(t.shards().get(1).id(), b("bob"))).build());
    Table t2 = cut.table("t").orElseThrow();
    cut = cut.apply(ShardMapDelta.on(cut).splitShard(ShardMapDelta.SplitShard.atKey(t2.shardFor(b("bob")).id(), b("bob\0"))).build());
    ShardMap isolated = cut;
    int position = isolated.table("t").orElseThrow().positionOf(isolated.table("t").orElseThrow().shardFor(b("bob")).id());
    int[] rps = new int[6];
    rps[position] = 5_000;
    refusals.clear();
    assertThat(Resizer.propose(AUTO, isolated, withHotKey(stats6(isolated, rps), position, "bob", 0.99), Map.of(N1, LIVE.get(N1)),
        id -> Set.of(), Set.of(), Set.of(), (shard, why) -> refusals.add(why))).isEmpty();
    assertThat(refusals).singleElement().asString().contains("to itself already");
  }

  /** Stats of every shard of any map of "t" (no bytes), {@code rps[i]} in each of 5 s. */
  private static List<NodeStatsResponse> stats6(ShardMap map, int[] rps) {
    return stats(map, new long[rps.length], rps, 5, Map.of());
  }

  /** {@code stats} with {@code key} taking {@code share} of the sampled requests of the shard at {@code position}. */
  private static List<NodeStatsResponse> withHotKey(List<NodeStatsResponse> stats, int position, String key, double share) {
    List<NodeStatsResponse> out = new ArrayList<>();
    int seen = 0;
    for (NodeStatsResponse n : stats) {
      NodeStatsResponse.Builder nb = n.toBuilder();
      for (int i = 0; i < nb.getShardsCount(); i++, seen++) {
        if (seen == position) {
          nb.getShardsBuilder(i).setHotSampled(1_000).addHotKeys(io.shardwise.proto.v1.HotKey.newBuilder()
              .setKey(ByteString.copyFromUtf8(key)).setCount((long) (1_000 * share)).setWrites((long) (1_000 * share)));
        }
      }
      out.add(nb.build());
    }
    return out;
  }

  @Test
  void neighboursMergeOnlyWhenBothAreTheBalancersSmallAndQuiet() {
    ShardMap map = map(N1, N1, N2, N2);
    Set<Long> all = Set.of(0L, 1L, 2L, 3L);
    long[] small = {1_000, 1_000, 1_000, 1_000};
    int[] quiet = {10, 10, 10, 10};
    assertThat(merges(propose(AUTO, map, stats(map, small, quiet, 10, Map.of()), all, new ArrayList<>())))
        .containsExactly("0+1", "2+3"); // each shard in one merge at most
    // Shards the table was created with (or an operator split) are not the balancer's: they stay.
    assertThat(merges(propose(AUTO, map, stats(map, small, quiet, 10, Map.of()), Set.of(0L, 2L, 3L), new ArrayList<>())))
        .containsExactly("2+3");
    // Too big together: a quarter of the split size is the most (the hysteresis: a split's halves hold about half each).
    long[] halves = {(1 << 20) / 2, (1 << 20) / 2, 1_000, 1_000};
    assertThat(merges(propose(AUTO, map, stats(map, halves, quiet, 10, Map.of()), all, new ArrayList<>()))).containsExactly("2+3");
    // Busy together in the window: a quarter of the split rate is the most.
    int[] busy = {300, 10, 10, 10};
    assertThat(merges(propose(AUTO, map, stats(map, small, busy, 10, Map.of()), all, new ArrayList<>()))).containsExactly("1+2"); // 0 and 1 are busy together; 1 and 2 are not
    // Not watched for the whole merge window yet (just split, merged or moved): not yet.
    assertThat(propose(AUTO, map, stats(map, small, quiet, 9, Map.of()), all, new ArrayList<>())).isEmpty();
  }

  @Test
  void neighboursOnTwoNodesMergeAfterTheSmallerMovesToTheOthersNodeNeverOntoADrainingOne() {
    ShardMap map = map(N1, N2, N2, N2);
    Set<Long> all = Set.of(0L, 1L, 2L, 3L);
    long[] sizes = {3_000, 1_000, 600_000, 600_000}; // 2+3 together are past a quarter of 1 MiB
    int[] quiet = {10, 10, 10, 10};
    ResizeRecord merge = Resizer.propose(AUTO, map, stats(map, sizes, quiet, 10, Map.of()), LIVE, id -> all, Set.of(), Set.of(), (a, b) -> {})
        .get(0);
    assertThat(merges(List.of(merge))).containsExactly("0+1");
    assertThat(merge.getMovesFirst()).isTrue();
    assertThat(merge.getMovingNumber()).as("the smaller moves").isEqualTo(1);
    assertThat(merge.getMovingFrom()).isEqualTo("n2");
    assertThat(merge.getOwner()).as("where the merged shard will be").isEqualTo("n1");
    assertThat(merge.getWhy()).endsWith("; shard 1 moves from n2 to n1 first (about 1,000 B)");

    // The larger one's node is draining: the larger one moves instead.
    ResizeRecord away = Resizer.propose(AUTO, map, stats(map, sizes, quiet, 10, Map.of()), LIVE, id -> all, Set.of(), Set.of(N1), (a, b) -> {})
        .get(0);
    assertThat(away.getMovingNumber()).isEqualTo(0);
    assertThat(away.getMovingFrom()).isEqualTo("n1");
    assertThat(away.getOwner()).isEqualTo("n2");
    // Both nodes draining: no merge across them.
    assertThat(Resizer.propose(AUTO, map, stats(map, sizes, quiet, 10, Map.of()), LIVE, id -> all, Set.of(), Set.of(N1, N2), (a, b) -> {}))
        .isEmpty();
    // On one node nothing moves.
    ShardMap one = map(N1, N1, N2, N2);
    assertThat(Resizer.propose(AUTO, one, stats(one, sizes, quiet, 10, Map.of()), LIVE, id -> all, Set.of(), Set.of(), (a, b) -> {}).get(0)
        .getMovesFirst()).isFalse();
  }

  @Test
  void manualTablesAndPoliciesTurnedOffProposeNothing() {
    ShardMap map = map(N1, N1, N1, N1);
    List<NodeStatsResponse> hot = stats(map, new long[] {5 << 20, 5 << 20, 0, 0}, new int[] {5_000, 5_000, 0, 0}, 10,
        Map.of(0, "a", 1, "bb"));
    assertThat(propose(AUTO.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build(), map, hot, Set.of(), new ArrayList<>())).isEmpty();
    assertThat(propose(AUTO.toBuilder().putTableModes("t", BalancerSettings.Mode.MANUAL).build(), map, hot, Set.of(), new ArrayList<>()))
        .isEmpty();
    assertThat(propose(AUTO.toBuilder().setSplitBytes(-1).setSplitRps(-1).build(), map, hot, Set.of(0L, 1L, 2L, 3L), new ArrayList<>()))
        .as("no split policy: no merge either").isEmpty();
    assertThat(propose(AUTO.toBuilder().setSplitBytes(-1).build(), map, hot, Set.of(), new ArrayList<>()))
        .as("by load only").hasSize(2).extracting(ResizeRecord::getBySize).containsOnly(false);
    assertThat(propose(AUTO.toBuilder().setMergeFraction(-1).build(), map,
        stats(map, new long[] {10, 10, 10, 10}, new int[4], 10, Map.of()), Set.of(0L, 1L, 2L, 3L), new ArrayList<>()))
        .as("merge off").isEmpty();
  }

  @Test
  void aPlanHoldsAtMostItsLimitOfResizes() {
    ShardMap map = map(N1, N1, N1, N1);
    for (int i = 0; i < 12; i++) {
      Table t = map.table("t").orElseThrow();
      var last = t.shards().get(t.shards().size() - 1);
      map = map.apply(ShardMapDelta.on(map).splitShard(ShardMapDelta.SplitShard.atKey(last.id(), b(String.format("e%02d", i)))).build());
    }
    int n = map.table("t").orElseThrow().shards().size();
    long[] big = new long[n];
    java.util.Arrays.fill(big, 3 << 20);
    assertThat(propose(AUTO, map, stats(map, big, new int[n], 10, Map.of()), Set.of(), new ArrayList<>()))
        .hasSize(Resizer.MAX_RESIZES_PER_PLAN);
  }

  /**
   * A replicated table's shards split by size like any other (the split quiesces them at their
   * leader), and neighbours on the same replicas and leader merge in place.
   */
  @Test
  void replicatedShardsSplitBySizeAndMergeInPlaceOnTheSameReplicas() {
    NodeId n3 = NodeId.of("n3");
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.RANGE).hash(HashFunctions.murmur3_128())
        .splitPoints(List.of(b("b"), b("c"), b("d"))).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 4, 1, KeySample.empty());
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), List.of(N1, N1, N1, N2),
        List.of(List.of(N2, n3), List.of(n3, N2), List.of(N2, n3), List.of(N1, n3)), io.shardwise.core.map.Replication.of(3)).build());
    Set<Long> all = Set.of(0L, 1L, 2L, 3L);
    int[] quiet = {10, 10, 10, 10};

    long[] bigFirst = {2 << 20, 1_000, 1_000, 1_000};
    List<ResizeRecord> r = propose(AUTO, map, stats(map, bigFirst, quiet, 10, Map.of()), all, new ArrayList<>());
    assertThat(r.stream().filter(x -> x.getKind() == ResizeRecord.Kind.SPLIT).map(ResizeRecord::getNumber)).containsExactly(0L);
    // 1+2 have the same leader and followers (in another order): merged where they are.
    assertThat(merges(r)).containsExactly("1+2");
    assertThat(r).noneMatch(ResizeRecord::getMovesFirst);
  }

  /**
   * Replicated neighbours on other replicas or under other leaders merge once the smaller has been
   * given the other's replicas and leader; never onto a draining node's replica, and not while the
   * two have different replica counts (a change of the factor under way).
   */
  @Test
  void replicatedNeighboursApartMergeAfterTheSmallerTakesTheOthersReplicas() {
    NodeId n3 = NodeId.of("n3");
    NodeId n4 = NodeId.of("n4");
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.RANGE).hash(HashFunctions.murmur3_128()).splitPoints(List.of(b("m"))).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 2, 1, KeySample.empty());
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), List.of(N1, N2),
        List.of(List.of(N2, n3), List.of(n3, n4)), io.shardwise.core.map.Replication.of(3)).build());
    Set<Long> both = Set.of(0L, 1L);
    int[] quiet = {10, 10, 0, 0};

    List<ResizeRecord> r = propose(AUTO, map, stats(map, new long[] {1_000, 3_000, 0, 0}, quiet, 10, Map.of()), both, new ArrayList<>());
    assertThat(merges(r)).containsExactly("0+1");
    ResizeRecord merge = r.get(0);
    assertThat(merge.getMovesFirst()).isTrue();
    assertThat(merge.getMovingNumber()).isEqualTo(map.table("t").orElseThrow().shards().get(0).id().number()); // the smaller
    assertThat(merge.getOwner()).isEqualTo("n2");
    assertThat(merge.getWhy()).contains("replicas move from [n1, n2, n3] to [n2, n3, n4] first, led from n2");

    // The larger has a replica on a draining node: the larger moves instead; both have one: no merge.
    List<ResizeRecord> draining = Resizer.propose(AUTO, map, stats(map, new long[] {1_000, 3_000, 0, 0}, quiet, 10, Map.of()), LIVE,
        id -> both, Set.of(), Set.of(n4), (shard, why) -> { });
    assertThat(draining).singleElement().satisfies(m -> assertThat(m.getOwner()).isEqualTo("n1"));
    assertThat(Resizer.propose(AUTO, map, stats(map, new long[] {1_000, 3_000, 0, 0}, quiet, 10, Map.of()), LIVE, id -> both, Set.of(),
        Set.of(n3), (shard, why) -> { })).isEmpty();
  }

  /** Neighbours on the same replicas under two leaders are brought together by moving a lead alone, and the reason says so. */
  @Test
  void replicatedNeighboursUnderTwoLeadersOnTheSameReplicasMoveALeadNotData() {
    NodeId n3 = NodeId.of("n3");
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.RANGE).hash(HashFunctions.murmur3_128()).splitPoints(List.of(b("m"))).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 2, 1, KeySample.empty());
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), List.of(N1, N2),
        List.of(List.of(N2, n3), List.of(N1, n3)), io.shardwise.core.map.Replication.of(3)).build());
    io.shardwise.core.map.Table t = map.table("t").orElseThrow();
    Resizer.Merge merge = Resizer.Merge.of(t, t.shards().get(0), t.shards().get(1), 1_000, 3_000, Set.of());
    assertThat(merge.record().getMovesFirst()).isTrue();
    assertThat(merge.record().getMovingNumber()).isEqualTo(t.shards().get(0).id().number());
    assertThat(merge.record().getOwner()).isEqualTo("n2");
    assertThat(merge.movesFirst()).isEqualTo("; the lead of shard " + t.shards().get(0).id().number() + " moves from n1 to n2 first (no data"
        + " moves)");
    assertThat(Resizer.Merge.of(t, t.shards().get(0), t.shards().get(0), 1_000, 3_000, Set.of()).movesFirst()).as("together").isEmpty();
  }
}
