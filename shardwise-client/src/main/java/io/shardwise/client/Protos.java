package io.shardwise.client;

import com.google.protobuf.ByteString;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.Partition;
import io.shardwise.proto.v1.PartitionRange;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.ScanResponse;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/** Between the client's domain types and the wire: the only place that knows both. */
final class Protos {

  private Protos() {}

  static io.shardwise.proto.v1.Key key(Key key) {
    return io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(key.partitionKey()))
        .setSortKey(ByteString.copyFrom(key.sortKey())).build();
  }

  static Key key(io.shardwise.proto.v1.Key key) {
    return Key.of(key.getPartitionKey().toByteArray(), key.getSortKey().toByteArray());
  }

  static KeyValue row(io.shardwise.proto.v1.KeyValue row) {
    return new KeyValue(key(row.getKey()), row.getValue().toByteArray(), row.getVersion());
  }

  static PartitioningSpec spec(TableSpec spec) {
    PartitioningSpec.Builder b = PartitioningSpec.newBuilder().setStrategy(spec.strategy()).setSeed(spec.seed());
    spec.hash().ifPresent(b::setHash);
    spec.shards().ifPresent(b::setShards);
    spec.vnodes().ifPresent(b::setVnodes);
    spec.vnodeTemplate().ifPresent(b::setVnodeTemplate);
    spec.slots().ifPresent(b::setSlots);
    spec.tokens().ifPresent(b::setTokens);
    spec.splitPoints().forEach(p -> b.addSplitPoints(ByteString.copyFrom(p)));
    spec.sampleKeys().forEach(k -> b.addSampleKeys(ByteString.copyFrom(k)));
    return b.build();
  }

  /** On the wire 0 means "not set": the server fills in what it used. */
  /** A table's spec as it was created: its partitioning, and its values' format ({@code ""}: bytes). */
  static TableSpec spec(PartitioningSpec p, String valueFormat) {
    TableSpec.Builder b = TableSpec.builder(p.getStrategy()).seed(p.getSeed());
    if (!valueFormat.isEmpty()) {
      b.format(io.shardwise.core.doc.ValueFormat.parse(valueFormat));
    }
    if (!p.getHash().isEmpty()) {
      b.hash(p.getHash());
    }
    if (p.getShards() > 0) {
      b.shards(p.getShards());
    }
    if (p.getVnodes() > 0) {
      b.vnodes(p.getVnodes());
    }
    if (!p.getVnodeTemplate().isEmpty()) {
      b.vnodeTemplate(p.getVnodeTemplate());
    }
    if (p.getSlots() > 0) {
      b.slots(p.getSlots());
    }
    if (p.getTokens() > 0) {
      b.tokens(p.getTokens());
    }
    b.splitPoints(p.getSplitPointsList().stream().map(ByteString::toByteArray).toList());
    b.sampleKeys(p.getSampleKeysList().stream().map(ByteString::toByteArray).toList());
    return b.build();
  }

  static TableDescription table(TableInfo t) {
    boolean range = t.getSpec().getStrategy().equals("range");
    List<ShardDescription> shards = t.getShardsList().stream().map(s -> shard(t.getName(), range, s)).toList();
    return new TableDescription(t.getName(), t.getId(), spec(t.getSpec(), t.getValueFormat()), shards, t.getMapEpoch(), t.getRingMembersList(),
        Math.max(1, t.getReplicas()), Math.max(1, t.getMinInSync()), t.getIndexesList().stream()
            .map(i -> new TableDescription.Index(String.join(".", i.getPathList()), i.getScope(), i.getState())).toList());
  }

  private static ShardDescription shard(String table, boolean range, ShardInfo s) {
    Optional<byte[]> start = range ? Optional.of(s.getStart().toByteArray()) : Optional.empty();
    Optional<byte[]> end = range && s.getHasEnd() ? Optional.of(s.getEnd().toByteArray()) : Optional.empty();
    return new ShardDescription(s.getTable().isEmpty() ? table : s.getTable(), s.getNumber(), s.getPosition(), s.getOwner(), s.getEpoch(),
        start, end, s.getHashFirst(), s.getHashLast(), s.getKeys(), s.getBytes(), s.getReads(), s.getWrites(), s.getFollowersList(),
        s.getInSyncList(), s.getLeaderEpoch() == 0 ? s.getEpoch() : s.getLeaderEpoch());
  }

  static NodeStatus node(NodeInfo n) {
    OptionalLong keys = n.getSizesKnown() ? OptionalLong.of(n.getKeys()) : OptionalLong.empty();
    OptionalLong bytes = n.getSizesKnown() ? OptionalLong.of(n.getBytes()) : OptionalLong.empty();
    return new NodeStatus(n.getId(), n.getAddress(), n.getLabelsMap(), n.getUp(), n.getShards(), keys, bytes, n.getTrashEntries(),
        n.getTrashBytes());
  }

  static ScanRequest scan(Scan scan) {
    ScanRequest.Builder r = ScanRequest.newBuilder().setTable(scan.table()).setLimit(scan.limit())
        .setPageToken(ByteString.copyFrom(scan.pageToken()));
    switch (scan.scope()) {
      case PARTITION -> {
        Partition.Builder p = Partition.newBuilder().setPartitionKey(ByteString.copyFrom(scan.from()))
            .setSortFrom(ByteString.copyFrom(scan.sortFrom()));
        scan.sortTo().ifPresent(to -> p.setSortTo(ByteString.copyFrom(to)));
        r.setPartition(p);
      }
      case RANGE -> {
        PartitionRange.Builder p = PartitionRange.newBuilder().setFrom(ByteString.copyFrom(scan.from()));
        scan.to().ifPresent(to -> p.setTo(ByteString.copyFrom(to)).setHasTo(true));
        r.setPartitionRange(p);
      }
      case ALL -> r.setAll(true);
      default -> throw new AssertionError(scan.scope());
    }
    return r.build();
  }

  static ScanPage page(ScanResponse r) {
    Optional<byte[]> next = r.getNextPageToken().isEmpty() ? Optional.empty() : Optional.of(r.getNextPageToken().toByteArray());
    return new ScanPage(r.getRowsList().stream().map(Protos::row).toList(), r.getHeader().getShardsTouched(), next);
  }
}
