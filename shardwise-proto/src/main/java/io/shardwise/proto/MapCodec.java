package io.shardwise.proto;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
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
import io.shardwise.proto.v1.TableShardChanges;
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
      out.addTables(toProto(t));
    }
    return out.build();
  }

  public static TableMapProto toProto(Table t) {
    TableMapProto.Builder table = header(t).toBuilder();
    t.layout().splitPoints().forEach(p -> table.addLayoutSplitPoints(ByteString.copyFrom(p)));
    boolean ring = !t.layout().ringMembers().isEmpty();
    for (long v : t.layout().hashValues()) {
      if (ring) {
        table.addLayoutRingStarts(v);
      } else {
        table.addLayoutHashValues(v);
      }
    }
    for (ShardAssignment s : t.shards()) {
      table.addShards(toProto(s));
    }
    return table.build();
  }

  /**
   * Rebuilds and validates one table.
   *
   * @throws IllegalArgumentException if it is not a valid table
   */
  public static Table fromProto(TableMapProto t) {
    return ShardMap.table(t.getName(), t.getId(), fromProto(t.getSpec()), layout(t, List.of(t)), shards(t.getName(), t.getShardsList()),
        t.getNextShardNumber(), replication(t), replicationChangedAt(t), format(t), indexes(t), indexesChangedAt(t));
  }

  /** A table's secondary indexes, as its header lists them. */
  public static List<io.shardwise.core.doc.IndexDef> indexes(TableMapProto header) {
    List<io.shardwise.core.doc.IndexDef> out = new ArrayList<>(header.getIndexesCount());
    for (io.shardwise.proto.v1.IndexProto i : header.getIndexesList()) {
      out.add(new io.shardwise.core.doc.IndexDef(i.getId(), i.getPathList(),
          io.shardwise.core.doc.IndexDef.Scope.valueOf(i.getScope().toUpperCase(java.util.Locale.ROOT)),
          io.shardwise.core.doc.IndexDef.State.valueOf(i.getState().toUpperCase(java.util.Locale.ROOT)), i.getAsync(),
          i.getCoveringList().stream().map(f -> List.of(f.split("\\.", -1))).toList()));
    }
    return out;
  }

  /** The map epoch at which a table's header says its indexes last changed. */
  public static long indexesChangedAt(TableMapProto header) {
    return header.getIndexesChangedAt() == 0 ? header.getId() : header.getIndexesChangedAt();
  }

  public static io.shardwise.proto.v1.IndexProto toProto(io.shardwise.core.doc.IndexDef i) {
    return io.shardwise.proto.v1.IndexProto.newBuilder().setId(i.id()).addAllPath(i.path()).setScope(i.scope().label())
        .setState(i.state().label()).setAsync(i.async()).addAllCovering(i.covering().stream().map(c -> String.join(".", c)).toList()).build();
  }

  /** What a table's values are, as its header says (any bytes when it says nothing). */
  public static io.shardwise.core.doc.ValueFormat format(TableMapProto header) {
    return header.getValueFormat().isEmpty() ? io.shardwise.core.doc.ValueFormat.BYTES
        : io.shardwise.core.doc.ValueFormat.parse(header.getValueFormat());
  }

  /** The replication a table's header stores (one replica when it stores none). */
  public static Replication replication(TableMapProto header) {
    return header.getReplicationFactor() == 0 ? Replication.NONE
        : new Replication(header.getReplicationFactor(), header.getMinInSync(), header.getVersionFloor(),
            header.getReplicatedSince());
  }

  /** The map epoch at which a table's header says its replication was set. */
  public static long replicationChangedAt(TableMapProto header) {
    return header.getReplicationChangedAt() == 0 ? header.getId() : header.getReplicationChangedAt();
  }

  /** The header's fields that change with the table's settings: its value format, its replication, its indexes. */
  private static TableMapProto.Builder withReplication(TableMapProto.Builder b, Table t) {
    if (t.format() != io.shardwise.core.doc.ValueFormat.BYTES) {
      b.setValueFormat(t.format().label());
    }
    if (t.indexesChangedAt() != t.id()) {
      t.indexes().forEach(i -> b.addIndexes(toProto(i)));
      b.setIndexesChangedAt(t.indexesChangedAt());
    }
    if (t.replication().replicated() || t.replicationChangedAt() != t.id()) {
      b.setReplicationFactor(t.replication().factor()).setMinInSync(t.replication().minInSync())
          .setReplicationChangedAt(t.replicationChangedAt()).setVersionFloor(t.replication().versionFloor())
          .setReplicatedSince(t.replication().since());
    }
    return b;
  }

  /**
   * Rebuilds and validates a stored map.
   *
   * @throws IllegalArgumentException if the stored map is not a valid map
   */
  public static ShardMap fromProto(ShardMapProto proto) {
    List<Table> tables = new ArrayList<>();
    for (TableMapProto t : proto.getTablesList()) {
      tables.add(fromProto(t));
    }
    return ShardMap.restore(proto.getEpoch(), tables);
  }

  // ------------------------------------------------------------------ a table in parts

  /** At most this many shards, split points or hash values in one part. */
  public static final int PART_ENTRIES = 1024;
  /** A part grows past this many bytes only by one entry (a split point is at most a key). */
  public static final int PART_BYTES = 256 * 1024;

  /**
   * The header of a table's map: name, id, spec, shard count and next shard number, without its
   * layout and shards. ZooKeeper keeps a table as this header, runs of its layout ({@link
   * #layoutParts}) and runs of its shards ({@link #shardPart}), each a {@code TableMapProto} of
   * bounded size, in position order ({@code MapRootProto}). The layout changes only when the shards
   * themselves do (a split, a merge, a new table); a move changes one shard part.
   */
  public static TableMapProto header(Table t) {
    return withReplication(TableMapProto.newBuilder().setName(t.name()).setId(t.id()).setSpec(toProto(t.spec()))
        .setShardCount(t.layout().shardCount()).setNextShardNumber(t.nextShardNumber()).addAllRingMembers(t.layout().ringMembers()), t)
        .build();
  }

  /** {@code t}'s split points or hash values in runs of at most {@link #PART_ENTRIES} (and about {@link #PART_BYTES}). */
  public static List<TableMapProto> layoutParts(Table t) {
    List<TableMapProto> layout = new ArrayList<>();
    TableMapProto.Builder part = TableMapProto.newBuilder();
    int entries = 0;
    int bytes = 0;
    for (byte[] p : t.layout().splitPoints()) {
      if (entries == PART_ENTRIES || (entries > 0 && bytes + p.length > PART_BYTES)) {
        layout.add(part.build());
        part = TableMapProto.newBuilder();
        entries = 0;
        bytes = 0;
      }
      part.addLayoutSplitPoints(ByteString.copyFrom(p));
      entries++;
      bytes += p.length + 4;
    }
    boolean ring = !t.layout().ringMembers().isEmpty();
    for (long v : t.layout().hashValues()) {
      if (entries == PART_ENTRIES) {
        layout.add(part.build());
        part = TableMapProto.newBuilder();
        entries = 0;
      }
      if (ring) {
        part.addLayoutRingStarts(v);
      } else {
        part.addLayoutHashValues(v);
      }
      entries++;
    }
    if (entries > 0) {
      layout.add(part.build());
    }
    return layout;
  }

  /** How many shard parts {@code t} has. */
  public static int shardParts(Table t) {
    return (t.shards().size() + PART_ENTRIES - 1) / PART_ENTRIES;
  }

  /** Shard part {@code part} of {@code t}: the shards at positions {@code part * PART_ENTRIES} on, at most {@code PART_ENTRIES}. */
  public static TableMapProto shardPart(Table t, int part) {
    List<ShardAssignment> all = t.shards();
    TableMapProto.Builder run = TableMapProto.newBuilder();
    for (ShardAssignment s : all.subList(part * PART_ENTRIES, Math.min(all.size(), (part + 1) * PART_ENTRIES))) {
      run.addShards(toProto(s));
    }
    return run.build();
  }

  /** The shards of {@code t} whose epoch is above {@code knownEpoch}: what changed since a map at that epoch. */
  public static TableShardChanges shardChanges(Table t, long knownEpoch) {
    TableMapProto.Builder changed = withReplication(TableMapProto.newBuilder().setName(t.name()).setId(t.id())
        .setShardCount(t.shards().size()), t);
    TableShardChanges.Builder out = TableShardChanges.newBuilder();
    List<ShardAssignment> shards = t.shards();
    for (int i = 0; i < shards.size(); i++) {
      if (shards.get(i).epoch() > knownEpoch) {
        out.addPositions(i);
        changed.addShards(toProto(shards.get(i)));
      }
    }
    return out.setTable(changed).build();
  }

  /**
   * {@code mine} with {@code changes} applied, or empty if they do not fit it: another table, another
   * shard count, or a position holding another shard id (the layout changed: splits and merges make
   * new shard ids).
   */
  public static java.util.Optional<Table> applyShardChanges(Table mine, TableShardChanges changes) {
    TableMapProto table = changes.getTable();
    if (mine.id() != table.getId() || mine.shards().size() != table.getShardCount() || changes.getPositionsCount() != table.getShardsCount()) {
      return java.util.Optional.empty();
    }
    List<ShardAssignment> shards = new ArrayList<>(mine.shards());
    List<ShardAssignment> changed = shards(mine.name(), table.getShardsList());
    for (int i = 0; i < changed.size(); i++) {
      int position = changes.getPositions(i);
      if (position >= shards.size() || !shards.get(position).id().equals(changed.get(i).id())) {
        return java.util.Optional.empty();
      }
      shards.set(position, changed.get(i));
    }
    return java.util.Optional.of(ShardMap.table(mine.name(), mine.id(), mine.spec(), mine.layout(), shards, mine.nextShardNumber(),
        replication(table), replicationChangedAt(table), mine.format(), indexes(table), indexesChangedAt(table)));
  }

  /** Shard assignments of table {@code tableName}. */
  public static List<ShardAssignment> shards(String tableName, List<ShardAssignmentProto> shards) {
    List<ShardAssignment> out = new ArrayList<>(shards.size());
    java.util.Map<String, NodeId> owners = new java.util.HashMap<>(); // a few nodes own many shards: check each id once
    for (ShardAssignmentProto s : shards) {
      NodeId owner = owners.computeIfAbsent(s.getOwner(), NodeId::of);
      long leaderEpoch = s.getLeaderEpoch() == 0 ? s.getEpoch() : s.getLeaderEpoch();
      if (s.getFollowersCount() == 0) {
        out.add(new ShardAssignment(new ShardId(tableName, s.getNumber()), owner, s.getEpoch(), leaderEpoch, List.of(), List.of()));
        continue;
      }
      List<NodeId> followers = new ArrayList<>(s.getFollowersCount());
      s.getFollowersList().forEach(f -> followers.add(owners.computeIfAbsent(f, NodeId::of)));
      List<NodeId> inSync = new ArrayList<>(s.getInSyncCount());
      s.getInSyncList().forEach(f -> inSync.add(owners.computeIfAbsent(f, NodeId::of)));
      out.add(new ShardAssignment(new ShardId(tableName, s.getNumber()), owner, s.getEpoch(), leaderEpoch, followers, inSync));
    }
    return out;
  }

  /**
   * The layout a header and its layout parts describe.
   *
   * @throws IllegalArgumentException if they do not describe a valid layout
   */
  public static ShardLayout layout(TableMapProto header, List<TableMapProto> layoutParts) {
    PartitionerSpec spec = fromProto(header.getSpec());
    List<byte[]> splits = new ArrayList<>();
    int values = 0;
    for (TableMapProto part : layoutParts) {
      part.getLayoutSplitPointsList().forEach(b -> splits.add(b.toByteArray()));
      values += part.getLayoutHashValuesCount();
    }
    long[] hashValues = new long[values];
    int at = 0;
    for (TableMapProto part : layoutParts) {
      for (int i = 0; i < part.getLayoutHashValuesCount(); i++) {
        hashValues[at++] = part.getLayoutHashValues(i);
      }
    }
    if (header.getRingMembersCount() > 0) {
      if (values > 0) {
        throw new IllegalArgumentException("table " + header.getName() + ": a ring of hash ranges has range starts, not ring points");
      }
      long[] starts = new long[layoutParts.stream().mapToInt(TableMapProto::getLayoutRingStartsCount).sum()];
      int n = 0;
      for (TableMapProto part : layoutParts) {
        for (int i = 0; i < part.getLayoutRingStartsCount(); i++) {
          starts[n++] = part.getLayoutRingStarts(i);
        }
      }
      if (starts.length != header.getShardCount()) {
        throw new IllegalArgumentException("table " + header.getName() + " has " + header.getShardCount() + " shards but " + starts.length
            + " ring ranges");
      }
      return ShardLayout.ringRanges(spec.strategy(), spec.hash(), starts, header.getRingMembersList());
    }
    return ShardLayout.of(spec.strategy(), spec.hash(), header.getShardCount(), splits, hashValues);
  }

  private static ShardAssignmentProto toProto(ShardAssignment s) {
    ShardAssignmentProto.Builder b = ShardAssignmentProto.newBuilder().setNumber(s.id().number()).setOwner(s.owner().value())
        .setEpoch(s.epoch());
    if (s.leaderEpoch() != s.epoch()) {
      b.setLeaderEpoch(s.leaderEpoch());
    }
    s.followers().forEach(f -> b.addFollowers(f.value()));
    s.inSync().forEach(f -> b.addInSync(f.value()));
    return b.build();
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
