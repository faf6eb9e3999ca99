package io.shardwise.server.rpc;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Measurement;
import io.micrometer.core.instrument.Meter;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.MapCodec;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.ClusterStatusRequest;
import io.shardwise.proto.v1.ClusterStatusResponse;
import io.shardwise.proto.v1.GetShardMapRequest;
import io.shardwise.proto.v1.GetShardMapResponse;
import io.shardwise.proto.v1.ShardMapProto;
import io.shardwise.proto.v1.HealthRequest;
import io.shardwise.proto.v1.HealthResponse;
import io.shardwise.proto.v1.ListTrashRequest;
import io.shardwise.proto.v1.ListTrashResponse;
import io.shardwise.proto.v1.Metric;
import io.shardwise.proto.v1.MetricsRequest;
import io.shardwise.proto.v1.MetricsResponse;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.PurgeTrashRequest;
import io.shardwise.proto.v1.PurgeTrashResponse;
import io.shardwise.proto.v1.RestoreTrashRequest;
import io.shardwise.proto.v1.RestoreTrashResponse;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TrashEntry;
import io.shardwise.server.hot.ShardHeat;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.ShardTraffic;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/** The admin API: the shard map for clients, cluster status, per-node shard stats, health. */
public final class AdminServiceImpl extends AdminServiceGrpc.AdminServiceImplBase {

  private final ClusterContext ctx;
  private final TableAdmin tables;
  private final TrashAdmin trash;
  private final io.shardwise.server.index.IndexBuilds indexBuilds;

  /** A router's: it holds no data, has no trash and builds no index. */
  public AdminServiceImpl(ClusterContext ctx, TableAdmin tables) {
    this(ctx, tables, null, null);
  }

  public AdminServiceImpl(ClusterContext ctx, TableAdmin tables, TrashAdmin trash, io.shardwise.server.index.IndexBuilds indexBuilds) {
    this.ctx = ctx;
    this.tables = tables;
    this.trash = trash;
    this.indexBuilds = indexBuilds;
  }

  @Override
  public void listTrash(ListTrashRequest request, StreamObserver<ListTrashResponse> out) {
    DataServiceImpl.respond(out, () -> ListTrashResponse.newBuilder().setNode(ctx.isRouter() ? "" : ctx.self().value())
        .addAllEntries(trash == null ? List.of() : trash.list()).build());
  }

  @Override
  public void restoreTrash(RestoreTrashRequest request, StreamObserver<RestoreTrashResponse> out) {
    DataServiceImpl.respond(out, () -> {
      RestoreTrashResponse.Builder b = RestoreTrashResponse.newBuilder();
      for (long id : request.getIdsList()) {
        b.addRestored(requireTrash().restore(id));
      }
      return b.build();
    });
  }

  @Override
  public void purgeTrash(PurgeTrashRequest request, StreamObserver<PurgeTrashResponse> out) {
    DataServiceImpl.respond(out, () -> PurgeTrashResponse.newBuilder().addAllPurged(requireTrash().purge(request.getIdsList())).build());
  }

  @Override
  public void saltedKeys(io.shardwise.proto.v1.SaltedKeysRequest request,
      StreamObserver<io.shardwise.proto.v1.SaltedKeysResponse> out) {
    DataServiceImpl.respond(out, () -> io.shardwise.proto.v1.SaltedKeysResponse.newBuilder()
        .addAllKeys(io.shardwise.server.hot.Salting.list(ctx.coordinator(), ctx.map().current(), request.getTable())).build());
  }

  private TrashAdmin requireTrash() {
    if (trash == null) {
      throw Status.FAILED_PRECONDITION.withDescription("a router holds no data and has no trash; ask a node").asRuntimeException();
    }
    return trash;
  }

  @Override
  public void getShardMap(GetShardMapRequest request, StreamObserver<GetShardMapResponse> out) {
    DataServiceImpl.respond(out, () -> {
      GetShardMapResponse.Builder b = GetShardMapResponse.newBuilder();
      ShardMap current = ctx.map().current();
      long known = request.getKnownEpoch();
      if (request.getChangesOnly() && known > 0 && known <= current.epoch()) {
        // Only what changed since the caller's map: a move costs one table, not the whole map.
        ShardMapProto.Builder changed = ShardMapProto.newBuilder().setEpoch(current.epoch());
        for (Table t : current.tables().values()) {
          if (t.changedAt() <= known) {
            b.addUnchangedTables(t.name());
          } else if (t.id() <= known) {
            b.addShardChanges(MapCodec.shardChanges(t, known)); // a table the caller has: only its changed shards
          } else {
            changed.addTables(MapCodec.toProto(t));
          }
        }
        b.setChangesOnly(true).setBaseEpoch(known).setMap(changed);
      } else {
        b.setMap(MapCodec.toProto(current));
      }
      ctx.coordinator().liveNodes().values().forEach(n -> b.addNodes(n.toBuilder().setUp(true)));
      return b.build();
    });
  }

  @Override
  public void nodeStats(NodeStatsRequest request, StreamObserver<NodeStatsResponse> out) {
    DataServiceImpl.respond(out, () -> {
      NodeStatsResponse.Builder b = NodeStatsResponse.newBuilder();
      if (ctx.isRouter()) {
        return b.build();
      }
      b.setNode(ctx.self().value());
      if (trash != null && !request.getIndexBuildsOnly()) {
        b.addAllTrash(trash.list());
      }
      if (indexBuilds != null) {
        b.addAllIndexBuilds(indexBuilds.states());
      }
      if (request.getCheckIndexesOf() != 0) {
        long tableId = request.getCheckIndexesOf();
        java.util.List<io.shardwise.core.doc.IndexDef> defined = ctx.store().definedIndexes(tableId);
        ctx.store().checkIndexes(tableId).forEach((indexId, c) -> b.addIndexChecks(io.shardwise.proto.v1.IndexCheck.newBuilder()
            .setNode(ctx.self().value()).setIndexId(indexId)
            .setField(defined.stream().filter(i -> i.id() == indexId).map(io.shardwise.core.doc.IndexDef::field).findFirst().orElse(""))
            .setRows(c.rows()).setEntries(c.entries()).setMissing(c.missing()).setExtra(c.extra())));
      }
      if (request.getIndexBuildsOnly()) {
        return b.build(); // what the controller polls while an index builds: no shard is measured
      }
      ShardMap map = ctx.map().current();
      for (Table t : map.tables().values()) {
        for (int position = 0; position < t.shards().size(); position++) {
          ShardAssignment s = t.shards().get(position);
          if (s.owner().equals(ctx.self())) {
            ShardRef ref = ShardRef.of(t, s.id().number());
            ShardTraffic.Counts served = ctx.store().traffic().counts(ref);
            ShardInfo.Builder shard = ShardInfo.newBuilder().setTable(t.name()).setNumber(s.id().number()).setPosition(position)
                .setOwner(s.owner().value()).setEpoch(s.epoch()).setReads(served.reads()).setWrites(served.writes())
                .setApproximateBytes(ctx.store().approximateBytes(ref));
            if (!request.getSkipSizes()) {
              ShardStore.ShardStats stats = ctx.store().stats(ref);
              shard.setKeys(stats.keys()).setBytes(stats.bytes());
            }
            if (request.getHistorySeconds() > 0 && ctx.heat() != null) {
              io.shardwise.server.hot.ShardRates.History h = ctx.heat().rates().history(ref, request.getHistorySeconds());
              for (int i = 0; i < h.reads().length; i++) {
                shard.addReadsHistory(h.reads()[i]).addWritesHistory(h.writes()[i]);
              }
            }
            if (request.getHotKeys() > 0 && ctx.heat() != null) {
              io.shardwise.server.hot.ShardHeat.Hot hot = ctx.heat().hottest(ref, Math.min(request.getHotKeys(), ShardHeat.KEYS_PER_SHARD));
              shard.setHotSampled(hot.sampled()).setHotSampleEvery(ShardHeat.SAMPLE_EVERY).setHotSampledWrites(hot.sampledWrites())
                  .setHotRisingWrites(hot.rising()).setHotHighestKey(ByteString.copyFrom(hot.highest()));
              for (var e : hot.keys()) {
                shard.addHotKeys(io.shardwise.proto.v1.HotKey.newBuilder().setKey(ByteString.copyFrom(e.key())).setCount(e.count())
                    .setError(e.error()).setReads(e.reads()).setWrites(e.writes()).setMerges(e.merges()));
              }
            }
            if (request.getLoadSplits() && ctx.heat() != null && t.layout().splittable()) {
              loadSplit(shard, ref, ctx.heat().loadSplit(ref));
            }
            b.addShards(shard);
          }
        }
      }
      return b.build();
    });
  }

  private static void loadSplit(ShardInfo.Builder shard, ShardRef ref, ShardHeat.LoadSplit split) {
    if (split.point() == null) {
      shard.setLoadSplitRefusal(split.refusal());
      return;
    }
    byte[] key = split.point().key();
    shard.setHasLoadSplit(true).setLoadSplitLowerShare(split.point().lowerShare())
        .setLoadSplitCounted(split.point().below() + split.point().from());
    if (ref.layout() == ShardRef.Layout.HASH) {
      shard.setLoadSplitHash(java.nio.ByteBuffer.wrap(key).getLong());
    } else {
      shard.setLoadSplitKey(ByteString.copyFrom(key));
    }
  }

  @Override
  public void clusterStatus(ClusterStatusRequest request, StreamObserver<ClusterStatusResponse> out) {
    DataServiceImpl.respond(out, () -> {
      ShardMap map = ctx.map().current();
      NodeStatsPoll.Answers answers = tables.poll();
      Map<String, ShardInfo> stats = TableAdmin.shardStats(answers);
      Map<String, NodeStatsResponse> byNode = new java.util.HashMap<>();
      answers.answers().forEach(a -> byNode.put(a.getNode(), a));
      ClusterStatusResponse.Builder b = ClusterStatusResponse.newBuilder().setMapEpoch(map.epoch());
      Map<NodeId, NodeInfo> live = ctx.coordinator().liveNodes();
      java.util.Set<NodeId> all = new java.util.TreeSet<>(live.keySet());
      map.tables().values().forEach(t -> t.shards().forEach(s -> all.add(s.owner())));
      for (NodeId id : all) {
        NodeInfo.Builder n = live.containsKey(id) ? live.get(id).toBuilder().setUp(true) : NodeInfo.newBuilder().setId(id.value()).setUp(false);
        long shards = 0;
        long keys = 0;
        long bytes = 0;
        for (ShardAssignment s : map.shardsOf(id)) {
          shards++;
          ShardInfo stat = stats.get(s.id().table() + "/" + s.id().number());
          if (stat != null) {
            keys += stat.getKeys();
            bytes += stat.getBytes();
          }
        }
        NodeStatsResponse answer = byNode.get(id.value());
        if (answer != null) {
          n.setTrashEntries(answer.getTrashCount()).setTrashBytes(answer.getTrashList().stream().mapToLong(TrashEntry::getBytes).sum())
              .setSizesKnown(true);
        }
        b.addNodes(n.setShards((int) shards).setKeys(keys).setBytes(bytes));
      }
      map.tables().values().forEach(t -> b.addTables(TableAdmin.info(t, map.epoch(), stats)));
      return b.build();
    });
  }

  @Override
  public void metrics(MetricsRequest request, StreamObserver<MetricsResponse> out) {
    DataServiceImpl.respond(out, () -> {
      MetricsResponse.Builder b = MetricsResponse.newBuilder().setNode(ctx.isRouter() ? "" : ctx.self().value());
      List<Meter> meters = new ArrayList<>(ctx.metrics().getMeters());
      meters.sort(Comparator.comparing(m -> m.getId().getName()));
      for (Meter meter : meters) {
        for (Measurement m : meter.measure()) {
          Metric.Builder metric = Metric.newBuilder().setName(meter.getId().getName()).setStatistic(m.getStatistic().getTagValueRepresentation())
              .setValue(m.getValue());
          if (meter.getId().getBaseUnit() != null) {
            metric.setUnit(meter.getId().getBaseUnit());
          }
          meter.getId().getTags().forEach(t -> metric.putTags(t.getKey(), t.getValue()));
          b.addMetrics(metric);
        }
      }
      return b.build();
    });
  }

  @Override
  public void health(HealthRequest request, StreamObserver<HealthResponse> out) {
    DataServiceImpl.respond(out, () -> {
      boolean serving = ctx.isRouter() || ctx.writable().getAsBoolean();
      return HealthResponse.newBuilder()
          .setServing(serving)
          .setNode(ctx.isRouter() ? "router" : ctx.self().value())
          .setMapEpoch(ctx.map().current().epoch())
          .setDetail(serving ? "serving" : "fenced: waiting to re-read the shard map after losing the ZooKeeper session")
          .build();
    });
  }
}
