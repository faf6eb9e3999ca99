package io.shardwise.proto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.PartitioningSpec;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MapCodecTest {

  private static final List<NodeId> NODES = List.of(NodeId.of("n1"), NodeId.of("n2"), NodeId.of("n3"));

  /** Every strategy's table survives the round trip and routes every key to the same shard owner. */
  @Test
  void aMapSurvivesTheRoundTripForEveryStrategy() {
    ShardMap map = ShardMap.EMPTY;
    KeySample.Builder sample = KeySample.builder(1000, 1, HashFunctions.murmur3_128());
    for (int i = 0; i < 1000; i++) {
      sample.add(ByteStrings.utf8("user-" + i));
    }
    for (Strategy s : Strategy.values()) {
      PartitionerSpec spec = PartitionerSpec.builder(s).hash(HashFunctions.xxhash64()).vnodes(8).slots(64).tokensPerNode(4).seed(9).build();
      ShardLayout.Initial initial = ShardLayout.initial(spec, 6, NODES.size(), sample.build());
      List<NodeId> owners = new ArrayList<>();
      for (int o : initial.owners()) {
        owners.add(NODES.get(o));
      }
      map = map.apply(ShardMapDelta.on(map).createTable("t_" + s.id(), spec, initial.layout(), owners).build());
    }
    map = map.apply(ShardMapDelta.on(map).moveShard(map.table("t_mod").orElseThrow().shards().get(0).id(), NodeId.of("n1"), NodeId.of("n3")).build());

    ShardMap back = MapCodec.fromBytes(MapCodec.toProto(map).toByteArray());
    assertThat(back.epoch()).isEqualTo(map.epoch());
    assertThat(MapCodec.toProto(back)).isEqualTo(MapCodec.toProto(map));
    for (Table t : map.tables().values()) {
      Table u = back.table(t.name()).orElseThrow();
      assertThat(u.id()).isEqualTo(t.id());
      assertThat(u.shards()).isEqualTo(t.shards());
      for (int i = 0; i < 2000; i++) {
        byte[] key = ByteStrings.utf8("user-" + i);
        assertThat(u.shardFor(key)).isEqualTo(t.shardFor(key));
      }
    }
  }

  @Test
  void replicasInSyncSetsAndTheReplicationSettingSurviveTheRoundTripAndTheClientsCatchUp() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 3, KeySample.empty()).layout();
    NodeId n1 = NODES.get(0);
    NodeId n2 = NODES.get(1);
    NodeId n3 = NODES.get(2);
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("r", spec, layout, List.of(n1, n2, n3),
        List.of(List.of(n2, n3), List.of(n3, n1), List.of(n1, n2)), io.shardwise.core.map.Replication.of(3)).build());
    var s0 = map.table("r").orElseThrow().shards().get(0);
    ShardMap shrunk = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.ChangeInSync(s0.id(), n1, s0.epoch(), List.of(n3))).build());
    ShardMap set = shrunk.apply(ShardMapDelta.on(shrunk).add(new ShardMapDelta.SetReplication("r",
        new io.shardwise.core.map.Replication(3, 1))).build());

    ShardMap back = MapCodec.fromBytes(MapCodec.toProto(set).toByteArray());
    Table t = back.table("r").orElseThrow();
    assertThat(t.shards()).isEqualTo(set.table("r").orElseThrow().shards());
    assertThat(t.shards().get(0).followers()).containsExactly(n2, n3);
    assertThat(t.shards().get(0).inSync()).containsExactly(n3);
    assertThat(t.replication()).isEqualTo(new io.shardwise.core.map.Replication(3, 1));
    assertThat(t.changedAt()).isEqualTo(set.epoch());
    assertThat(MapCodec.replication(MapCodec.header(t))).as("the header alone carries it")
        .isEqualTo(new io.shardwise.core.map.Replication(3, 1));

    // A client at the first map catches up with the changed shards, and the setting with them.
    Table mine = map.table("r").orElseThrow();
    Table caughtUp = MapCodec.applyShardChanges(mine, MapCodec.shardChanges(set.table("r").orElseThrow(), map.epoch())).orElseThrow();
    assertThat(caughtUp.shards()).isEqualTo(t.shards());
    assertThat(caughtUp.replication()).isEqualTo(t.replication());
    assertThat(caughtUp.changedAt()).isEqualTo(t.changedAt());
  }

  @Test
  void aTableOfDocumentsStaysOneWhateverChangesAroundIt() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 3, 3, KeySample.empty()).layout();
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("docs", spec, layout, NODES.subList(0, 3),
        List.of(List.of(), List.of(), List.of()), io.shardwise.core.map.Replication.NONE, io.shardwise.core.doc.ValueFormat.JSON)
        .createTable("raw", spec, layout, NODES.subList(0, 3)).build());
    ShardMap changed = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.SetReplication("docs", io.shardwise.core.map.Replication.of(2)))
        .build());
    ShardMap back = MapCodec.fromBytes(MapCodec.toProto(changed).toByteArray());
    assertThat(back.table("docs").orElseThrow().format()).isEqualTo(io.shardwise.core.doc.ValueFormat.JSON);
    assertThat(back.table("raw").orElseThrow().format()).isEqualTo(io.shardwise.core.doc.ValueFormat.BYTES);
    assertThat(MapCodec.format(MapCodec.header(changed.table("docs").orElseThrow()))).as("the header alone carries it")
        .isEqualTo(io.shardwise.core.doc.ValueFormat.JSON);
    assertThat(MapCodec.header(changed.table("raw").orElseThrow()).getValueFormat()).as("bytes are written as before: nothing").isEmpty();
    Table caughtUp = MapCodec.applyShardChanges(map.table("docs").orElseThrow(),
        MapCodec.shardChanges(changed.table("docs").orElseThrow(), map.epoch())).orElseThrow();
    assertThat(caughtUp.format()).isEqualTo(io.shardwise.core.doc.ValueFormat.JSON);
  }

  @Test
  void specsDefaultWhatIsUnsetAndRejectWhatMakesNoSense() {
    PartitionerSpec spec = MapCodec.fromProto(PartitioningSpec.newBuilder().setStrategy("ring").build());
    assertThat(spec.hash().name()).isEqualTo("murmur3-128");
    assertThat(spec.vnodes()).isEqualTo(PartitionerSpec.DEFAULT_VNODES);
    assertThatThrownBy(() -> MapCodec.fromProto(PartitioningSpec.getDefaultInstance())).hasMessageContaining("needs a strategy");
    assertThatThrownBy(() -> MapCodec.fromProto(PartitioningSpec.newBuilder().setStrategy("ring").setHash("sha1").build()))
        .hasMessageContaining("unknown hash 'sha1'");
    assertThatThrownBy(() -> MapCodec.fromBytes(new byte[] {1, 2, 3})).hasMessageContaining("not a ShardMapProto");
  }
}
