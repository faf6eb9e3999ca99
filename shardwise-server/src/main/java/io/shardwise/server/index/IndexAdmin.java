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
 */
public final class IndexAdmin {

  private static final Duration APPLY_WAIT = Duration.ofSeconds(10);
  private static final NodeStatsRequest INDEX_STATS = NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).build();

  private final ClusterContext ctx;

  public IndexAdmin(ClusterContext ctx) {
    this.ctx = ctx;
  }

  public IndexStatusResponse create(CreateIndexRequest request) {
    String name = request.getTable();
    List<String> path = path(request.getField());
    IndexDef.Scope scope = scope(request.getScope());
    if (scope == IndexDef.Scope.GLOBAL) {
      throw Status.UNIMPLEMENTED.withDescription("global indexes are not built yet: create a local one (--local)").asRuntimeException();
    }
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
      List<IndexDef> next = new ArrayList<>(t.indexes());
      next.add(new IndexDef(map.epoch() + 1, path, scope, IndexDef.State.BUILDING)); // its id: the epoch of the map that holds it first
      return Optional.of(ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes(name, next)).build());
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
      return Optional.of(ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes(name, next)).build());
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
      out.addIndexes(IndexProgress.of(t, i, stats));
    }
    return out.build();
  }

  /**
   * The consistency checker, on every live node: each local index's entries compared with the
   * node's rows (all of them read). Nodes that do not answer are named.
   */
  public io.shardwise.proto.v1.IndexCheckResponse check(String name) {
    ShardMap map = ctx.map().current();
    Table t = map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
    NodeStatsPoll.Answers answers = NodeStatsPoll.ask(ctx.peers(), ctx.coordinator().liveNodesNow().values(),
        NodeStatsRequest.newBuilder().setIndexBuildsOnly(true).setCheckIndexesOf(t.id()).build(), Duration.ofSeconds(60));
    io.shardwise.proto.v1.IndexCheckResponse.Builder out = io.shardwise.proto.v1.IndexCheckResponse.newBuilder().setTable(name)
        .addAllUnreachable(answers.unreachable());
    answers.answers().forEach(n -> out.addAllChecks(n.getIndexChecksList()));
    return out.build();
  }

  private static List<String> path(String field) {
    try {
      return IndexDef.parsePath(field);
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
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
