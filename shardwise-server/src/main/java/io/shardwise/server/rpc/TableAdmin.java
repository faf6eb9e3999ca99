package io.shardwise.server.rpc;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.shardwise.core.key.KeyRange;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.map.Tables;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.Errors;
import io.shardwise.proto.MapCodec;
import io.shardwise.proto.v1.CreateTableRequest;
import io.shardwise.proto.v1.DropTableResponse;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ListTablesResponse;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import io.shardwise.proto.v1.UndropTableResponse;
import io.shardwise.server.coordination.Coordinator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Creating, describing and dropping tables: every change is one compare-and-set of the map in
 * ZooKeeper, and the answer waits until this process has applied the new map, so a caller that
 * writes right after creating a table finds it.
 */
public final class TableAdmin {

  /** The most shards one table may have. */
  public static final int MAX_SHARDS = 65_536;
  private static final Duration APPLY_WAIT = Duration.ofSeconds(10);

  private final ClusterContext ctx;

  public TableAdmin(ClusterContext ctx) {
    this.ctx = ctx;
  }

  TableInfo create(CreateTableRequest request) {
    String name = userTableName(request.getName());
    PartitionerSpec spec = MapCodec.fromProto(request.getSpec());
    io.shardwise.core.doc.ValueFormat format;
    try {
      format = request.getValueFormat().isEmpty() ? io.shardwise.core.doc.ValueFormat.BYTES
          : io.shardwise.core.doc.ValueFormat.parse(request.getValueFormat());
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
    }
    List<NodeId> live = new ArrayList<>(ctx.coordinator().liveNodesNow().keySet());
    if (live.isEmpty()) {
      throw Status.FAILED_PRECONDITION.withDescription("no live nodes to place table " + name + " on").asRuntimeException();
    }
    int shards = request.getSpec().getShards() > 0 ? request.getSpec().getShards() : live.size();
    KeySample sample = sample(spec, request);
    if (spec.needsSample() && shards > 1 && sample.size() == 0) {
      throw Errors.invalid("a range table of " + shards + " shards needs split points or sample keys to pre-split from"
          + " (--split-points or --sample-keys-file), or 1 shard");
    }
    Placed placed = place(name, spec, shards, replication(request, live.size()), sample);
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      if (map.table(name).isPresent()) {
        throw Status.ALREADY_EXISTS.withDescription("table " + name + " already exists").asRuntimeException();
      }
      return Optional.of(placed.create(ShardMapDelta.on(map), format).build());
    });
    ShardMap applied = ctx.map().await(stored.epoch(), APPLY_WAIT);
    Table table = (applied.epoch() >= stored.epoch() ? applied : stored).table(name).orElseThrow();
    return info(table, Math.max(applied.epoch(), stored.epoch()), Map.of());
  }

  /** A new table placed on the live nodes: its first layout, each shard's leader and followers. */
  public record Placed(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners, List<List<NodeId>> followers,
      Replication replication) {

    /** {@code delta} with this table's creation added. */
    public ShardMapDelta.Builder create(ShardMapDelta.Builder delta, io.shardwise.core.doc.ValueFormat format) {
      return delta.createTable(name, spec, layout, owners, followers, replication, format);
    }
  }

  /**
   * Places a new table of {@code shards} shards on the live nodes: leaders spread as the strategy
   * lays them out, each shard's followers on other nodes (other zones where nodes have {@code zone}
   * labels). Nothing is written.
   */
  public Placed place(String name, PartitionerSpec spec, int shards, Replication replication, KeySample sample) {
    List<NodeId> live = new ArrayList<>(ctx.coordinator().liveNodesNow().keySet());
    if (live.isEmpty()) {
      throw Status.FAILED_PRECONDITION.withDescription("no live nodes to place table " + name + " on").asRuntimeException();
    }
    if (shards > MAX_SHARDS) {
      throw Errors.invalid("a table may have at most " + MAX_SHARDS + " shards, not " + shards);
    }
    if (replication.factor() > live.size()) {
      throw Status.FAILED_PRECONDITION.withDescription("a table of " + replication.factor() + " replicas needs " + replication.factor()
          + " live nodes (each replica of a shard on its own node); " + live.size() + " are live").asRuntimeException();
    }
    ShardLayout.Initial initial = ShardLayout.initial(spec, shards, live.stream().map(NodeId::value).toList(), sample);
    List<NodeId> owners = new ArrayList<>();
    for (int owner : initial.owners()) {
      owners.add(live.get(owner));
    }
    List<List<NodeId>> followers = new ArrayList<>();
    Map<NodeId, String> zones = new java.util.HashMap<>();
    ctx.coordinator().liveNodesNow().forEach((n, info) -> {
      String zone = info.getLabelsMap().get("zone");
      if (zone != null) {
        zones.put(n, zone);
      }
    });
    io.shardwise.core.plan.ReplicaPlacement placement = new io.shardwise.core.plan.ReplicaPlacement(live, zones);
    owners.forEach(placement::count);
    for (NodeId owner : owners) {
      followers.add(placement.followers(owner, replication.factor() - 1));
    }
    return new Placed(name, spec, initial.layout(), owners, followers, replication);
  }

  /** {@code name} if a user may create or drop a table of that name; INVALID_ARGUMENT naming the rule if not. */
  static String userTableName(String name) {
    try {
      return Tables.checkUserName(name);
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
    }
  }

  /**
   * Replicas per shard when a table is created without {@code --replicas}, on a cluster of at least
   * as many live nodes (on fewer, one per live node): three, as CockroachDB and TiKV keep, so that
   * a table survives the loss of a node unless its creator asks for less. Min in-sync is then a
   * majority (2 of 3). A write at three replicas costs several times one on a small machine
   * (docs/benchmarks.md): {@code --replicas 1} is the choice for data that may be lost.
   */
  static final int DEFAULT_REPLICAS = 3;

  /** The table's replication as asked, checked against the live nodes (each replica of a shard on its own node). */
  private static Replication replication(CreateTableRequest request, int liveNodes) {
    int factor = request.getReplicas() == 0 ? Math.min(DEFAULT_REPLICAS, liveNodes) : request.getReplicas();
    if (factor < 1 || factor > Replication.MAX_FACTOR) {
      throw Errors.invalid("a table keeps 1 to " + Replication.MAX_FACTOR + " replicas of each shard, not " + factor);
    }
    if (factor > liveNodes) {
      throw Status.FAILED_PRECONDITION.withDescription("a table of " + factor + " replicas needs " + factor + " live nodes (each replica of a"
          + " shard on its own node); " + liveNodes + " are live").asRuntimeException();
    }
    int minInSync = request.getMinInSync() == 0 ? Replication.of(factor).minInSync() : request.getMinInSync();
    if (minInSync > factor) {
      throw Errors.invalid("min in-sync replicas must be 1 to the replication factor (" + factor + "), not " + minInSync);
    }
    return new Replication(factor, minInSync);
  }

  private static KeySample sample(PartitionerSpec spec, CreateTableRequest request) {
    if (spec.strategy() != Strategy.RANGE || request.getSpec().getSampleKeysCount() == 0) {
      return KeySample.empty();
    }
    KeySample.Builder b = KeySample.builder(request.getSpec().getSampleKeysCount(), spec.seed(), spec.hash());
    request.getSpec().getSampleKeysList().forEach(k -> b.add(k.toByteArray()));
    return b.build();
  }

  ListTablesResponse list() {
    ShardMap map = ctx.map().current();
    ListTablesResponse.Builder b = ListTablesResponse.newBuilder().setMapEpoch(map.epoch());
    map.tables().values().forEach(t -> b.addTables(info(t, map.epoch(), Map.of())));
    return b.build();
  }

  TableInfo describe(String name, boolean withStats) {
    ShardMap map = ctx.map().current();
    Table table = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
    return info(table, map.epoch(), withStats ? shardStats() : Map.of());
  }

  /**
   * Splits a shard of a range or hashrange table in two new shards with the same owner, at the
   * request's key or hash or, without one, by size ({@link ShardSplits}).
   */
  TableInfo split(io.shardwise.proto.v1.SplitShardRequest request) {
    return applied(request.getTable(), new ShardSplits(ctx.coordinator(), ctx.peers()).split(request, ctx.map().current()));
  }

  /**
   * Merges a shard of a range or hashrange table with the next one in order into a new shard: one
   * compare-and-set of the map. Both must have one owner (the keys are then already together);
   * shards of two owners are refused with what to move.
   */
  TableInfo merge(io.shardwise.proto.v1.MergeShardsRequest request) {
    ShardMap stored = new ShardSplits(ctx.coordinator(), ctx.peers()).merge(request.getTable(), request.getShard(), -1);
    return applied(request.getTable(), stored);
  }

  /**
   * Changes a replicated table's replicas per shard and min in-sync replicas: one compare-and-set
   * of the map. The shards' replicas change afterwards, a follower at a time, by the controller
   * ({@code ReplicaRepair}): new followers are built (a snapshot, then the log) and join the
   * in-sync set; with fewer replicas, followers not in sync go first. Raising min in-sync above the
   * in-sync replicas a shard has now refuses its writes until more catch up, as the table says.
   *
   * <p>A table of one replica begins to keep replicas here, online: the same compare-and-set makes
   * each shard's owner its leader at a new shard epoch (see {@code ShardMap}), which fences every
   * write still on the path without a log; the leaders start their logs over their data, and each
   * new follower is built from a snapshot. Min in-sync is 1 then unless named: raise it once
   * {@code table describe} shows the followers in sync. The way back, to one replica, is one
   * compare-and-set too: each leader keeps its shard alone, steps down from its log before its
   * writes take the direct path, and keeps the table's version floor in its data.
   */
  TableInfo setReplication(io.shardwise.proto.v1.SetReplicationRequest request) {
    String name = request.getTable();
    int live = ctx.coordinator().liveNodesNow().size();
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
      Replication now = t.replication();
      int factor = request.getReplicas() == 0 ? now.factor() : request.getReplicas();
      if (factor < 1 || factor > Replication.MAX_FACTOR) {
        throw Errors.invalid("a table keeps 1 to " + Replication.MAX_FACTOR + " replicas of each shard, not " + factor);
      }
      if (factor > now.factor() && factor > live) {
        throw Status.FAILED_PRECONDITION.withDescription("table " + name + " cannot keep " + factor + " replicas of each shard: each on its own"
            + " node, and " + live + " are live").asRuntimeException();
      }
      // Turning replication on: the leaders alone acknowledge writes until the caller raises min in-sync
      // (once the new followers are built), unless it names a higher one now and accepts refused writes meanwhile.
      boolean turningOn = !now.replicated() && factor > 1;
      int minInSync = request.getMinInSync() != 0 ? request.getMinInSync() : turningOn || factor == 1 ? 1 : defaultMinInSync(now, factor);
      if (minInSync < 1 || minInSync > factor) {
        throw Errors.invalid("min in-sync replicas must be 1 to the replication factor (" + factor + "), not " + minInSync);
      }
      Replication next = new Replication(factor, minInSync, now.versionFloor(), now.since());
      return next.equals(now) ? Optional.empty()
          : Optional.of(ShardMapDelta.on(map).add(new ShardMapDelta.SetReplication(name, next)).build());
    });
    return applied(name, stored);
  }

  /**
   * The min in-sync a new factor gets when the caller names none: a table that kept the default
   * for its factor gets the new factor's default (3 replicas: 2; 5: 3), one that was set by hand
   * keeps its value (at most the new factor).
   */
  private static int defaultMinInSync(Replication now, int factor) {
    boolean keptTheDefault = now.minInSync() == Replication.of(now.factor()).minInSync();
    return keptTheDefault ? Replication.of(factor).minInSync() : Math.min(now.minInSync(), factor);
  }

  /** Splits a table into the given number of shards in all ({@link ShardSplits#presplit}). */
  TableInfo presplit(io.shardwise.proto.v1.PresplitTableRequest request) {
    return applied(request.getTable(), new ShardSplits(ctx.coordinator(), ctx.peers()).presplit(request.getTable(), request.getShards()));
  }

  /** The table as {@code stored} has it, once this process has applied that map (or 10 s passed). */
  private TableInfo applied(String name, ShardMap stored) {
    ShardMap applied = ctx.map().await(stored.epoch(), APPLY_WAIT);
    ShardMap newest = applied.epoch() >= stored.epoch() ? applied : stored;
    Table table = newest.table(name).orElseThrow(() -> Errors.noSuchTable(name, newest.epoch()));
    return info(table, newest.epoch(), Map.of());
  }

  /**
   * Drops a table. Its definition is kept first (in ZooKeeper, the last one per name), so that
   * {@link #undrop} can bring it back while its data is in the owners' trash.
   */
  DropTableResponse drop(String name) {
    if (Tables.indexTable(name)) {
      throw Errors.invalid("table " + name + " is a global index of table " + Tables.indexedTable(name) + ": drop the index (index drop)");
    }
    ShardMap before = ctx.coordinator().readMap().map();
    Table table = before.table(name).orElseThrow(() -> Errors.noSuchTable(name, before.epoch()));
    byte[] record = MapCodec.toProto(ShardMap.restore(before.epoch(), List.of(table))).toByteArray();
    ctx.coordinator().writeRecord(Coordinator.DROPPED_PATH + "/" + name, record); // in parts if it is large
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      Table now = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
      if (now.id() != table.id()) {
        throw Status.ABORTED.withDescription("table " + name + " was recreated while it was being dropped; drop it again")
            .asRuntimeException();
      }
      ShardMapDelta.Builder delta = ShardMapDelta.on(map).dropTable(name);
      for (io.shardwise.core.doc.IndexDef global : now.globalIndexes()) { // an index's table goes with its table
        if (map.table(global.globalTable(name)).isPresent()) {
          delta.dropTable(global.globalTable(name));
        }
      }
      return Optional.of(delta.build());
    });
    ctx.map().await(stored.epoch(), APPLY_WAIT);
    return DropTableResponse.newBuilder().setMapEpoch(stored.epoch()).build();
  }

  /**
   * Brings back the last table dropped under {@code name}: the same id, layout and owners, so each
   * owner finds the shard's copy in its trash and puts it back before it serves the shard. Data
   * purged from a trash since (after the trash grace) is gone; the answer says how many shards'
   * copies the live owners still had.
   */
  UndropTableResponse undrop(String name) {
    userTableName(name);
    byte[] record = ctx.coordinator().readRecord(Coordinator.DROPPED_PATH + "/" + name)
        .orElseThrow(() -> Status.NOT_FOUND.withDescription("no dropped table " + name + " is remembered (only the last drop of each "
            + "name is, until the name is dropped again)").asRuntimeException());
    Table table = MapCodec.fromBytes(record).table(name).orElseThrow();
    // What the owners still hold, asked before the table is back (then the copies leave the trash).
    java.util.Set<Long> inTrash = new java.util.TreeSet<>();
    java.util.Set<String> answered = new java.util.TreeSet<>();
    for (NodeStatsResponse node : poll().answers()) {
      answered.add(node.getNode());
      node.getTrashList().stream().filter(e -> e.getTableId() == table.id() && e.getKind().equals("table_dropped"))
          .forEach(e -> inTrash.add(e.getNumber()));
    }
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      if (map.table(name).isPresent()) {
        throw Status.ALREADY_EXISTS.withDescription("a table " + name + " exists (id " + map.table(name).get().id()
            + "); drop it first to bring back the one dropped before").asRuntimeException();
      }
      ShardMapDelta.Builder delta = ShardMapDelta.on(map).restoreTable(table);
      if (!table.globalIndexes().isEmpty()) { // their tables were dropped with it: it comes back with its local indexes only
        delta.add(new ShardMapDelta.SetIndexes(name, table.indexes().stream()
            .filter(i -> i.scope() == io.shardwise.core.doc.IndexDef.Scope.LOCAL).toList()));
      }
      return Optional.of(delta.build());
    });
    ctx.coordinator().deleteRecord(Coordinator.DROPPED_PATH + "/" + name);
    ctx.map().await(stored.epoch(), APPLY_WAIT);
    Table back = stored.table(name).orElseThrow();
    UndropTableResponse.Builder out = UndropTableResponse.newBuilder().setTable(info(back, stored.epoch(), Map.of()))
        .setShardsFoundInTrash(inTrash.size());
    back.shards().stream().map(s -> s.owner().value()).filter(o -> !answered.contains(o)).distinct().forEach(out::addOwnersNotAsked);
    return out.build();
  }

  /** Keys and bytes of every shard, asked of every live node; shards of unreachable nodes are left out. */
  Map<String, ShardInfo> shardStats() {
    return shardStats(poll());
  }

  /** Every live node's stats (shards with keys and bytes, trash), within 5 s each. */
  NodeStatsPoll.Answers poll() {
    return NodeStatsPoll.ask(ctx.peers(), ctx.coordinator().liveNodes().values(), true, Duration.ofSeconds(5));
  }

  /** The shards in {@code answers}, by "table/number". */
  static Map<String, ShardInfo> shardStats(NodeStatsPoll.Answers answers) {
    Map<String, ShardInfo> out = new HashMap<>();
    answers.answers().forEach(stats -> stats.getShardsList().forEach(s -> out.put(s.getTable() + "/" + s.getNumber(), s)));
    return out; // shards of unreachable nodes are missing; cluster status marks the node
  }

  /** A table as the API describes it; {@code stats} by "table/number" (may be empty). */
  static TableInfo info(Table table, long mapEpoch, Map<String, ShardInfo> stats) {
    TableInfo.Builder b = TableInfo.newBuilder()
        .setName(table.name())
        .setId(table.id())
        .setSpec(MapCodec.toProto(table.spec()))
        .setMapEpoch(mapEpoch)
        .addAllRingMembers(table.layout().ringMembers())
        .setReplicas(table.replication().factor())
        .setMinInSync(table.replication().minInSync()).setValueFormat(table.format().label());
    table.indexes().forEach(i -> b.addIndexes(MapCodec.toProto(i)));
    long[] hashValues = table.layout().hashValues();
    for (int position = 0; position < table.shards().size(); position++) {
      ShardAssignment s = table.shards().get(position);
      ShardInfo.Builder shard = ShardInfo.newBuilder()
          .setTable(table.name())
          .setNumber(s.id().number())
          .setPosition(position)
          .setOwner(s.owner().value())
          .setEpoch(s.epoch())
          .setLeaderEpoch(s.leaderEpoch());
      s.followers().forEach(f -> shard.addFollowers(f.value()));
      s.inSync().forEach(f -> shard.addInSync(f.value()));
      Strategy strategy = table.layout().strategy();
      if (strategy == Strategy.RANGE) {
        KeyRange range = table.layout().keyRangeOf(position);
        shard.setStart(ByteString.copyFrom(range.start()));
        if (range.end() != null) {
          shard.setEnd(ByteString.copyFrom(range.end())).setHasEnd(true);
        }
      } else if (table.layout().hashRanges()) {
        shard.setHashFirst(hashValues[position]);
        shard.setHashLast(position + 1 < hashValues.length ? hashValues[position + 1] - 1 : table.layout().hashFunction().maxValue());
      } else if (strategy == Strategy.RING || strategy == Strategy.TOKENS) {
        shard.setHashLast(hashValues[position]);
      }
      ShardInfo stat = stats.get(table.name() + "/" + s.id().number());
      if (stat != null) {
        shard.setKeys(stat.getKeys()).setBytes(stat.getBytes());
      }
      b.addShards(shard);
    }
    return b.build();
  }
}
