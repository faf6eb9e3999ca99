package io.shardwise.server.balance;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.SaltedKey;
import io.shardwise.proto.v1.ShardInfo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The load policy's choice between isolating and salting a hot key, and when a salted key is demoted, on given stats. */
class SaltPolicyTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final Map<NodeId, NodeInfo> LIVE = Map.of(N1, NodeInfo.newBuilder().setId("n1").build(), N2,
      NodeInfo.newBuilder().setId("n2").build());
  private static final BalancerSettings AUTO = BalancerSettings.newBuilder().setMode(BalancerSettings.Mode.AUTO)
      .setSplitBytes(-1).setSplitRps(1_000).setSplitRpsSeconds(5).setMergeSeconds(10).build();
  private static final byte[] LIKES = "likes".getBytes(StandardCharsets.UTF_8);

  /** A hashrange table "c" of four shards, two per node. */
  private static ShardMap map() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).hash(HashFunctions.murmur3_128()).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 4, 2, KeySample.empty());
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("c", spec, initial.layout(), List.of(N1, N1, N2, N2)).build());
  }

  /** Every shard at {@code rps} requests/s for 10 s; {@code hot} keys (key to hot-key entry) in the shards that hold them. */
  private static List<NodeStatsResponse> stats(ShardMap map, int rps, Map<byte[], HotKey> hot) {
    Table t = map.table("c").orElseThrow();
    NodeStatsResponse.Builder n1 = NodeStatsResponse.newBuilder().setNode("n1");
    NodeStatsResponse.Builder n2 = NodeStatsResponse.newBuilder().setNode("n2");
    for (ShardAssignment s : t.shards()) {
      ShardInfo.Builder info = ShardInfo.newBuilder().setTable("c").setNumber(s.id().number()).setOwner(s.owner().value())
          .setLoadSplitRefusal("one partition key carries about 90% of the shard's requests").setHotSampled(1_000);
      for (int k = 0; k < 10; k++) {
        info.addReadsHistory(rps / 10).addWritesHistory(rps - rps / 10);
      }
      for (var e : hot.entrySet()) {
        if (t.shardFor(e.getKey()).id().equals(s.id())) {
          info.addHotKeys(e.getValue());
        }
      }
      (s.owner().equals(N1) ? n1 : n2).addShards(info);
    }
    return List.of(n1.build(), n2.build());
  }

  private static HotKey hot(byte[] key, long count, long reads, long increments, long otherWrites) {
    return HotKey.newBuilder().setKey(ByteString.copyFrom(key)).setCount(count).setReads(reads).setWrites(increments + otherWrites)
        .setMerges(increments).build();
  }

  private static List<ResizeRecord> propose(ShardMap map, List<NodeStatsResponse> stats, List<SaltedKey> salted, long now,
      List<String> refusals) {
    return Resizer.propose(AUTO, map, stats, LIVE, salted, id -> Set.of(), Set.of(), Set.of(), (s, why) -> refusals.add(why), now);
  }

  @Test
  void aWriteHotCounterIsSaltedAndAWriteHotKeyOfPlainPutsOrAReadHotCounterIsIsolated() {
    ShardMap map = map();
    List<String> refusals = new ArrayList<>();
    // 90% of its shard's 4,000 requests/s, nearly all increments: salted, 3,600/s over sub-keys of at most 500/s each.
    List<ResizeRecord> salt = propose(map, stats(map, 4_000, Map.of(LIKES, hot(LIKES, 900, 20, 870, 10))), List.of(), 0, refusals);
    assertThat(salt).singleElement().satisfies(r -> {
      assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.SALT);
      assertThat(r.getHotKey().toByteArray()).isEqualTo(LIKES);
      assertThat(r.getSaltFanout()).isEqualTo(8);
      assertThat(r.getWhy()).contains("key 'likes' takes at least 90%").contains("salt it into 8 sub-keys");
    });
    // Plain puts (no increments): isolated instead.
    assertThat(propose(map, stats(map, 4_000, Map.of(LIKES, hot(LIKES, 900, 20, 0, 880))), List.of(), 0, refusals))
        .singleElement().extracting(ResizeRecord::getKind).isEqualTo(ResizeRecord.Kind.ISOLATE);
    // Read-hot (a counter read far more than it is written): isolated too, since salting would multiply its reads.
    assertThat(propose(map, stats(map, 4_000, Map.of(LIKES, hot(LIKES, 900, 800, 100, 0))), List.of(), 0, refusals))
        .singleElement().extracting(ResizeRecord::getKind).isEqualTo(ResizeRecord.Kind.ISOLATE);
    assertThat(saltFanout(100, 1_000, 2)).as("at least four sub-keys per node").isEqualTo(8);
    assertThat(saltFanout(100, 1_000, 5)).isEqualTo(20);
    assertThat(saltFanout(1_000_000, 1_000, 2)).as("at most 64").isEqualTo(64);
  }

  private static int saltFanout(double keyRate, long splitRps, int nodes) {
    return io.shardwise.server.hot.Salting.fanoutFor(keyRate, splitRps, nodes);
  }

  @Test
  void aSaltedCounterIsNotSaltedAgainAndIsDemotedOnlyOnceItsSubKeysHaveCooledForTheMergeWindow() {
    ShardMap map = map();
    SaltedKey salted = SaltedKey.newBuilder().setTable("c").setTableId(map.table("c").orElseThrow().id())
        .setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(LIKES))).setGeneration(3).setFanout(4)
        .setState(SaltedKey.State.SALTED).setSinceMillis(100_000).build();
    List<String> refusals = new ArrayList<>();
    // The key's shard still hot from clients that have not refreshed: not salted twice.
    assertThat(propose(map, stats(map, 4_000, Map.of(LIKES, hot(LIKES, 900, 20, 870, 10))), List.of(salted), 100_001, refusals)).isEmpty();
    assertThat(refusals).anySatisfy(r -> assertThat(r).contains("salted already"));
    // Sub-keys busy: 4 x 30% of 1,000/s = 1,200/s, above a quarter of the split rate: stays salted.
    Map<byte[], HotKey> busy = new java.util.HashMap<>();
    Map<byte[], HotKey> quiet = new java.util.HashMap<>();
    for (int i = 0; i < 4; i++) {
      byte[] sub = Counters.subKey(Key.of(LIKES), 3, i).partitionKey();
      busy.put(sub, hot(sub, 300, 0, 300, 0));
      quiet.put(sub, hot(sub, 10, 0, 10, 0));
    }
    assertThat(propose(map, stats(map, 1_000, busy), List.of(salted), 200_000, refusals)).isEmpty();
    // Sub-keys quiet (about 4 x 10 of 1,000 sampled at 100/s: 4/s), but salted only 5 s ago: not yet.
    assertThat(propose(map, stats(map, 100, quiet), List.of(salted), 105_000, refusals)).isEmpty();
    // Quiet past the merge window: demoted.
    assertThat(propose(map, stats(map, 100, quiet), List.of(salted), 200_000, refusals)).singleElement().satisfies(r -> {
      assertThat(r.getKind()).isEqualTo(ResizeRecord.Kind.UNSALT);
      assertThat(r.getWhy()).startsWith("cooled: salted counter 'likes' takes about 4 requests/s over its 4 sub-keys");
    });
    // Manual tables are left alone.
    BalancerSettings manual = AUTO.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build();
    assertThat(Resizer.propose(manual, map, stats(map, 100, quiet), LIVE, List.of(salted), id -> Set.of(), Set.of(), Set.of(), (s, w) -> {},
        200_000)).isEmpty();
  }
}
