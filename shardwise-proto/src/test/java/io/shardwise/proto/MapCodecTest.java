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
