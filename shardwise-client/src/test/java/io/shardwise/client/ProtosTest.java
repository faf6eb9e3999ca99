package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import org.junit.jupiter.api.Test;

class ProtosTest {

  @Test
  void aNodeThatDidNotAnswerForItsSizesHasThemUnknownNotZero() {
    NodeStatus down = Protos.node(NodeInfo.newBuilder().setId("n2").setUp(false).setShards(4).build());
    assertThat(down.keys()).isEmpty();
    assertThat(down.bytes()).isEmpty();
    assertThat(down.shards()).isEqualTo(4);
    NodeStatus up = Protos.node(NodeInfo.newBuilder().setId("n1").setUp(true).setSizesKnown(true).setKeys(0).setBytes(10)
        .putLabels("zone", "a").build());
    assertThat(up.keys()).hasValue(0);
    assertThat(up.bytes()).hasValue(10);
    assertThat(up.labels()).containsEntry("zone", "a");
  }

  @Test
  void aRangeShardHasItsBoundsAndTheLastIsOpen() {
    TableInfo wire = TableInfo.newBuilder().setName("events").setId(3).setMapEpoch(9)
        .setSpec(PartitioningSpec.newBuilder().setStrategy("range").addSplitPoints(ByteString.copyFromUtf8("m")))
        .addShards(ShardInfo.newBuilder().setNumber(0).setOwner("n1").setEpoch(1).setEnd(ByteString.copyFromUtf8("m")).setHasEnd(true))
        .addShards(ShardInfo.newBuilder().setNumber(1).setPosition(1).setOwner("n2").setEpoch(4).setStart(ByteString.copyFromUtf8("m"))
            .setKeys(5).setBytes(50))
        .build();
    TableDescription t = Protos.table(wire);
    assertThat(t.name()).isEqualTo("events");
    assertThat(t.mapEpoch()).isEqualTo(9);
    assertThat(t.shards()).hasSize(2);
    ShardDescription first = t.shards().get(0);
    assertThat(first.table()).as("filled in from the table").isEqualTo("events");
    assertThat(first.start()).hasValueSatisfying(s -> assertThat(s).isEmpty());
    assertThat(first.end()).hasValueSatisfying(e -> assertThat(e).containsExactly('m'));
    ShardDescription last = t.shards().get(1);
    assertThat(last.end()).as("unbounded").isEmpty();
    assertThat(last.owner()).isEqualTo("n2");
    assertThat(last.epoch()).isEqualTo(4);
    assertThat(last.keys()).isEqualTo(5);
  }

  @Test
  void aHashShardHasNoKeyBounds() {
    TableInfo wire = TableInfo.newBuilder().setName("t").setSpec(PartitioningSpec.newBuilder().setStrategy("hashrange").setShards(2))
        .addShards(ShardInfo.newBuilder().setHashFirst(0).setHashLast(-1L)).build();
    ShardDescription s = Protos.table(wire).shards().get(0);
    assertThat(s.start()).isEmpty();
    assertThat(s.end()).isEmpty();
    assertThat(s.hashLast()).isEqualTo(-1L);
  }
}
