package io.shardwise.server.index;

import io.grpc.Status;
import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.CreateIndexRequest;
import io.shardwise.proto.v1.DropIndexRequest;
import io.shardwise.proto.v1.IndexStatus;
import io.shardwise.proto.v1.IndexStatusResponse;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.NodeStatsPoll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Creating, dropping and describing a table's secondary indexes. Each change is one
 * compare-and-set of the map: an index is created building (from the map that holds it, every
 * node maintains it on every write and backfills the rows it holds), the controller marks it ready
 * when every replica is built ({@link IndexReadiness}), and queries use it from then on. Dropping
 * it takes it out of the map; each node deletes its entries as it applies that map.
 *
 * <p>A global index is created with its own table ({@link IndexDef#globalTable}) in the same
 * compare-and-set, and dropped with it.
 */
public final class IndexAdmin {

  private static final Duration APPLY_WAIT = Duration.ofSeconds(10);
  private static final NodeStatsRequest INDEX_STATS = NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).build();

  private final ClusterContext ctx;
  private final io.shardwise.server.rpc.TableAdmin tables;
  private final GlobalIndexes globals;

  public IndexAdmin(ClusterContext ctx, io.shardwise.server.rpc.TableAdmin tables, GlobalIndexes globals) {
    this.ctx = ctx;
    this.tables = tables;
    this.globals = globals;
  }

  public IndexStatusResponse create(CreateIndexRequest request) {
    String name = request.getTable();
    List<String> path = path(request.getField());
    IndexDef.Scope scope = scope(request.getScope());
    if (scope == IndexDef.Scope.LOCAL && (!request.getStrategy().isEmpty() || request.getShards() > 0 || !request.getMode().isEmpty())) {
      throw Errors.invalid("a local index lives in its table's shards: --strategy, --shards, --sync and --async are for global indexes");
    }
    boolean async = scope == IndexDef.Scope.GLOBAL && async(request.getMode());
    if (scope == IndexDef.Scope.LOCAL && request.getCoveringCount() > 0) {
      throw Errors.invalid("a local index's query reads its rows beside it: --covering is for global indexes");
    }
    List<List<String>> covering = new ArrayList<>();
    for (String f : request.getCoveringList()) {
      covering.add(path(f));
    }
    ShardMap current = ctx.map().current();
    Table indexed = current.table(name).orElseThrow(() -> Errors.noSuchTable(name, current.epoch()));
    io.shardwise.server.rpc.TableAdmin.Placed placed = scope == IndexDef.Scope.GLOBAL ? placeIndexTable(indexed, path, request) : null;
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
      if (t.format() != ValueFormat.JSON) {
        throw Errors.invalid("table " + name + " holds bytes, not JSON documents: only a table created with --format json has indexes");
      }
      if (t.index(path, scope).isPresent()) {
        throw Status.ALREADY_EXISTS.withDescription("table " + name + " has a " + scope.label() + " index on " + String.join(".", path)
            + " already").asRuntimeException();
      }
      if (t.indexes().size() >= IndexDef.MAX_PER_TABLE) {
        throw Errors.limit("a table has at most " + IndexDef.MAX_PER_TABLE + " indexes; table " + name + " has " + t.indexes().size());
      }
      if (t.id() != indexed.id()) {
        throw Status.ABORTED.withDescription("table " + name + " was recreated meanwhile: create the index again").asRuntimeException();
      }
      List<IndexDef> next = new ArrayList<>(t.indexes());
      IndexDef index; // its id: the epoch of the map that holds it first
      try {
        index = new IndexDef(map.epoch() + 1, path, scope, IndexDef.State.BUILDING, async, covering);
      } catch (IllegalArgumentException e) {
        throw Errors.invalid(e.getMessage());
      }
      next.add(index);
      ShardMapDelta.Builder delta = ShardMapDelta.on(map);
      if (placed != null) {
        if (map.table(placed.name()).isPresent()) {
          throw Status.ALREADY_EXISTS.withDescription("a table " + placed.name() + " exists already").asRuntimeException();
        }
        placed.create(delta, io.shardwise.core.doc.ValueFormat.BYTES);
      }
      return Optional.of(delta.add(new ShardMapDelta.SetIndexes(name, next)).build());
    });
    ctx.map().await(stored.epoch(), APPLY_WAIT);
    return status(name);
  }

  public IndexStatusResponse drop(DropIndexRequest request) {
    String name = request.getTable();
    List<String> path = path(request.getField());
    IndexDef.Scope scope = request.getScope().isEmpty() ? null : scope(request.getScope());
    ShardMap stored = ctx.coordinator().updateMap(map -> {
      Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
      List<IndexDef> next = t.indexes().stream().filter(i -> !(i.path().equals(path) && (scope == null || i.scope() == scope))).toList();
      if (next.size() == t.indexes().size()) {
        throw Status.NOT_FOUND.withDescription("table " + name + " has no index on " + String.join(".", path)).asRuntimeException();
      }
      ShardMapDelta.Builder delta = ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes(name, next));
      for (IndexDef gone : t.indexes()) { // a global index's table goes with it (to its owners' trash)
        if (!next.contains(gone) && gone.scope() == IndexDef.Scope.GLOBAL && map.table(gone.globalTable(name)).isPresent()) {
          delta.dropTable(gone.globalTable(name));
        }
      }
      return Optional.of(delta.build());
    });
    ctx.map().await(stored.epoch(), APPLY_WAIT);
    return status(name);
  }

  /** Every index of the table, with how far each is built by the nodes' own account. */
  public IndexStatusResponse status(String name) {
    ShardMap map = ctx.map().current();
    Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
    IndexStatusResponse.Builder out = IndexStatusResponse.newBuilder().setTable(name);
    if (t.indexes().isEmpty()) {
      return out.build();
    }
    List<NodeStatsResponse> stats = NodeStatsPoll.ask(ctx.peers(), ctx.coordinator().liveNodesNow().values(), INDEX_STATS,
        Duration.ofSeconds(5)).answers();
    for (IndexDef i : t.indexes()) {
      IndexStatus status = IndexProgress.of(t, i, stats);
      out.addIndexes(i.scope() == IndexDef.Scope.GLOBAL
          ? status.toBuilder().setIndexTable(i.globalTable(name)).setMode(i.async() ? "async" : "sync")
              .addAllCovering(i.covering().stream().map(c -> String.join(".", c)).toList()).build() : status);
    }
    return out.build();
  }

  /**
   * Where a new global index's table goes: {@code hashrange} (values spread over its shards, one per
   * live node unless asked) or {@code range} (values in order: one shard, split as it grows); its
   * replicas as its table's.
   */
  private io.shardwise.server.rpc.TableAdmin.Placed placeIndexTable(Table indexed, List<String> path, CreateIndexRequest request) {
    if (indexed.format() != io.shardwise.core.doc.ValueFormat.JSON) {
      throw Errors.invalid("table " + indexed.name() + " holds bytes, not JSON documents: only a table created with --format json has indexes");
    }
    String name = new IndexDef(1, path, IndexDef.Scope.GLOBAL, IndexDef.State.BUILDING).globalTable(indexed.name());
    if (!io.shardwise.core.map.Tables.indexTable(name)) {
      throw Errors.invalid("a global index's table name, " + name.length() + " characters, is at most "
          + io.shardwise.core.map.Tables.MAX_INDEX_TABLE_NAME_LENGTH + ": index a shorter path");
    }
    String strategy = request.getStrategy().isEmpty() ? "hashrange" : request.getStrategy().strip().toLowerCase(Locale.ROOT);
    int shards;
    io.shardwise.core.partition.Strategy s;
    switch (strategy) {
      case "hashrange":
        s = io.shardwise.core.partition.Strategy.HASHRANGE;
        shards = request.getShards() > 0 ? request.getShards() : Math.max(1, ctx.coordinator().liveNodesNow().size());
        break;
      case "range":
        s = io.shardwise.core.partition.Strategy.RANGE;
        shards = 1;
        if (request.getShards() > 1) {
          throw Errors.invalid("a range-partitioned global index starts as one shard and splits as it grows (--shards is for hashrange)");
        }
        break;
      default:
        throw Errors.invalid("a global index's table is partitioned by hashrange or range, not '" + request.getStrategy() + "'");
    }
    return tables.place(name, io.shardwise.core.partition.PartitionerSpec.builder(s).build(), shards, indexed.replication(),
        io.shardwise.core.partition.KeySample.empty());
  }

  /**
   * The consistency checker, on every live node: each local index's entries compared with the
   * node's rows (all of them read). Nodes that do not answer are named.
   */
  public io.shardwise.proto.v1.IndexCheckResponse check(String name) {
    ShardMap map = ctx.map().current();
    Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
    io.shardwise.proto.v1.IndexCheckResponse.Builder global = io.shardwise.proto.v1.IndexCheckResponse.newBuilder();
    for (IndexDef i : t.globalIndexes()) {
      if (i.state() != IndexDef.State.READY) {
        continue; // still building: its backfill has not written every row's entry yet
      }
      GlobalIndexes.Check c = globals.check(t, i);
      global.addChecks(io.shardwise.proto.v1.IndexCheck.newBuilder().setNode("global").setIndexId(i.id()).setField(i.field())
          .setRows(c.rows()).setEntries(c.entries()).setMissing(c.missing()).setExtra(c.extra()));
    }
    NodeStatsPoll.Answers answers = NodeStatsPoll.ask(ctx.peers(), ctx.coordinator().liveNodesNow().values(),
        NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).setCheckIndexesOf(t.id()).build(), Duration.ofSeconds(60));
    io.shardwise.proto.v1.IndexCheckResponse.Builder out = io.shardwise.proto.v1.IndexCheckResponse.newBuilder().setTable(name)
        .addAllUnreachable(answers.unreachable());
    answers.answers().forEach(n -> out.addAllChecks(n.getIndexChecksList()));
    return out.addAllChecks(global.getChecksList()).build();
  }

  private static List<String> path(String field) {
    try {
      return IndexDef.parsePath(field);
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
    }
  }

  /** A global index's mode as asked: async unless "sync". */
  private static boolean async(String mode) {
    switch (mode.strip().toLowerCase(Locale.ROOT)) {
      case "":
      case "async":
        return true;
      case "sync":
        return false;
      default:
        throw Errors.invalid("a global index is kept sync or async, not '" + mode + "'");
    }
  }

  private static IndexDef.Scope scope(String text) {
    if (text.isEmpty()) {
      return IndexDef.Scope.LOCAL;
    }
    try {
      return IndexDef.Scope.valueOf(text.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw Errors.invalid("an index is local or global, not '" + text + "'");
    }
  }
}
