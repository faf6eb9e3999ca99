package io.shardwise.server.rpc;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.shardwise.core.key.Key;
import io.shardwise.core.key.KeyRange;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Route;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.ShardSpan;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.BatchGetRequest;
import io.shardwise.proto.v1.BatchGetResponse;
import io.shardwise.proto.v1.BatchPutRequest;
import io.shardwise.proto.v1.BatchPutResponse;
import io.shardwise.proto.v1.CreateTableRequest;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.DeleteRequest;
import io.shardwise.proto.v1.DeleteResponse;
import io.shardwise.proto.v1.DescribeTableRequest;
import io.shardwise.proto.v1.DropTableRequest;
import io.shardwise.proto.v1.DropTableResponse;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.GetRequest;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.KeyValue;
import io.shardwise.proto.v1.ListTablesRequest;
import io.shardwise.proto.v1.ListTablesResponse;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.proto.v1.PutResponse;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.proto.v1.ResponseHeader;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.ScanResponse;
import io.shardwise.proto.v1.ShardScanRequest;
import io.shardwise.proto.v1.ShardScanResponse;
import io.shardwise.proto.v1.TableInfo;
import io.shardwise.proto.v1.UndropTableRequest;
import io.shardwise.proto.v1.UndropTableResponse;
import io.shardwise.server.shard.ShardFencedException;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ScanPage;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.StoredEntry;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.storage.Versioned;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The data API of a node or a router: what each request does here — checked, served from this
 * node's store, or planned with its global index entries — while {@link RequestRouter} decides
 * where (here, or forwarded to the key's owner).
 */
public final class DataServiceImpl extends DataServiceGrpc.DataServiceImplBase {

  private static final int ATTEMPTS = RequestRouter.ATTEMPTS;
  private static final Duration CATCH_UP = RequestRouter.CATCH_UP;
  private static final int DEFAULT_SCAN_LIMIT = 100;

  private final ClusterContext ctx;
  private final TableAdmin tables;
  private final io.shardwise.server.index.IndexAdmin indexes;

  private final RequestMetrics requests;
  private final io.micrometer.core.instrument.Counter followerReads;
  private final io.micrometer.core.instrument.Counter followerReadsStale;

  private final io.shardwise.server.txn.Transactions txns;
  /** The transactions' steps on shards this node owns. */
  private final io.shardwise.server.txn.ShardSteps txnSteps;
  /** What a request does when it meets a transaction's intent. */
  private final MeetingIntents intents;
  /** Where each request is served: here, or forwarded to its owner. */
  private final RequestRouter router;
  /** Global indexes: writes of indexed tables planned with their entries, queries through them, backfills, the checker. */
  private final io.shardwise.server.index.GlobalIndexes globals;
  /** Where this node's shards take writes of document tables ({@link io.shardwise.server.index.GlobalIndexFence}). */
  private final io.shardwise.server.index.GlobalIndexFence fence;
  /** This node's drainer of pending markers (null in a router). */
  private final io.shardwise.server.index.AsyncIndexes asyncIndexes;

  public DataServiceImpl(ClusterContext ctx, TableAdmin tables) {
    this(ctx, tables, Duration.ofSeconds(5));
  }

  /** @param txnTimeout how long a transaction coordinated here may stay undecided ({@link io.shardwise.server.txn.Transactions}) */
  public DataServiceImpl(ClusterContext ctx, TableAdmin tables, Duration txnTimeout) {
    this.ctx = ctx;
    this.tables = tables;
    this.txnSteps = new io.shardwise.server.txn.ShardSteps(batch -> ctx.shards().apply(batch), System::currentTimeMillis);
    this.txns = new io.shardwise.server.txn.Transactions(new RoutedParticipants(this), txnTimeout, io.shardwise.server.txn.TxnClock.SYSTEM,
        new io.shardwise.server.txn.Transactions.Phases() {
          @Override
          public void prepared(String txnId) {
            ctx.hooks().txnPrepared(txnId);
          }

          @Override
          public void committed(String txnId) {
            ctx.hooks().txnCommitted(txnId);
          }
        });
    this.intents = new MeetingIntents(txns);
    this.router = new RequestRouter(ctx, intents);
    this.fence = new io.shardwise.server.index.GlobalIndexFence(() -> ctx.map().current());
    this.globals = new io.shardwise.server.index.GlobalIndexes(new io.shardwise.server.index.GlobalIndexes.Cluster() {
      @Override
      public ShardMap map() {
        return ctx.map().current();
      }

      @Override
      public ShardMap awaitMap(long epoch) {
        return ctx.map().await(epoch, CATCH_UP);
      }

      @Override
      public ScanResponse scan(ScanRequest request) {
        return scanRows(request.toBuilder().setHeader(RequestHeader.newBuilder().setForward(true)).build()); // to the owners, as a router
      }

      @Override
      public List<GetResponse> get(String table, List<Key> keys) {
        GetResponse[] results = new GetResponse[keys.size()];
        BatchGetRequest.Builder b = BatchGetRequest.newBuilder().setHeader(RequestHeader.newBuilder().setForward(true)).setTable(table);
        keys.forEach(k -> b.addKeys(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(k.partitionKey()))
            .setSortKey(ByteString.copyFrom(k.sortKey()))));
        batchGetAtLeaders(b.build(), keys, results);
        return List.of(results);
      }

      @Override
      public void awaitReconciled(Table table, long millis) {
        awaitReconciledShards(table, millis);
      }
    }, txns, Inline.BLOCKING);
    this.asyncIndexes = ctx.isRouter() ? null : new io.shardwise.server.index.AsyncIndexes(ctx, globals, 4);
    this.indexes = new io.shardwise.server.index.IndexAdmin(ctx, tables, globals);
    this.requests = new RequestMetrics(ctx.metrics());
    this.followerReads = io.micrometer.core.instrument.Counter.builder("shardwise.follower.reads")
        .description("bounded-staleness reads answered by this node as a follower").tag("outcome", "answered").register(ctx.metrics());
    this.followerReadsStale = io.micrometer.core.instrument.Counter.builder("shardwise.follower.reads")
        .description("bounded-staleness reads answered by this node as a follower").tag("outcome", "too_stale").register(ctx.metrics());
  }

  /** The fence this node's shards take writes of document tables inside (its drain is the index builds'). */
  public io.shardwise.server.index.GlobalIndexFence indexFence() {
    return fence;
  }

  /** This node's drainer of async global indexes' pending markers (null in a router); the node starts and closes it. */
  public io.shardwise.server.index.AsyncIndexes asyncIndexes() {
    return asyncIndexes;
  }

  /** This node's side of global indexes (the controller's backfill runs through it). */
  public io.shardwise.server.index.GlobalIndexes globalIndexes() {
    return globals;
  }

  // ------------------------------------------------------------------ tables

  @Override
  public void createTable(CreateTableRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.create(request));
  }

  @Override
  public void listTables(ListTablesRequest request, StreamObserver<ListTablesResponse> out) {
    respond(out, tables::list);
  }

  @Override
  public void describeTable(DescribeTableRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.describe(request.getName(), request.getWithStats()));
  }

  @Override
  public void dropTable(DropTableRequest request, StreamObserver<DropTableResponse> out) {
    respond(out, () -> tables.drop(request.getName()));
  }

  @Override
  public void undropTable(UndropTableRequest request, StreamObserver<UndropTableResponse> out) {
    respond(out, () -> tables.undrop(request.getName()));
  }

  @Override
  public void splitShard(io.shardwise.proto.v1.SplitShardRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.split(request));
  }

  @Override
  public void mergeShards(io.shardwise.proto.v1.MergeShardsRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.merge(request));
  }

  @Override
  public void setReplication(io.shardwise.proto.v1.SetReplicationRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.setReplication(request));
  }

  @Override
  public void createIndex(io.shardwise.proto.v1.CreateIndexRequest request, StreamObserver<io.shardwise.proto.v1.IndexStatusResponse> out) {
    respond(out, () -> {
      Inline.mayBlock();
      return indexes.create(request);
    });
  }

  @Override
  public void dropIndex(io.shardwise.proto.v1.DropIndexRequest request, StreamObserver<io.shardwise.proto.v1.IndexStatusResponse> out) {
    respond(out, () -> {
      Inline.mayBlock();
      return indexes.drop(request);
    });
  }

  @Override
  public void indexStatus(io.shardwise.proto.v1.IndexStatusRequest request, StreamObserver<io.shardwise.proto.v1.IndexStatusResponse> out) {
    respond(out, () -> {
      Inline.mayBlock();
      return indexes.status(request.getTable());
    });
  }

  @Override
  public void checkIndexes(io.shardwise.proto.v1.IndexStatusRequest request, StreamObserver<io.shardwise.proto.v1.IndexCheckResponse> out) {
    respond(out, () -> {
      Inline.mayBlock();
      return indexes.check(request.getTable());
    });
  }

  @Override
  public void presplitTable(io.shardwise.proto.v1.PresplitTableRequest request, StreamObserver<TableInfo> out) {
    respond(out, () -> tables.presplit(request));
  }

  // ------------------------------------------------------------------ single keys

  @Override
  public void put(PutRequest request, StreamObserver<PutResponse> out) {
    boolean counter = request.hasCounter();
    respond(requests.timed(counter ? "counter" : "put", out), () -> {
      Key key = counter ? key(request.getKey()) : userKey(request.getKey());
      ctx.limits().checkValue(request.getValue().size());
      ctx.limits().checkValue(request.getCounter().getAppend().size());
      if (counter && formatOf(request.getHeader(), request.getTable()) == io.shardwise.core.doc.ValueFormat.JSON) {
        throw Errors.invalid("table " + request.getTable() + " holds JSON documents; counter operations write numbers and text");
      }
      if (!counter) {
        checkDocuments(request.getHeader(), request.getTable(), List.of(request.getValue()), i -> "the value");
      }
      java.util.function.UnaryOperator<byte[]> transform = counter
          ? CounterOps.transform(request.getCounter(), key, CounterOps::nowMicros, ctx.limits().maxValueBytes()) : null;
      byte[] requestId = requestId(request.getHeader().getRequestId());
      boolean merge = counter && (request.getCounter().hasIncrement() || request.getCounter().hasAppend()); // salting can spread it
      writableByUser(request.getTable());
      java.util.function.Supplier<PutResponse> indexed = () -> {
        long expected = request.getConditional() ? request.getExpectedVersion() : io.shardwise.core.txn.TxnItem.ANY;
        Inline.mayBlock();
        long version = globals.write(new io.shardwise.core.txn.TxnItem(request.getTable(), key, io.shardwise.core.txn.TxnItem.Op.PUT,
            request.getValue().toByteArray(), expected), requestId);
        return PutResponse.newBuilder().setHeader(header(ctx.map().current(), 1)).setVersion(version).build();
      };
      if (!counter && globallyIndexed(request.getHeader(), request.getTable())) {
        return indexed.get();
      }
      try {
        return router.keyed(request.getHeader(), request.getTable(), key, true, merge,
            (map, shard) -> fenced(map, request.getTable(), 0, () -> {
              long version;
              try {
                version = counter ? ctx.shards().apply(List.of(Mutation.transform(shard, key.encode(), transform).withRequestId(requestId)))[0]
                    : ctx.shards().write(shard, key.encode(), request.getValue().toByteArray(),
                        request.getConditional() ? request.getExpectedVersion() : Mutation.ANY, requestId);
              } catch (VersionMismatchException e) {
                throw Errors.versionMismatch(e.getMessage(), e.actual());
              } catch (io.shardwise.core.key.Counters.CounterException e) {
                throw CounterOps.refused(e);
              }
              return PutResponse.newBuilder().setHeader(header(map, 1)).setVersion(version).build();
            }),
            (stub, header) -> stub.put(request.toBuilder().setHeader(header).build()));
      } catch (StatusRuntimeException e) {
        awaitIndexedMap(e);
        return indexed.get();
      }
    });
  }

  // ------------------------------------------------------------------ global indexes

  /** Refuses a write a user asked of a global index's table: its entries are written by its index only. */
  private static void writableByUser(String table) {
    if (io.shardwise.core.map.Tables.indexTable(table)) {
      throw Errors.invalid("table " + table + " is a global index of table " + io.shardwise.core.map.Tables.indexedTable(table)
          + ": its entries are written by the index only (write the table's rows)");
    }
  }

  /** A batch of a globally indexed table, through its indexes ({@link io.shardwise.server.index.GlobalIndexes#batch}). */
  private BatchPutResponse indexedBatch(BatchPutRequest request, List<Key> keys) {
    Inline.mayBlock();
    List<byte[]> values = new ArrayList<>(keys.size());
    request.getEntriesList().forEach(e -> values.add(e.getValue().toByteArray()));
    List<byte[]> ids = new ArrayList<>(request.getRequestIdsCount());
    request.getRequestIdsList().forEach(id -> ids.add(id.toByteArray()));
    long[] versions = globals.batch(request.getTable(), keys, values, ids);
    BatchPutResponse.Builder b = BatchPutResponse.newBuilder().setHeader(header(ctx.map().current(), 1));
    for (long v : versions) {
      b.addVersions(v);
    }
    return b.build();
  }

  /** True if, by this node's map, {@code table} has a global index: its writes are planned with their entries. */
  private boolean globallyIndexed(RequestHeader h, String table) {
    ShardMap map = router.mapFor(h);
    return map.table(table).map(io.shardwise.server.index.GlobalIndexes::indexed).orElse(false);
  }

  /**
   * A write served at this node's shard of {@code table}, planned on the map of {@code plannedEpoch}
   * (0: a plain write): inside the fence for document tables, which refuses it if the table has a
   * newer global index ({@link io.shardwise.server.index.GlobalIndexFence}).
   */
  private <R> R fenced(ShardMap map, String table, long plannedEpoch, Supplier<R> write) {
    Table t = map.table(table).orElse(null);
    if (t == null || t.format() != io.shardwise.core.doc.ValueFormat.JSON) {
      return write.get(); // bytes tables have no indexes
    }
    return fence.write(table, plannedEpoch, write);
  }

  /** After a plain write was refused because its table has a global index: waits for the map that has it; rethrows anything else. */
  private void awaitIndexedMap(StatusRuntimeException e) {
    if (Errors.code(e) != ErrorInfo.Code.INDEXED_WRITE) {
      throw e;
    }
    Inline.mayBlock();
    ctx.map().await(Errors.info(e).map(ErrorInfo::getMapEpoch).orElse(0L), CATCH_UP);
  }

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> out) {
    respond(requests.timed("get", out), () -> {
      Key key = key(request.getKey());
      RequestHeader h = request.getHeader();
      if (request.getMaxStalenessMillis() > 0 && !ctx.isRouter()) {
        FollowerView view = followerView(h, request.getTable());
        Optional<GetResponse> answered = view == null ? Optional.empty() : getAsFollower(view, key, request.getMaxStalenessMillis());
        if (answered.isPresent()) {
          return answered.get();
        }
        h = h.toBuilder().setForward(true).build(); // not fresh enough here: the leader answers, through this node
      }
      return router.keyed(h, request.getTable(), key, false,
          (map, shard) -> found(map, intents.read(request.getTable(), () -> ctx.shards().get(shard, key.encode()))),
          (stub, header) -> stub.get(request.toBuilder().setHeader(header).setMaxStalenessMillis(0).build()));
    });
  }

  /** The map and table that follower reads of one request go by. */
  private record FollowerView(ShardMap map, Table table) {}

  /**
   * What follower reads of {@code tableName} go by here, looked up once per request; null if this
   * node answers none (no such table, one replica, or a caller with a newer map than this node's).
   */
  private FollowerView followerView(RequestHeader h, String tableName) {
    ShardMap map = ctx.map().current();
    Table table = map.table(tableName).orElse(null);
    if (table == null || !table.replication().replicated() || h.getMapEpoch() > map.epoch()) {
      return null;
    }
    return new FollowerView(map, table);
  }

  /** A bounded-staleness read answered here, if this node follows the key's shard and its replica is fresh enough. */
  private Optional<GetResponse> getAsFollower(FollowerView view, Key key, long maxStalenessMillis) {
    ShardMap map = view.map();
    Table table = view.table();
    ShardAssignment a = table.shardFor(key.partitionKey());
    if (!a.followers().contains(ctx.self())) {
      return Optional.empty();
    }
    ShardRef shard = ref(table, a);
    Optional<Optional<Versioned>> read;
    try {
      read = ctx.shards().getAsFollower(shard, key.encode(), Duration.ofMillis(maxStalenessMillis));
    } catch (io.shardwise.server.storage.KeyLockedException locked) {
      return Optional.empty(); // a transaction holds the key: its leader resolves it and answers
    }
    if (read.isEmpty()) {
      followerReadsStale.increment();
      return Optional.empty();
    }
    followerReads.increment();
    return Optional.of(found(map, read.get().orElse(null)));
  }

  @Override
  public void delete(DeleteRequest request, StreamObserver<DeleteResponse> out) {
    respond(requests.timed("delete", out), () -> {
      Key key = userKey(request.getKey());
      byte[] requestId = requestId(request.getHeader().getRequestId());
      writableByUser(request.getTable());
      java.util.function.Supplier<DeleteResponse> indexed = () -> {
        Inline.mayBlock();
        long version = globals.write(io.shardwise.core.txn.TxnItem.delete(request.getTable(), key), requestId);
        return DeleteResponse.newBuilder().setHeader(header(ctx.map().current(), 1)).setDeleted(version > 0).build();
      };
      if (globallyIndexed(request.getHeader(), request.getTable())) {
        return indexed.get();
      }
      try {
        return router.keyed(request.getHeader(), request.getTable(), key, true,
            (map, shard) -> fenced(map, request.getTable(), 0, () -> DeleteResponse.newBuilder().setHeader(header(map, 1))
                .setDeleted(ctx.shards().delete(shard, key.encode(), requestId)).build()),
            (stub, header) -> stub.delete(request.toBuilder().setHeader(header).build()));
      } catch (StatusRuntimeException e) {
        awaitIndexedMap(e);
        return indexed.get();
      }
    });
  }

  /** A request served here, for the shard's hot keys (sampled; a router has none). */
  private void heat(ShardRef shard, byte[] partitionKey, boolean write) {
    heat(shard, partitionKey, write, false);
  }

  private void heat(ShardRef shard, byte[] partitionKey, boolean write, boolean merge) {
    if (ctx.heat() != null) {
      ctx.heat().sample(shard, partitionKey, write, merge);
    }
  }

  private static GetResponse found(ShardMap map, Versioned v) {
    return result(v).toBuilder().setHeader(header(map, 1)).build();
  }

  /** One key's result inside a batch: no header of its own (the batch has one). */
  private static GetResponse result(Versioned v) {
    return v == null
        ? GetResponse.getDefaultInstance()
        : GetResponse.newBuilder().setFound(true).setValue(ByteString.copyFrom(v.value())).setVersion(v.version()).build();
  }

  /** Each key's partition key, copied out of its {@link Key} once per request. */
  private static byte[][] partitionKeys(List<Key> keys) {
    byte[][] out = new byte[keys.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = keys.get(i).partitionKey();
    }
    return out;
  }

  // ------------------------------------------------------------------ batches

  @Override
  public void batchPut(BatchPutRequest request, StreamObserver<BatchPutResponse> out) {
    respond(requests.timed("batch_put", out), () -> {
      long bytes = 0;
      List<Key> keys = new ArrayList<>();
      for (KeyValue kv : request.getEntriesList()) {
        keys.add(userKey(kv.getKey()));
        ctx.limits().checkValue(kv.getValue().size());
        bytes += kv.getKey().getPartitionKey().size() + kv.getKey().getSortKey().size() + kv.getValue().size();
      }
      ctx.limits().checkBatch(keys.size(), bytes);
      checkDocuments(request.getHeader(), request.getTable(), request.getEntriesList().stream().map(KeyValue::getValue).toList(),
          i -> "entry " + i);
      List<ByteString> ids = request.getRequestIdsList();
      if (!ids.isEmpty() && ids.size() != keys.size()) {
        throw Errors.invalid("a batch has one write id per entry or none: " + ids.size() + " ids for " + keys.size() + " entries");
      }
      ids.forEach(id -> ctx.limits().checkRequestId(id.size()));
      writableByUser(request.getTable());
      if (globallyIndexed(request.getHeader(), request.getTable())) {
        return indexedBatch(request, keys);
      }
      byte[][] partitionKeys = partitionKeys(keys);
      long[] versions = new long[keys.size()];
      int touched;
      try {
      touched = router.batch(request.getHeader(), request.getTable(), partitionKeys, true,
          (map, table, indexes) -> fenced(map, table.name(), 0, () -> {
            List<Mutation> mutations = new ArrayList<>();
            for (int i : indexes) {
              ShardRef shard = ref(table, table.shardFor(partitionKeys[i]));
              mutations.add(Mutation.put(shard, keys.get(i).encode(), request.getEntries(i).getValue().toByteArray())
                  .withRequestId(ids.isEmpty() ? null : ids.get(i).toByteArray()));
            }
            long[] written;
            try {
              written = ctx.shards().apply(mutations);
            } catch (VersionMismatchException e) {
              throw new AssertionError("unconditional writes cannot mismatch", e);
            } catch (IllegalArgumentException e) {
              throw Errors.invalid(e.getMessage());
            }
            for (int j = 0; j < indexes.size(); j++) {
              versions[indexes.get(j)] = written[j];
              heat(mutations.get(j).shard(), partitionKeys[indexes.get(j)], true);
            }
            return null;
          }),
          (stub, header, indexes) -> {
            BatchPutRequest.Builder sub = BatchPutRequest.newBuilder().setHeader(header).setTable(request.getTable());
            indexes.forEach(i -> sub.addEntries(request.getEntries(i)));
            if (!ids.isEmpty()) {
              indexes.forEach(i -> sub.addRequestIds(ids.get(i)));
            }
            BatchPutResponse r = stub.batchPut(sub.build());
            for (int j = 0; j < indexes.size(); j++) {
              versions[indexes.get(j)] = r.getVersions(j);
            }
          });
      } catch (StatusRuntimeException e) {
        awaitIndexedMap(e); // the table gained a global index: the batch again, through it (rewriting what was written is harmless)
        return indexedBatch(request, keys);
      }
      BatchPutResponse.Builder b = BatchPutResponse.newBuilder().setHeader(header(ctx.map().current(), touched));
      for (long v : versions) {
        b.addVersions(v);
      }
      return b.build();
    });
  }

  @Override
  public void batchGet(BatchGetRequest request, StreamObserver<BatchGetResponse> out) {
    respond(requests.timed("batch_get", out), () -> {
      List<Key> keys = new ArrayList<>();
      long bytes = 0;
      for (io.shardwise.proto.v1.Key k : request.getKeysList()) {
        keys.add(key(k));
        bytes += k.getPartitionKey().size() + k.getSortKey().size();
      }
      ctx.limits().checkBatch(keys.size(), bytes);
      GetResponse[] results = new GetResponse[keys.size()];
      BatchGetRequest rest = request;
      List<Key> restKeys = keys;
      List<Integer> restIndexes = null; // null: every key, in order
      if (request.getMaxStalenessMillis() > 0 && !ctx.isRouter()) {
        // The keys of shards this node follows, answered here while fresh enough; the rest by their leaders (forwarded).
        restIndexes = new ArrayList<>();
        FollowerView view = followerView(request.getHeader(), request.getTable());
        for (int i = 0; i < keys.size(); i++) {
          Optional<GetResponse> here = view == null ? Optional.empty() : getAsFollower(view, keys.get(i), request.getMaxStalenessMillis());
          if (here.isPresent()) {
            results[i] = here.get().toBuilder().clearHeader().build();
          } else {
            restIndexes.add(i);
          }
        }
        if (restIndexes.isEmpty()) {
          return BatchGetResponse.newBuilder().setHeader(header(ctx.map().current(), 1)).addAllResults(List.of(results)).build();
        }
        BatchGetRequest.Builder b = BatchGetRequest.newBuilder().setHeader(request.getHeader().toBuilder().setForward(true))
            .setTable(request.getTable());
        restIndexes.forEach(i -> b.addKeys(request.getKeys(i)));
        rest = b.build();
        restKeys = new ArrayList<>(restIndexes.size());
        for (int i : restIndexes) {
          restKeys.add(keys.get(i));
        }
      }
      GetResponse[] restResults = restIndexes == null ? results : new GetResponse[restKeys.size()];
      int touched = batchGetAtLeaders(rest, restKeys, restResults);
      if (restIndexes != null) {
        for (int j = 0; j < restIndexes.size(); j++) {
          results[restIndexes.get(j)] = restResults[j];
        }
      }
      return BatchGetResponse.newBuilder().setHeader(header(ctx.map().current(), touched)).addAllResults(List.of(results)).build();
    });
  }

  /** {@link #batchGetAtLeaders}, for a read transaction's rounds. */
  int readAtLeaders(BatchGetRequest request, List<Key> keys, GetResponse[] results) {
    return batchGetAtLeaders(request, keys, results);
  }

  /** Reads {@code keys} (those of {@code request}) at their shards' leaders, here or forwarded, into {@code results}; returns the shards touched. */
  private int batchGetAtLeaders(BatchGetRequest request, List<Key> keys, GetResponse[] results) {
    byte[][] partitionKeys = partitionKeys(keys);
    int touched = router.batch(request.getHeader(), request.getTable(), partitionKeys, false,
        (map, table, indexes) -> {
          List<ShardRef> shards = new ArrayList<>(indexes.size());
          for (int i : indexes) {
            shards.add(ref(table, table.shardFor(partitionKeys[i])));
          }
          ctx.shards().readBarrier(shards); // a replicated table's shards: one barrier each, all at once
          for (int j = 0; j < indexes.size(); j++) {
            int i = indexes.get(j);
            ShardRef shard = shards.get(j);
            results[i] = result(intents.read(request.getTable(), () -> ctx.shards().getAfterBarrier(shard, keys.get(i).encode())));
            heat(shards.get(j), partitionKeys[i], false);
          }
        },
        (stub, header, indexes) -> {
          BatchGetRequest.Builder sub = BatchGetRequest.newBuilder().setHeader(header).setTable(request.getTable());
          indexes.forEach(i -> sub.addKeys(request.getKeys(i)));
          BatchGetResponse r = stub.batchGet(sub.build());
          for (int j = 0; j < indexes.size(); j++) {
            results[indexes.get(j)] = r.getResults(j);
          }
        });
    return touched;
  }

  // ------------------------------------------------------------------ scans

  @Override
  public void scan(ScanRequest request, StreamObserver<ScanResponse> out) {
    respond(requests.timed("scan", out), () -> scanRows(request));
  }

  /** One page of a scan, routed from this node. */
  private ScanResponse scanRows(ScanRequest request) {
    {
      int limit = request.getLimit() == 0 ? DEFAULT_SCAN_LIMIT : request.getLimit();
      if (limit > ctx.limits().maxScanLimit()) {
        throw Errors.limit("scan limit is " + limit + " rows; the limit is " + ctx.limits().maxScanLimit());
      }
      ShardMap map = router.mapFor(request.getHeader());
      Table table = map.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), map.epoch()));
      if (request.hasPartition()) {
        return scanPartition(request, limit);
      }
      ShardSpan span;
      byte[] from;
      byte[] to;
      if (request.hasPartitionRange()) {
        if (table.layout().strategy() != Strategy.RANGE) {
          throw Errors.invalid("a partition-key range scan needs a range table; " + table.name() + " is " + table.layout().strategy()
              + " (scan one partition, or all)");
        }
        byte[] a = request.getPartitionRange().getFrom().toByteArray();
        byte[] b = request.getPartitionRange().getHasTo() ? request.getPartitionRange().getTo().toByteArray() : null;
        if (b != null && java.util.Arrays.compareUnsigned(a, b) >= 0) {
          throw Errors.invalid("partition range end must be above its start");
        }
        span = table.layout().shardsFor(KeyRange.of(a, b));
        from = Key.encodedLowerBound(a);
        to = b == null ? null : Key.encodedLowerBound(b);
      } else if (request.getAll()) {
        span = new ShardSpan(0, table.shards().size() - 1);
        from = new byte[0];
        to = null;
      } else {
        throw Errors.invalid("a scan needs a scope: partition, partition_range or all");
      }
      return scanShards(request.getHeader(), table, span, from, to, limit, request.getPageToken());
    }
  }

  private ScanResponse scanPartition(ScanRequest request, int limit) {
    byte[] pk = request.getPartition().getPartitionKey().toByteArray();
    Key start = key(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(request.getPartition().getPartitionKey())
        .setSortKey(request.getPartition().getSortFrom()).build());
    byte[] from = request.getPageToken().isEmpty() ? start.encode() : request.getPageToken().toByteArray();
    byte[] to = request.getPartition().getSortTo().isEmpty()
        ? Key.encodedPartitionEnd(pk)
        : Key.of(pk, request.getPartition().getSortTo().toByteArray()).encode();
    return router.keyed(request.getHeader(), request.getTable(), start, false,
        (map, shard) -> {
          ScanPage page = intents.scan(request.getTable(), () -> ctx.shards().scan(shard, from, to, limit));
          ScanResponse.Builder b = ScanResponse.newBuilder().setHeader(header(map, 1));
          page.entries().forEach(e -> b.addRows(row(e)));
          if (page.hasMore()) {
            b.setNextPageToken(ByteString.copyFrom(page.resumeFrom()));
          }
          return b.build();
        },
        (stub, header) -> stub.scan(request.toBuilder().setHeader(header).build()));
  }

  /**
   * A page token of a table whose shards split and merge (range and hash ranges): this byte, then
   * the encoded key of the last row returned. The next page starts right after that key, in the
   * shard that holds it by the map at that time, so the scan returns every row once however the
   * shards split or merge between pages. Other tables' shards never change position, and their
   * tokens are the position (4 bytes) and the key to resume from, inclusive.
   */
  private static final byte AFTER_KEY_TOKEN = 2;

  /** Reads shards of {@code span} in position order from the page token on, up to {@code limit} rows. */
  private ScanResponse scanShards(RequestHeader h, Table table, ShardSpan span, byte[] from, byte[] to, int limit, ByteString token) {
    boolean ordered = table.layout().splittable();
    int position = span.first();
    byte[] resume = from;
    byte[] after = null; // ordered: rows up to and including this key were returned
    if (!token.isEmpty()) {
      if (ordered) {
        if (token.byteAt(0) != AFTER_KEY_TOKEN || token.size() < 2) {
          throw Errors.invalid("page token does not belong to this scan (it was made for a table of another layout)");
        }
        after = token.substring(1).toByteArray();
        byte[] pk;
        try {
          pk = Key.decode(after).partitionKey();
        } catch (IllegalArgumentException e) {
          throw Errors.invalid("page token does not belong to this scan: " + e.getMessage());
        }
        position = table.positionOf(table.shardFor(pk).id());
        resume = after;
      } else {
        ByteBuffer t = token.asReadOnlyByteBuffer();
        position = t.getInt();
        resume = new byte[t.remaining()];
        t.get(resume);
      }
      if (position < span.first() || position > span.last()) {
        throw Errors.invalid("page token does not belong to this scan");
      }
    }
    ScanResponse.Builder out = ScanResponse.newBuilder();
    int touched = 0;
    for (; position <= span.last(); position++, resume = from) {
      int want = limit - out.getRowsCount();
      boolean skipAfter = after != null;
      ShardScanResponse page = shardScan(h, table, position, resume, to, skipAfter ? want + 1 : want);
      touched++;
      List<KeyValue> rows = page.getRowsList();
      if (skipAfter && !rows.isEmpty() && java.util.Arrays.equals(encoded(rows.get(0)), after)) {
        rows = rows.subList(1, rows.size()); // the token's own row, returned by the last page
      }
      after = null;
      boolean more = page.getHasMore();
      if (rows.size() > want) {
        rows = rows.subList(0, want);
        more = true;
      }
      out.addAllRows(rows);
      boolean full = out.getRowsCount() == limit;
      if (ordered && (more || (full && position < span.last())) && out.getRowsCount() > 0) {
        byte[] last = encoded(out.getRows(out.getRowsCount() - 1));
        out.setNextPageToken(ByteString.copyFrom(new byte[] {AFTER_KEY_TOKEN}).concat(ByteString.copyFrom(last)));
        break;
      }
      if (more) {
        ByteBuffer t = ByteBuffer.allocate(4 + page.getResumeFrom().size()).putInt(position);
        t.put(page.getResumeFrom().asReadOnlyByteBuffer());
        out.setNextPageToken(ByteString.copyFrom(t.array()));
        break;
      }
      if (full && position < span.last()) {
        out.setNextPageToken(ByteString.copyFrom(ByteBuffer.allocate(4).putInt(position + 1).array()));
        break;
      }
    }
    return out.setHeader(header(ctx.map().current(), touched)).build();
  }

  private static byte[] encoded(KeyValue row) {
    return Key.of(row.getKey().getPartitionKey().toByteArray(), row.getKey().getSortKey().toByteArray()).encode();
  }

  /** One shard's page, from this node's store or from its owner. */
  private ShardScanResponse shardScan(RequestHeader h, Table table, int position, byte[] from, byte[] to, int limit) {
    return shardScan(h, table, position, from, to, limit, "");
  }

  /** One page of the shard at {@code position}, here or at its owner; with a {@code where}, only the rows that meet it. */
  private ShardScanResponse shardScan(RequestHeader h, Table table, int position, byte[] from, byte[] to, int limit, String where) {
    return shardScan(h, table, position, from, to, limit, where, null);
  }

  /** As above, the rows read through the probes of {@code index} when it is not null. */
  private ShardScanResponse shardScan(RequestHeader h, Table table, int position, byte[] from, byte[] to, int limit, String where,
      io.shardwise.server.index.IndexPlan index) {
    ShardAssignment shard = table.shards().get(position);
    ShardScanRequest.Builder request = ShardScanRequest.newBuilder().setHeader(h).setTable(table.name()).setPosition(position)
        .setNumber(shard.id().number()).setHasNumber(true).setFrom(ByteString.copyFrom(from)).setLimit(limit).setWhere(where);
    if (index != null) {
      for (io.shardwise.server.index.IndexPlan.Probe p : index.probes()) {
        request.addIndexProbes(io.shardwise.proto.v1.IndexProbe.newBuilder().setIndexId(p.index().id())
            .setLow(ByteString.copyFrom(p.range().low())).setHigh(ByteString.copyFrom(p.range().high()))
            .setHighInclusive(p.range().highInclusive()));
      }
    }
    if (to != null) {
      request.setTo(ByteString.copyFrom(to)).setHasTo(true);
    }
    if (!ctx.isRouter() && shard.owner().equals(ctx.self())) {
      return localShardScan(ctx.map().current(), table, shard, request.build());
    }
    String address = router.liveAddress(shard.owner());
    return ctx.peers().data(address).shardScan(request.setHeader(RequestRouter.forwardHeader(ctx.map().current())).build());
  }

  /**
   * A consistent query's wait: every shard's leader of {@code table} waits until the rows pending
   * there when it is asked are reconciled ({@link io.shardwise.server.index.AsyncIndexes#awaitReconciled}),
   * all shards at once.
   */
  private void awaitReconciledShards(Table table, long millis) {
    List<java.util.concurrent.Future<ShardScanResponse>> asked = new ArrayList<>();
    for (int p = 0; p < table.shards().size(); p++) {
      int position = p;
      asked.add(Inline.BLOCKING.submit(() -> {
        ShardAssignment shard = table.shards().get(position);
        ShardScanRequest request = ShardScanRequest.newBuilder().setHeader(RequestRouter.forwardHeader(ctx.map().current())).setTable(table.name())
            .setPosition(position).setNumber(shard.id().number()).setHasNumber(true).setAwaitReconciledMillis((int) Math.min(Integer.MAX_VALUE,
                millis)).build();
        if (!ctx.isRouter() && shard.owner().equals(ctx.self())) {
          return awaitReconciledHere(ctx.map().current(), table, shard, request);
        }
        return ctx.peers().data(router.liveAddress(shard.owner())).withDeadlineAfter(millis + 5_000, java.util.concurrent.TimeUnit.MILLISECONDS)
            .shardScan(request);
      }));
    }
    for (int p = 0; p < asked.size(); p++) {
      try {
        asked.get(p).get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw Status.CANCELLED.withDescription("interrupted while a consistent query waited for its index").asRuntimeException();
      } catch (java.util.concurrent.ExecutionException e) {
        throw Status.UNAVAILABLE.withDescription("a consistent query could not confirm that shard " + table.shards().get(p).id()
            + " has reconciled its async global indexes (" + e.getCause().getMessage() + "): retry, or query without consistent")
            .asRuntimeException();
      }
    }
  }

  private ShardScanResponse awaitReconciledHere(ShardMap map, Table table, ShardAssignment shard, ShardScanRequest request) {
    Inline.mayBlock();
    try {
      if (!asyncIndexes.awaitReconciled(ref(table, shard), request.getAwaitReconciledMillis())) {
        throw Status.UNAVAILABLE.withDescription("shard " + shard.id() + " has not reconciled the rows pending at its leader "
            + ctx.self() + " within " + request.getAwaitReconciledMillis() + " ms (the index's lag is longer)").asRuntimeException();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    } catch (ShardFencedException e) {
      throw fencedScan(map, shard, e);
    }
    return ShardScanResponse.newBuilder().setHeader(header(map, 1)).build();
  }

  @Override
  public void shardScan(ShardScanRequest request, StreamObserver<ShardScanResponse> out) {
    respond(requests.timed("shard_scan", out), () -> {
      ShardMap map = router.mapFor(request.getHeader());
      Table table = map.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), map.epoch()));
      ShardAssignment shard;
      if (request.getHasNumber()) {
        // Gone from this node's map: split or merged since the caller's map. The caller refreshes.
        shard = table.shard(request.getNumber()).orElseThrow(() -> Errors.shardReplaced(map.epoch(), table.name() + "/"
            + request.getNumber()));
      } else if (request.getPosition() < table.shards().size()) {
        shard = table.shards().get(request.getPosition());
      } else {
        throw Errors.invalid("table " + table.name() + " has no shard at position " + request.getPosition());
      }
      if (ctx.isRouter() || !shard.owner().equals(ctx.self())) {
        throw Errors.wrongShard(map.epoch(), shard.id().toString(), shard.owner().value(), nullToEmpty(ctx.addressOf(shard.owner())));
      }
      if (request.getAwaitReconciledMillis() > 0) {
        return awaitReconciledHere(map, table, shard, request);
      }
      return localShardScan(map, table, shard, request);
    });
  }

  private ShardScanResponse localShardScan(ShardMap map, Table table, ShardAssignment shard, ShardScanRequest request) {
    if (request.getIndexProbesCount() > 0) {
      return localIndexScan(map, table, shard, request);
    }
    int limit = Math.max(1, Math.min(request.getLimit(), ctx.limits().maxScanLimit()));
    ScanPage page;
    try {
      page = intents.scan(table.name(), () -> ctx.shards().scan(ref(table, shard), request.getFrom().toByteArray(),
          request.getHasTo() ? request.getTo().toByteArray() : null, limit));
    } catch (ShardFencedException e) {
      throw fencedScan(map, shard, e);
    }
    ShardScanResponse.Builder b = ShardScanResponse.newBuilder().setHeader(header(map, 1)).setExamined(page.entries().size());
    io.shardwise.core.doc.Where where = request.getWhere().isEmpty() ? null : where(table, request.getWhere());
    for (StoredEntry e : page.entries()) {
      if (where == null || io.shardwise.proto.Documents.matches(e.value(), where)) {
        b.addRows(row(e));
      }
    }
    if (page.hasMore()) {
      b.setHasMore(true).setResumeFrom(ByteString.copyFrom(page.resumeFrom()));
    }
    return b.build();
  }

  /**
   * The shard asked for by number is being split, merged or moved away here: the map is about to
   * change, so the caller refreshes it and asks again (a query runs again on it: TableQuery.StaleMap).
   */
  private static io.grpc.StatusRuntimeException fencedScan(ShardMap map, ShardAssignment shard, ShardFencedException e) {
    return Errors.of(Status.FAILED_PRECONDITION, "WRONG_SHARD: shard " + shard.id() + " " + e.getMessage() + "; refresh and retry",
        io.shardwise.proto.v1.ErrorInfo.newBuilder().setCode(io.shardwise.proto.v1.ErrorInfo.Code.WRONG_SHARD).setMapEpoch(map.epoch())
            .build());
  }

  /**
   * A page of a shard's rows read through its local indexes: only once this node's backfill of
   * each index has ended (before, its entries may miss rows, and the shard answers UNAVAILABLE: the
   * query names it missing rather than answer without them).
   */
  private ShardScanResponse localIndexScan(ShardMap map, Table table, ShardAssignment shard, ShardScanRequest request) {
    int limit = Math.max(1, Math.min(request.getLimit(), ctx.limits().maxScanLimit()));
    List<io.shardwise.server.storage.ShardStore.IndexProbe> probes = new ArrayList<>();
    for (io.shardwise.proto.v1.IndexProbe p : request.getIndexProbesList()) {
      if (!ctx.store().indexBuilt(table.id(), p.getIndexId())) {
        throw Status.UNAVAILABLE.withDescription("index " + p.getIndexId() + " of table " + table.name() + " is still being built on node "
            + ctx.self()).asRuntimeException();
      }
      probes.add(new io.shardwise.server.storage.ShardStore.IndexProbe(p.getIndexId(),
          new io.shardwise.core.doc.IndexValues.Range(p.getLow().toByteArray(), p.getHigh().toByteArray(), p.getHighInclusive())));
    }
    io.shardwise.core.doc.Where where = request.getWhere().isEmpty() ? null : where(table, request.getWhere());
    long[] examined = {0};
    long[] perProbe = new long[probes.size()];
    ScanPage page;
    try {
      page = intents.scan(table.name(), () -> {
        io.shardwise.server.storage.ShardStore.IndexPage p = ctx.shards().indexScan(ref(table, shard), probes,
            request.getFrom().toByteArray(), request.getHasTo() ? request.getTo().toByteArray() : null, limit,
            doc -> where == null || io.shardwise.proto.Documents.matches(doc, where));
        examined[0] += p.examined();
        for (int i = 0; i < perProbe.length; i++) {
          perProbe[i] += p.perProbe()[i];
        }
        return p.page();
      });
    } catch (ShardFencedException e) {
      throw fencedScan(map, shard, e);
    } catch (IllegalStateException e) {
      throw Status.UNAVAILABLE.withDescription(e.getMessage() + " (node " + ctx.self() + ")").asRuntimeException();
    }
    ShardScanResponse.Builder b = ShardScanResponse.newBuilder().setHeader(header(map, 1)).setExamined((int) Math.min(Integer.MAX_VALUE,
        examined[0]));
    for (long n : perProbe) {
      b.addProbeEntries(n);
    }
    page.entries().forEach(e -> b.addRows(row(e)));
    if (page.hasMore()) {
      b.setHasMore(true).setResumeFrom(ByteString.copyFrom(page.resumeFrom()));
    }
    return b.build();
  }

  /** {@code text} read as a condition on the documents of {@code table}; INVALID_ARGUMENT if it is not one, or the table holds no documents. */
  private static io.shardwise.core.doc.Where where(Table table, String text) {
    if (table.format() != io.shardwise.core.doc.ValueFormat.JSON) {
      throw Errors.invalid("table " + table.name() + " holds bytes, not JSON documents: a query needs a table created with --format json");
    }
    try {
      return io.shardwise.core.doc.Where.parse(text);
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
    }
  }

  /** The fields a query asks for, as paths (none: whole documents); INVALID_ARGUMENT for a bad one or too many. */
  private static List<List<String>> fields(List<String> asked) {
    if (asked.size() > io.shardwise.core.doc.Where.MAX_COMPARISONS) {
      throw Errors.invalid("a query asks for at most " + io.shardwise.core.doc.Where.MAX_COMPARISONS + " fields, not " + asked.size());
    }
    List<List<String>> out = new ArrayList<>(asked.size());
    for (String f : asked) {
      try {
        out.add(io.shardwise.core.doc.IndexDef.parsePath(f));
      } catch (IllegalArgumentException e) {
        throw Errors.invalid(e.getMessage());
      }
    }
    return out;
  }

  /** {@code answer} with only {@code fields} of each document (none: as it is). */
  private static io.shardwise.proto.v1.QueryResponse projected(io.shardwise.proto.v1.QueryResponse.Builder answer, List<List<String>> fields) {
    if (!fields.isEmpty()) {
      for (int i = 0; i < answer.getRowsCount(); i++) {
        KeyValue row = answer.getRows(i);
        answer.setRows(i, row.toBuilder().setValue(ByteString.copyFrom(io.shardwise.proto.Documents.project(row.getValue().toByteArray(),
            fields))));
      }
    }
    return answer.build();
  }

  /** How many times a query runs when shards split or merge under it, before it answers them as missing. */
  private static final int QUERY_ATTEMPTS = 4;

  /** Rows the query may return at most. */
  static final int MAX_QUERY_ROWS = 10_000;

  @Override
  public void query(io.shardwise.proto.v1.QueryRequest request, StreamObserver<io.shardwise.proto.v1.QueryResponse> out) {
    respond(requests.timed("query", out), () -> {
      Inline.mayBlock();
      ShardMap first = router.mapFor(request.getHeader());
      where(first.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), first.epoch())), request.getWhere());
      int limit = request.getLimit() == 0 ? 100 : request.getLimit();
      if (limit > MAX_QUERY_ROWS) {
        throw Errors.limit("a query returns at most " + MAX_QUERY_ROWS + " rows, not " + limit);
      }
      long deadline = request.getShardDeadlineMillis() == 0 ? 5_000 : request.getShardDeadlineMillis();
      List<List<String>> fields = fields(request.getFieldsList());
      RequestHeader h = request.getHeader();
      // A shard split or merged while the query ran: run it again on the newer map (a read: nothing to undo), a few times.
      ShardMap map = first;
      for (int attempt = 0; ; attempt++) {
        Table table = map.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), first.epoch()));
        io.shardwise.server.index.IndexPlan chosen = io.shardwise.server.index.IndexPlan.choose(table, where(table, request.getWhere()))
            .orElse(null);
        boolean global = chosen != null && chosen.scope() == io.shardwise.core.doc.IndexDef.Scope.GLOBAL;
        if (global && !request.getHasPartitionKey()) {
          return projected(globals.query(table, chosen, where(table, request.getWhere()), limit, request.getPageToken().toByteArray(),
              request.getConsistent(), deadline, fields).setHeader(header(map, 1)), fields);
        }
        // One partition: its one shard filters it (fewer reads than a posting list and its rows).
        io.shardwise.server.index.IndexPlan index = global ? null : chosen;
        TableQuery.Resume resume = TableQuery.resume(table, request.getPageToken().toByteArray());
        // A query of one partition key reads only that partition, in the one shard that holds it.
        byte[] partition = request.getHasPartitionKey() ? request.getPartitionKey().toByteArray() : null;
        int only = partition == null ? -1 : table.positionOf(table.shardFor(partition).id());
        byte[] lower = partition == null ? new byte[0] : Key.of(partition).encode(); // the partition's first key
        byte[] upper = partition == null ? null : Key.encodedPartitionEnd(partition);
        try {
          return projected(TableQuery.run(table, (position, from, pageRows) -> shardScan(h, table, position, from.length == 0 ? lower : from,
              upper, pageRows, request.getWhere(), index), limit, deadline, resume, attempt < QUERY_ATTEMPTS - 1, index, only)
              .setHeader(header(map, only >= 0 ? 1 : table.shards().size() - resume.position())), fields);
        } catch (TableQuery.StaleMap stale) {
          map = ctx.map().await(Math.max(stale.epoch, map.epoch() + 1), CATCH_UP);
        }
      }
    });
  }

  private static KeyValue row(StoredEntry e) {
    Key k = Key.decode(e.key());
    return KeyValue.newBuilder()
        .setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(k.partitionKey())).setSortKey(ByteString.copyFrom(k.sortKey())))
        .setValue(ByteString.copyFrom(e.value()))
        .setVersion(e.version())
        .build();
  }

  // ------------------------------------------------------------------ transactions

  @Override
  public void transact(io.shardwise.proto.v1.TransactRequest request, StreamObserver<io.shardwise.proto.v1.TransactResponse> out) {
    respond(requests.timed("transact", out), () -> {
      Inline.mayBlock();
      List<io.shardwise.core.txn.TxnItem> items = new ArrayList<>(request.getItemsCount());
      long bytes = 0;
      for (io.shardwise.proto.v1.TxnItem item : request.getItemsList()) {
        items.add(txnItem(item));
        bytes += item.getKey().getPartitionKey().size() + item.getKey().getSortKey().size() + item.getValue().size();
      }
      ctx.limits().checkBatch(items.size(), bytes);
      for (int i = 0; i < items.size(); i++) {
        io.shardwise.core.txn.TxnItem item = items.get(i);
        String what = "item " + i;
        if (item.op() == io.shardwise.core.txn.TxnItem.Op.PUT) {
          checkDocuments(request.getHeader(), item.table(), List.of(request.getItems(i).getValue()), n -> what);
        }
      }
      items.forEach(i -> writableByUser(i.table()));
      io.shardwise.core.txn.TxnOutcome o;
      try {
        o = globals.transact(items, request.getToken().toByteArray(), request.getFirstAttemptMillis(), false);
      } catch (StatusRuntimeException e) {
        awaitIndexedMap(e); // a one-phase commit refused: its table gained a global index (nothing was written)
        o = globals.transact(items, request.getToken().toByteArray(), request.getFirstAttemptMillis(), false);
      }
      return io.shardwise.proto.TxnCodec.response(o).setHeader(header(ctx.map().current(), items.size())).build();
    });
  }

  @Override
  public void txnStatus(io.shardwise.proto.v1.TxnStatusRequest request, StreamObserver<io.shardwise.proto.v1.TransactResponse> out) {
    respond(requests.timed("txn_status", out), () -> {
      Inline.mayBlock();
      return io.shardwise.proto.TxnCodec.response(txns.status(request.getTxnId())).setHeader(header(ctx.map().current(), 1)).build();
    });
  }

  @Override
  public void transactGet(io.shardwise.proto.v1.TransactGetRequest request, StreamObserver<io.shardwise.proto.v1.TransactGetResponse> out) {
    respond(requests.timed("transact_get", out), () -> {
      Inline.mayBlock();
      List<io.shardwise.core.txn.TableKey> keys = new ArrayList<>(request.getItemsCount());
      long bytes = 0;
      for (io.shardwise.proto.v1.TableKeyRef k : request.getItemsList()) {
        if (k.getTable().isEmpty()) {
          throw Errors.invalid("a read transaction's key names its table");
        }
        keys.add(new io.shardwise.core.txn.TableKey(k.getTable(), key(k.getKey())));
        bytes += k.getKey().getPartitionKey().size() + k.getKey().getSortKey().size();
      }
      ctx.limits().checkBatch(keys.size(), bytes);
      io.shardwise.server.txn.Transactions.Snapshot snapshot = txns.read(keys);
      io.shardwise.proto.v1.TransactGetResponse.Builder b = io.shardwise.proto.v1.TransactGetResponse.newBuilder()
          .setHeader(header(ctx.map().current(), keys.size())).setRounds(snapshot.rounds());
      for (io.shardwise.server.txn.Participants.Read r : snapshot.reads()) {
        b.addResults(r.value() == null ? GetResponse.getDefaultInstance()
            : GetResponse.newBuilder().setFound(true).setValue(ByteString.copyFrom(r.value())).setVersion(r.version()).build());
      }
      return b.build();
    });
  }

  /** How many transaction records a purge looks at per shard and round. */
  private static final int TXN_RECORDS_PER_PURGE = 1_000;

  /**
   * Purges the records of transactions decided before {@code cutoffMillis} in the shards this node
   * serves and leads ({@link io.shardwise.server.txn.Transactions#purge}); returns how many went.
   */
  public int purgeTxnRecords(long cutoffMillis) {
    if (ctx.isRouter()) {
      return 0;
    }
    int purged = 0;
    ShardMap map = ctx.map().current();
    for (var local : ctx.shards().all().values()) {
      ShardRef ref = local.ref();
      Table table = map.tableById(ref.tableId()).orElse(null);
      if (table == null || local.state() != io.shardwise.server.shard.LocalShard.State.SERVING
          || table.shards().stream().noneMatch(s -> s.id().number() == ref.shardNumber() && s.owner().equals(ctx.self()))) {
        continue; // a replicated shard's records are purged by its leader, through its log
      }
      try {
        List<io.shardwise.server.txn.Transactions.StoredRecord> records = new ArrayList<>();
        for (var v : ctx.store().txnRecords(ref, TXN_RECORDS_PER_PURGE)) {
          byte[][] at = ref.ofTxnRecord(v.storeKey());
          records.add(new io.shardwise.server.txn.Transactions.StoredRecord(at[0], at[1], v.stored()));
        }
        purged += txns.purge(table.name(), records, cutoffMillis);
      } catch (RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(DataServiceImpl.class).warn("purging the transaction records of shard {} failed: {}",
            map.shardName(ref.tableId(), ref.shardNumber()), e.getMessage());
      }
    }
    return purged;
  }

  /** True if, by this process's map, every item lies in one shard of its table. */
  boolean oneShard(List<io.shardwise.core.txn.TxnItem> items) {
    ShardMap map = ctx.map().current();
    Table table = map.table(items.get(0).table()).orElse(null);
    if (table == null) {
      return false;
    }
    long shard = table.shardFor(items.get(0).key().partitionKey()).id().number();
    for (io.shardwise.core.txn.TxnItem i : items) {
      if (!i.table().equals(table.name()) || table.shardFor(i.key().partitionKey()).id().number() != shard) {
        return false;
      }
    }
    return true;
  }

  /** An item as the client sent it, its key and value within the limits. */
  private io.shardwise.core.txn.TxnItem txnItem(io.shardwise.proto.v1.TxnItem item) {
    Key key = item.getOp() == io.shardwise.proto.v1.TxnItem.Op.CHECK ? key(item.getKey()) : userKey(item.getKey());
    ctx.limits().checkValue(item.getValue().size());
    return io.shardwise.proto.TxnCodec.item(item, key);
  }

  @Override
  public void txnPrepare(io.shardwise.proto.v1.TxnPrepareRequest request, StreamObserver<io.shardwise.proto.v1.TxnPrepareResponse> out) {
    respond(requests.timed("txn_prepare", out), () -> prepare(request));
  }

  /**
   * Writes the intents of {@code request}'s items at their shards, here or at their owners; stops at
   * the first refusal (a failed condition, another transaction's intent), which it answers.
   */
  io.shardwise.proto.v1.TxnPrepareResponse prepare(io.shardwise.proto.v1.TxnPrepareRequest request) {
    List<io.shardwise.core.txn.TxnItem> items = new ArrayList<>(request.getItemsCount());
    List<Key> keys = new ArrayList<>(request.getItemsCount());
    for (io.shardwise.proto.v1.TxnItem item : request.getItemsList()) {
      io.shardwise.core.txn.TxnItem i = txnItem(item);
      items.add(i);
      keys.add(i.key());
    }
    if (request.getOnePhase()) {
      return onePhase(request, items, keys);
    }
    byte[] txnId = request.getTxnId().toByteArray();
    byte[] meta = request.getMeta().toByteArray();
    long planned = io.shardwise.server.txn.Transactions.plannedEpoch(meta);
    byte[][] partitionKeys = partitionKeys(keys);
    long[] versions = new long[items.size()];
    java.util.concurrent.atomic.AtomicReference<io.shardwise.proto.v1.TxnPrepareResponse> refusal = new java.util.concurrent.atomic.AtomicReference<>();
    int touched = router.batch(request.getHeader(), request.getTable(), partitionKeys, true,
        (map, table, indexes) -> fenced(map, table.name(), planned, () -> {
          Map<ShardRef, List<Integer>> byShard = new LinkedHashMap<>();
          for (int i : indexes) {
            byShard.computeIfAbsent(ref(table, table.shardFor(partitionKeys[i])), r -> new ArrayList<>()).add(i);
          }
          for (Map.Entry<ShardRef, List<Integer>> e : byShard.entrySet()) { // each shard's intents atomically
            if (refusal.get() != null) {
              return null;
            }
            List<io.shardwise.core.txn.TxnItem> part = new ArrayList<>(e.getValue().size());
            e.getValue().forEach(i -> part.add(items.get(i)));
            io.shardwise.server.txn.Participants.Prepared p = txnSteps.prepare(e.getKey(), part, txnId, meta);
            if (p.ok()) {
              for (int j = 0; j < part.size(); j++) {
                versions[e.getValue().get(j)] = p.versions()[j];
              }
            } else {
              refusal.compareAndSet(null, RoutedParticipants.response(p).toBuilder().setFailedItem(e.getValue().get(p.failedItem())).build());
              return null;
            }
          }
          return null;
        }),
        (stub, header, indexes) -> {
          if (refusal.get() != null) {
            return;
          }
          io.shardwise.proto.v1.TxnPrepareRequest.Builder sub = request.toBuilder().setHeader(header).clearItems();
          indexes.forEach(i -> sub.addItems(request.getItems(i)));
          io.shardwise.proto.v1.TxnPrepareResponse r = stub.txnPrepare(sub.build());
          if (r.getFailedItem() >= 0) {
            refusal.compareAndSet(null, r.toBuilder().setFailedItem(indexes.get(r.getFailedItem())).build());
            return;
          }
          for (int j = 0; j < indexes.size(); j++) {
            versions[indexes.get(j)] = r.getVersions(j);
          }
        });
    if (refusal.get() != null) {
      return refusal.get().toBuilder().setHeader(header(ctx.map().current(), touched)).build();
    }
    io.shardwise.proto.v1.TxnPrepareResponse.Builder b = io.shardwise.proto.v1.TxnPrepareResponse.newBuilder()
        .setHeader(header(ctx.map().current(), touched)).setFailedItem(-1);
    for (long v : versions) {
      b.addVersions(v);
    }
    return b.build();
  }

  /**
   * A one-phase commit ({@link io.shardwise.server.txn.Participants#onePhase}): served where the
   * items' one shard is, in one atomic write; forwarded whole to its owner; refused (nothing
   * written) if the items lie in more than one shard.
   */
  private io.shardwise.proto.v1.TxnPrepareResponse onePhase(io.shardwise.proto.v1.TxnPrepareRequest request,
      List<io.shardwise.core.txn.TxnItem> items, List<Key> keys) {
    byte[] txnId = request.getTxnId().toByteArray();
    Key anchor = key(request.getAnchor());
    byte[] pending = request.getRecord().toByteArray();
    byte[][] partitionKeys = partitionKeys(keys);
    java.util.concurrent.atomic.AtomicReference<io.shardwise.proto.v1.TxnPrepareResponse> answer = new java.util.concurrent.atomic.AtomicReference<>();
    io.shardwise.proto.v1.TxnPrepareResponse notOneShard = io.shardwise.proto.v1.TxnPrepareResponse.newBuilder().setFailedItem(-1)
        .setNotOneShard(true).build();
    router.batch(request.getHeader(), request.getTable(), partitionKeys, true,
        (map, table, indexes) -> fenced(map, table.name(), 0, () -> { // one phase carries no planning: never for a globally indexed table
          ShardRef shard = ref(table, table.shardFor(partitionKeys[0]));
          if (indexes.size() != items.size() || !shard.equals(ref(table, table.shardFor(anchor.partitionKey())))) {
            answer.set(notOneShard);
            return null;
          }
          for (byte[] pk : partitionKeys) {
            if (!ref(table, table.shardFor(pk)).equals(shard)) {
              answer.set(notOneShard);
              return null;
            }
          }
          io.shardwise.server.txn.Participants.OnePhase r = txnSteps.onePhase(shard, items, txnId, anchor, pending);
          io.shardwise.proto.v1.TxnPrepareResponse.Builder b = r.existing() != null
              ? io.shardwise.proto.v1.TxnPrepareResponse.newBuilder().setFailedItem(-1).setRecord(ByteString.copyFrom(r.existing()))
              : RoutedParticipants.response(r.prepared()).toBuilder();
          answer.set(b.build());
          return null;
        }),
        (stub, header, indexes) -> {
          answer.set(indexes.size() != items.size() ? notOneShard : stub.txnPrepare(request.toBuilder().setHeader(header).build()));
        });
    return answer.get().toBuilder().setHeader(header(ctx.map().current(), 1)).build();
  }

  @Override
  public void txnResolve(io.shardwise.proto.v1.TxnResolveRequest request, StreamObserver<io.shardwise.proto.v1.TxnResolveResponse> out) {
    respond(requests.timed("txn_resolve", out), () -> resolve(request));
  }

  /** Resolves the intents of a transaction on {@code request}'s keys at their shards, here or at their owners. */
  io.shardwise.proto.v1.TxnResolveResponse resolve(io.shardwise.proto.v1.TxnResolveRequest request) {
    List<Key> keys = new ArrayList<>(request.getKeysCount());
    request.getKeysList().forEach(k -> keys.add(key(k)));
    byte[] txnId = request.getTxnId().toByteArray();
    byte[][] partitionKeys = partitionKeys(keys);
    int touched = router.batch(request.getHeader(), request.getTable(), partitionKeys, true,
        (map, table, indexes) -> {
          Map<ShardRef, List<Key>> byShard = new LinkedHashMap<>();
          for (int i : indexes) {
            byShard.computeIfAbsent(ref(table, table.shardFor(partitionKeys[i])), r -> new ArrayList<>()).add(keys.get(i));
          }
          // Inside the fence (never refused): a resolution begun before a new global index lands before the index is drained here.
          boolean documents = table.format() == io.shardwise.core.doc.ValueFormat.JSON;
          byShard.forEach((shard, part) -> {
            if (documents) {
              fence.pass(() -> {
                txnSteps.resolve(shard, part, txnId, request.getCommit());
                return null;
              });
            } else {
              txnSteps.resolve(shard, part, txnId, request.getCommit());
            }
          });
        },
        (stub, header, indexes) -> {
          io.shardwise.proto.v1.TxnResolveRequest.Builder sub = request.toBuilder().setHeader(header).clearKeys();
          indexes.forEach(i -> sub.addKeys(request.getKeys(i)));
          stub.txnResolve(sub.build());
        });
    return io.shardwise.proto.v1.TxnResolveResponse.newBuilder().setHeader(header(ctx.map().current(), touched)).build();
  }

  @Override
  public void txnRecord(io.shardwise.proto.v1.TxnRecordRequest request, StreamObserver<io.shardwise.proto.v1.TxnRecordResponse> out) {
    respond(requests.timed("txn_record", out), () -> record(request));
  }

  /** A step on a transaction's record at its anchor's shard, here or at its owner; answers the record after it. */
  io.shardwise.proto.v1.TxnRecordResponse record(io.shardwise.proto.v1.TxnRecordRequest request) {
    Key anchor = key(request.getAnchor());
    byte[] txnId = request.getTxnId().toByteArray();
    if (txnId.length == 0 || txnId.length > Limits.MAX_REQUEST_ID_BYTES) {
      throw Errors.invalid("a transaction id has 1 to " + Limits.MAX_REQUEST_ID_BYTES + " bytes, not " + txnId.length);
    }
    io.shardwise.server.txn.Participants.RecordStep step = io.shardwise.server.txn.Participants.RecordStep.valueOf(request.getStep().name());
    byte[] proposed = request.getRecord().isEmpty() ? null : request.getRecord().toByteArray();
    if (proposed == null && step != io.shardwise.server.txn.Participants.RecordStep.READ) {
      throw Errors.invalid("a record step other than READ proposes a record");
    }
    return router.keyed(request.getHeader(), request.getTable(), anchor, step != io.shardwise.server.txn.Participants.RecordStep.READ,
        (map, shard) -> {
          byte[] after = txnSteps.record(shard, anchor, txnId, step, proposed);
          io.shardwise.proto.v1.TxnRecordResponse.Builder b = io.shardwise.proto.v1.TxnRecordResponse.newBuilder().setHeader(header(map, 1));
          if (after != null) {
            b.setRecord(ByteString.copyFrom(after));
          }
          return b.build();
        },
        (stub, header) -> stub.txnRecord(request.toBuilder().setHeader(header).build()));
  }

  static StatusRuntimeException moving(ShardFencedException e) {
    return Status.UNAVAILABLE.withDescription(e.getMessage() + "; retry").asRuntimeException();
  }

  /** What {@code tableName}'s values are, by the map at the caller's epoch at least. */
  private io.shardwise.core.doc.ValueFormat formatOf(RequestHeader h, String tableName) {
    ShardMap map = router.mapFor(h);
    return map.table(tableName).orElseThrow(() -> Errors.noSuchTable(tableName, map.epoch())).format();
  }

  /**
   * Refuses a write whose values do not fit its table's format (a JSON table: each value one JSON
   * object), before any of it is written: a batch or a transaction is refused whole. Checked where
   * the request arrives, and again by an owner it is forwarded to (a parse, cheap beside the write).
   *
   * @param what names value i in the refusal ("entry 3")
   */
  private void checkDocuments(RequestHeader h, String tableName, List<ByteString> values, java.util.function.IntFunction<String> what) {
    if (formatOf(h, tableName) != io.shardwise.core.doc.ValueFormat.JSON) {
      return;
    }
    Table table = router.mapFor(h).table(tableName).orElse(null);
    for (int i = 0; i < values.size(); i++) {
      try {
        io.shardwise.proto.Documents.check(values.get(i).toByteArray());
      } catch (io.shardwise.proto.Documents.NotADocumentException e) {
        throw Errors.invalid(what.apply(i) + " is " + e.getMessage() + " (table " + tableName + " holds JSON documents); nothing was"
            + " written");
      }
      if (table != null) {
        io.shardwise.server.index.GlobalIndexes.checkIndexable(table, values.get(i).toByteArray(), what.apply(i));
      }
    }
  }

  static ResponseHeader header(ShardMap map, int shardsTouched) {
    return ResponseHeader.newBuilder().setMapEpoch(map.epoch()).setShardsTouched(shardsTouched).build();
  }

  private static ShardRef ref(Table table, ShardAssignment shard) {
    return ShardRef.of(table, shard.id().number());
  }

  /** The client's write id ({@code null} if it sent none), within the limit. */
  private byte[] requestId(ByteString id) {
    ctx.limits().checkRequestId(id.size());
    return id.isEmpty() ? null : id.toByteArray();
  }

  private Key key(io.shardwise.proto.v1.Key k) {
    ctx.limits().checkKey(k.getPartitionKey().size(), k.getSortKey().size());
    return Key.of(k.getPartitionKey().toByteArray(), k.getSortKey().toByteArray());
  }

  /** A key a put or a delete may name: any but a salted key's sub-key, which only counter operations write. */
  private Key userKey(io.shardwise.proto.v1.Key k) {
    Key key = key(k);
    if (io.shardwise.core.key.Counters.isSubKey(key.partitionKey())) {
      throw Errors.invalid("the partition key ends like a salted counter's sub-key (0x00 0xff 'salt', then 6 bytes); such keys are"
          + " written only by counter operations");
    }
    return key;
  }

  private static String nullToEmpty(String s) {
    return s == null ? "" : s;
  }

  /**
   * How a node's server picks the executor of each call: hot data calls on the network thread
   * ({@link Inline}) when {@code writesOnNetworkThreads} ({@link
   * io.shardwise.server.node.NodeConfig#writesOnNetworkThreads}) and no interceptor (which may
   * block) wraps the calls.
   */
  public static io.grpc.ServerCallExecutorSupplier callExecutors(boolean writesOnNetworkThreads, boolean intercepted) {
    return Inline.callExecutors(writesOnNetworkThreads && !intercepted);
  }

  /**
   * Called by code under a request that is about to wait (for other nodes): on the network thread,
   * where hot calls are served, it throws, and the call runs again from the start off that thread
   * ({@link Inline}); elsewhere it does nothing. Nothing may have been written before it.
   */
  public static void mayBlock() {
    Inline.mayBlock();
  }

  /** Runs a handler and maps its outcome to the stream: a value, or a status naming the problem. */
  static <R> void respond(StreamObserver<R> out, Supplier<R> handler) {
    R result;
    try {
      result = handler.get();
    } catch (Inline.MustBlock e) {
      Inline.BLOCKING.execute(() -> respond(out, handler)); // again from the start, off the event loop
      return;
    } catch (StatusRuntimeException e) {
      out.onError(e);
      return;
    } catch (ShardFencedException e) {
      out.onError(moving(e)); // nothing was done: the caller routes again
      return;
    } catch (IllegalArgumentException e) {
      out.onError(Errors.invalid(e.getMessage()));
      return;
    } catch (io.shardwise.server.storage.StorageException e) {
      // A node stopping while requests were in flight: nothing was done, so the client may retry elsewhere.
      out.onError((e.storeClosed() ? Status.UNAVAILABLE : Status.INTERNAL).withDescription(e.getMessage()).withCause(e).asRuntimeException());
      return;
    } catch (RuntimeException e) {
      out.onError(Status.INTERNAL.withDescription(e.toString()).withCause(e).asRuntimeException());
      return;
    }
    out.onNext(result);
    out.onCompleted();
  }
}
