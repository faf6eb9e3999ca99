package io.shardwise.proto;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.ShardAssignmentProto;
import io.shardwise.proto.v1.ShardMapProto;
import io.shardwise.proto.v1.TableMapProto;
import java.util.ArrayList;
import java.util.List;

/**
 * The shard map and partitioning specs between the core's types and their protobuf form, the form
 * stored in ZooKeeper and sent to clients. Protobuf stays at this edge: everything else works on
 * the core's types. Stateless.
 */
public final class MapCodec {

  private MapCodec() {}

  public static ShardMapProto toProto(ShardMap map) {
    ShardMapProto.Builder out = ShardMapProto.newBuilder().setEpoch(map.epoch());
    for (Table t : map.tables().values()) {
      TableMapProto.Builder table =
          TableMapProto.newBuilder()
              .setName(t.name())
              .setId(t.id())
              .setSpec(toProto(t.spec()))
              .setShardCount(t.layout().shardCount());
      t.layout().splitPoints().forEach(p -> table.addLayoutSplitPoints(ByteString.copyFrom(p)));
      for (long v : t.layout().hashValues()) {
        table.addLayoutHashValues(v);
      }
      for (ShardAssignment s : t.shards()) {
        table.addShards(
            ShardAssignmentProto.newBuilder().setNumber(s.id().number()).setOwner(s.owner().value()).setEpoch(s.epoch()));
      }
      out.addTables(table);
    }
    return out.build();
  }

  /**
   * Rebuilds and validates a stored map.
   *
   * @throws IllegalArgumentException if the stored map is not a valid map
   */
  public static ShardMap fromProto(ShardMapProto proto) {
    List<Table> tables = new ArrayList<>();
    for (TableMapProto t : proto.getTablesList()) {
      PartitionerSpec spec = fromProto(t.getSpec());
      List<byte[]> splits = new ArrayList<>();
      t.getLayoutSplitPointsList().forEach(b -> splits.add(b.toByteArray()));
      long[] values = t.getLayoutHashValuesList().stream().mapToLong(Long::longValue).toArray();
      ShardLayout layout = ShardLayout.of(spec.strategy(), spec.hash(), t.getShardCount(), splits, values);
      List<ShardAssignment> shards = new ArrayList<>();
      for (ShardAssignmentProto s : t.getShardsList()) {
        shards.add(new ShardAssignment(new ShardId(t.getName(), s.getNumber()), NodeId.of(s.getOwner()), s.getEpoch()));
      }
      tables.add(ShardMap.table(t.getName(), t.getId(), spec, layout, shards));
    }
    return ShardMap.restore(proto.getEpoch(), tables);
  }

  public static ShardMap fromBytes(byte[] bytes) {
    try {
      return fromProto(ShardMapProto.parseFrom(bytes));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("stored shard map is not a ShardMapProto: " + e.getMessage(), e);
    }
  }

  public static PartitioningSpec toProto(PartitionerSpec spec) {
    PartitioningSpec.Builder out =
        PartitioningSpec.newBuilder()
            .setStrategy(spec.strategy().id())
            .setHash(spec.hash().name())
            .setVnodes(spec.vnodes())
            .setVnodeTemplate(spec.vnodeTemplate())
            .setSlots(spec.slots())
            .setTokens(spec.tokensPerNode())
            .setSeed(spec.seed());
    spec.splitPoints().forEach(p -> out.addSplitPoints(ByteString.copyFrom(p)));
    return out.build();
  }

  /**
   * A spec from its protobuf form; unset fields take the defaults.
   *
   * @throws IllegalArgumentException naming a field that makes no sense (unknown strategy or hash,
   *     a count below 1, unsorted split points)
   */
  public static PartitionerSpec fromProto(PartitioningSpec proto) {
    if (proto.getStrategy().isEmpty()) {
      throw new IllegalArgumentException("a table needs a strategy; valid strategies: " + Strategy.validIds());
    }
    PartitionerSpec.Builder b = PartitionerSpec.builder(Strategy.byId(proto.getStrategy()));
    if (!proto.getHash().isEmpty()) {
      b.hash(HashFunctions.byName(proto.getHash()));
    }
    if (proto.getVnodes() != 0) {
      b.vnodes(proto.getVnodes());
    }
    if (!proto.getVnodeTemplate().isEmpty()) {
      b.vnodeTemplate(proto.getVnodeTemplate());
    }
    if (proto.getSlots() != 0) {
      b.slots(proto.getSlots());
    }
    if (proto.getTokens() != 0) {
      b.tokensPerNode(proto.getTokens());
    }
    b.seed(proto.getSeed());
    if (proto.getSplitPointsCount() > 0) {
      List<byte[]> points = new ArrayList<>();
      proto.getSplitPointsList().forEach(p -> points.add(p.toByteArray()));
      b.splitPoints(points);
    }
    return b.build();
  }
}
