package io.shardwise.server.balance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.SplitShardRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Where a hot key's shard is cut and where it goes, on given maps and stats. */
class IsolationTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final NodeId N3 = NodeId.of("n3");

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A range table "t" split at b, c, d, owners as given. */
  private static ShardMap range(NodeId... owners) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.RANGE).hash(HashFunctions.murmur3_128())
        .splitPoints(List.of(b("b"), b("c"), b("d"))).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 4, 1, KeySample.empty());
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), List.of(owners)).build());
  }

  /** A hashrange table "t" of {@code shards} shards, all on n1. */
  private static ShardMap hashrange(int shards) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).hash(HashFunctions.murmur3_128()).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, shards, 1, KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int i = 0; i < shards; i++) {
      owners.add(N1);
    }
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(), owners).build());
  }

  private static ShardMap cutAll(ShardMap map, byte[] key) {
    for (SplitShardRequest cut : Isolation.cuts(map.table("t").orElseThrow(), key)) {
      Table t = map.table("t").orElseThrow();
      ShardAssignment s = t.shardFor(key);
      ShardMapDelta.SplitShard split = cut.getHasAtHash() ? ShardMapDelta.SplitShard.atHash(s.id(), cut.getAtHash())
          : ShardMapDelta.SplitShard.atKey(s.id(), cut.getAtPartitionKey().toByteArray());
      map = map.apply(ShardMapDelta.on(map).splitShard(split).build());
    }
    return map;
  }

  @Test
  void aRangeKeyIsCutAtItselfAndAtTheFirstKeyAfterItOnlyWhereItIsNotAtAnEdgeAlready() {
    ShardMap map = range(N1, N1, N1, N1);
    Table t = map.table("t").orElseThrow();
    // Inside [b, c): both cuts.
    assertThat(Isolation.cuts(t, b("bob"))).extracting(c -> c.getAtPartitionKey().toStringUtf8())
        .containsExactly("bob", "bob\0");
    // At the shard's start: only after it.
    assertThat(Isolation.cuts(t, b("b"))).extracting(c -> c.getAtPartitionKey().toStringUtf8()).containsExactly("b\0");
    // In the last shard, which has no end: both.
    assertThat(Isolation.cuts(t, b("zed"))).hasSize(2);
    ShardMap after = cutAll(map, b("bob"));
    Table cut = after.table("t").orElseThrow();
    assertThat(cut.shards()).hasSize(6);
    ShardAssignment alone = cut.shardFor(b("bob"));
    assertThat(alone).isNotEqualTo(cut.shardFor(b("bo"))).isNotEqualTo(cut.shardFor(b("bob\0"))).isNotEqualTo(cut.shardFor(b("boc")));
    assertThat(Isolation.isolated(cut, b("bob"))).isTrue();
    assertThat(Isolation.isolated(cut, b("boc"))).isFalse();
  }

  @Test
  void aHashRangeKeyGetsAShardOfItsHashAlone() {
    ShardMap map = cutAll(hashrange(4), b("celebrity"));
    Table t = map.table("t").orElseThrow();
    int position = t.positionOf(t.shardFor(b("celebrity")).id());
    long hash = t.layout().hashFunction().hash(b("celebrity"));
    assertThat(t.layout().hashRangeFirst(position)).isEqualTo(hash);
    assertThat(t.layout().hashRangeLast(position)).isEqualTo(hash);
    assertThat(t.shards()).hasSize(6);
    assertThat(Isolation.isolated(t, b("celebrity"))).isTrue();
  }

  @Test
  void tablesThatDoNotSplitCannotIsolateAKey() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).hash(HashFunctions.murmur3_128()).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 4, 1, KeySample.empty());
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, initial.layout(),
        List.of(N1, N1, N1, N1)).build());
    assertThatThrownBy(() -> Isolation.cuts(map.table("t").orElseThrow(), b("k"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("only range, hashrange");
  }

  private static NodeInfo node(NodeId id, String... labels) {
    NodeInfo.Builder n = NodeInfo.newBuilder().setId(id.value());
    for (int i = 0; i + 1 < labels.length; i += 2) {
      n.putLabels(labels[i], labels[i + 1]);
    }
    return n.build();
  }

  /**
   * Stats of range table "t": every shard at {@code rps[i]} requests/s for 10 s, and shard 1 ([b, c))
   * with key "bob" taking {@code share} of its sampled requests.
   */
  private static List<NodeStatsResponse> stats(ShardMap map, int[] rps, double share) {
    Table t = map.table("t").orElseThrow();
    Map<String, NodeStatsResponse.Builder> nodes = new LinkedHashMap<>();
    for (NodeId n : List.of(N1, N2, N3)) {
      nodes.put(n.value(), NodeStatsResponse.newBuilder().setNode(n.value()));
    }
    for (int i = 0; i < t.shards().size(); i++) {
      ShardAssignment s = t.shards().get(i);
      ShardInfo.Builder info = ShardInfo.newBuilder().setTable("t").setNumber(s.id().number()).setOwner(s.owner().value());
      for (int k = 0; k < 10; k++) {
        info.addReadsHistory(rps[i] / 2).addWritesHistory(rps[i] - rps[i] / 2);
      }
      if (i == 1) {
        info.setHotSampled(1_000).addHotKeys(HotKey.newBuilder().setKey(ByteString.copyFrom(b("bob"))).setCount((long) (1_000 * share) + 20)
            .setError(20).setWrites((long) (1_000 * share)));
      }
      nodes.get(s.owner().value()).addShards(info);
    }
    List<NodeStatsResponse> out = new ArrayList<>();
    nodes.values().forEach(n -> out.add(n.build()));
    return out;
  }

  /** The operator's isolation of "bob" with the given shard rates and key share. */
  private static ResizeRecord isolateBob(ShardMap map, Map<NodeId, NodeInfo> live, Set<NodeId> draining, int[] rps, double share) {
    return Isolation.plan(map, "t", b("bob"), live, draining, stats(map, rps, share), 10, Optional.empty(), "operator");
  }

  @Test
  void theKeysShardGoesToTheLeastLoadedNodeWithAForecastInRequestsPerSecond() {
    ShardMap map = range(N1, N1, N2, N3);
    Map<NodeId, NodeInfo> live = Map.of(N1, node(N1), N2, node(N2), N3, node(N3));
    // n1: 100 + 2,000 = 2,100/s, of which "bob" takes 80% of 2,000 = 1,600; n2: 300; n3: 400.
    ResizeRecord r = isolateBob(map, live, Set.of(), new int[] {100, 2_000, 300, 400}, 0.8);
    assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.ISOLATE);
    assertThat(r.getIsolateTo()).isEqualTo("n2");
    assertThat(r.getKeyRequestsPerSecond()).isEqualTo(1_600);
    assertThat(r.getFromRequestsPerSecond()).isEqualTo(2_100);
    assertThat(r.getToRequestsPerSecond()).isEqualTo(300);
    assertThat(r.getWhy()).contains("at least 80% of shard t/1's requests").contains("cut before and after it")
        .contains("from n1 (about 2,100 -> 500 requests/s) to n2 (300 -> 1,900)");
    // A draining node is never the destination; n3 is next (400 + 1,600 is still below 2,100).
    assertThat(isolateBob(map, live, Set.of(N2), new int[] {100, 2_000, 300, 400}, 0.8).getIsolateTo()).isEqualTo("n3");
  }

  @Test
  void theShardStaysWhenNoNodeWouldBeLessLoadedWithTheKeyAndNodesLabelledHotTakeItAnyway() {
    ShardMap map = range(N1, N1, N2, N3);
    Map<NodeId, NodeInfo> live = Map.of(N1, node(N1), N2, node(N2), N3, node(N3));
    // n1 serves 1,100/s, the key 500 of them; n2 and n3 serve 900 and 1,000: 900 + 500 is not below 1,100.
    ResizeRecord stays = isolateBob(map, live, Set.of(), new int[] {100, 1_000, 900, 1_000}, 0.5);
    assertThat(stays.getIsolateTo()).isEmpty();
    assertThat(stays.getWhy()).contains("its shard stays on n1");
    // n3 is labelled role=hot: the key's shard goes there, busy or not.
    Map<NodeId, NodeInfo> labelled = Map.of(N1, node(N1), N2, node(N2), N3, node(N3, "role", "hot"));
    assertThat(isolateBob(map, labelled, Set.of(), new int[] {100, 1_000, 900, 1_000}, 0.5).getIsolateTo()).isEqualTo("n3");
    // Alone in its shard already, and nowhere better to go: nothing to do, and it says so.
    ShardMap cut = cutAll(map, b("bob"));
    assertThatThrownBy(() -> Isolation.plan(cut, "t", b("bob"), live, Set.of(), List.of(), 10, Optional.empty(), "operator"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("to itself already");
  }

  @Test
  void anOperatorsTargetMustBeLiveAndNotDraining() {
    ShardMap map = range(N1, N1, N2, N3);
    Map<NodeId, NodeInfo> live = Map.of(N1, node(N1), N2, node(N2));
    List<NodeStatsResponse> stats = stats(map, new int[] {100, 2_000, 300, 400}, 0.8);
    assertThatThrownBy(() -> Isolation.plan(map, "t", b("bob"), live, Set.of(), stats, 10, Optional.of(N3), "operator"))
        .hasMessageContaining("n3 is not live");
    assertThatThrownBy(() -> Isolation.plan(map, "t", b("bob"), live, Set.of(N2), stats, 10, Optional.of(N2), "operator"))
        .hasMessageContaining("n2 is draining");
    assertThat(Isolation.plan(map, "t", b("bob"), live, Set.of(), stats, 10, Optional.of(N2), "operator").getIsolateTo()).isEqualTo("n2");
    assertThatThrownBy(() -> Isolation.plan(map, "nope", b("bob"), live, Set.of(), stats, 10, Optional.empty(), "operator"))
        .hasMessageContaining("no table 'nope'");
  }
}
