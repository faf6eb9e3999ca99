package io.shardwise.server.move;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.DropCopyRequest;
import io.shardwise.proto.v1.DropCopyResponse;
import io.shardwise.proto.v1.MergeStoredRequest;
import io.shardwise.proto.v1.MergeStoredResponse;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.ReceiveShardResponse;
import io.shardwise.proto.v1.ShardChanges;
import io.shardwise.proto.v1.ShardChangesResponse;
import io.shardwise.proto.v1.ShardChunk;
import io.shardwise.proto.v1.SizeSplitPointRequest;
import io.shardwise.proto.v1.SizeSplitPointResponse;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.FileReceiver;
import io.shardwise.server.shard.ShardFencedException;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Node-to-node shard moves over gRPC. As the source it runs {@link ShardMover} for the balancer;
 * as the destination it hands what arrives to {@link MoveDestination}. The protocol itself lives
 * in those two classes; this one only turns gRPC calls and streams into their calls.
 */
public final class MoveServiceImpl extends MoveServiceGrpc.MoveServiceImplBase {

  private static final Logger LOG = LoggerFactory.getLogger(MoveServiceImpl.class);

  private final MoveNode node;
  private final MoveTarget.Factory targets;
  private final MoveDestination destination;
  private final Consumer<MoveProgress> listener;
  private final MoveMetrics metrics;
  private final Cutovers cutovers;
  private final ConcurrentHashMap<ShardRef, String> outgoing = new ConcurrentHashMap<>();

  /**
   * @param workDir where snapshots are written and received (inside the node's data directory,
   *     on the store's file system, so ingestion moves files instead of copying them)
   * @param listener hears every progress report of a move from this node
   * @param applyMap installs a newer map on this node (after a cutover, or a map read to decide
   *     a move's outcome) without waiting for the ZooKeeper watch
   */
  public MoveServiceImpl(ClusterContext ctx, Path workDir, Consumer<ShardMap> applyMap, Consumer<MoveProgress> listener) {
    this.node = MoveNode.of(ctx, applyMap, workDir);
    this.targets = GrpcMoveTarget.factory(ctx);
    this.destination = new MoveDestination(node);
    this.listener = listener;
    this.metrics = new MoveMetrics(ctx.metrics());
    this.cutovers = new Cutovers(node.maps(), metrics);
    try {
      Files.createDirectories(workDir);
      try (var old = Files.list(workDir)) {
        for (Path p : (Iterable<Path>) old::iterator) {
          Files.deleteIfExists(p); // left by a move that died with the process
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot prepare the move directory " + workDir + ": " + e.getMessage(), e);
    }
  }

  /** The shard a request names ({@link MoveNode#shardRef}), or {@code null} once {@code out} has been told why there is none. */
  private ShardRef shardOrAnswer(long tableId, long number, StreamObserver<?> out) {
    try {
      return node.shardRef(tableId, number);
    } catch (StatusRuntimeException e) {
      out.onError(e);
      return null;
    }
  }

  /** True while a move into this node is receiving {@code shard}: its data must not be dropped. */
  public boolean receiving(ShardRef shard) {
    return destination.receiving(shard);
  }

  /** True while a move into this node is receiving a shard whose range overlaps {@code range}. */
  public boolean receivingInto(ShardRef range) {
    return destination.receivingInto(range);
  }

  /** This node owns {@code shard} now: the move that brought it here is over. */
  public void arrived(ShardRef shard) {
    destination.arrived(shard);
  }

  // ------------------------------------------------------------------ source

  @Override
  public void moveShard(MoveShardRequest request, StreamObserver<MoveProgress> out) {
    ServerCallStreamObserver<MoveProgress> call = (ServerCallStreamObserver<MoveProgress>) out;
    ShardRef shard = shardOrAnswer(request.getTableId(), request.getNumber(), out);
    if (shard == null) {
      return;
    }
    int factor = node.replicationFactor(request.getTableId());
    if (factor > 1) {
      out.onError(Status.FAILED_PRECONDITION.withDescription("table " + request.getTable() + " keeps " + factor + " replicas of each"
          + " shard: a whole-shard move is for tables of one replica; a replica moves one at a time (a follower built, in sync, the"
          + " lead passed, the old replica removed), as the balancer's plans do").asRuntimeException());
      return;
    }
    if (outgoing.putIfAbsent(shard, request.getMoveId()) != null) {
      out.onError(Status.ALREADY_EXISTS.withDescription("shard " + request.getTable() + "/" + request.getNumber()
          + " is already being moved (move " + outgoing.get(shard) + ")").asRuntimeException());
      return;
    }
    ShardMover mover = new ShardMover(node, targets, cutovers, request, shard, metrics);
    call.setOnCancelHandler(mover::cancel);
    try {
      mover.run(progress -> {
        listener.accept(progress);
        if (!call.isCancelled()) {
          out.onNext(progress);
        }
      });
      out.onCompleted();
    } catch (RuntimeException e) {
      LOG.warn("move {} of {}/{} to {} abandoned: {}", request.getMoveId(), request.getTable(), request.getNumber(), request.getTo(),
          e.getMessage());
      out.onError(e instanceof StatusRuntimeException
          ? e
          : Status.ABORTED.withDescription(e.getMessage()).withCause(e).asRuntimeException());
    } finally {
      outgoing.remove(shard);
    }
  }

  // ------------------------------------------------------------------ destination

  @Override
  public StreamObserver<ShardChunk> receiveShard(StreamObserver<ReceiveShardResponse> out) {
    return new StreamObserver<>() {
      private ShardRef shard;
      private String moveId;
      private FileReceiver file;

      @Override
      public void onNext(ShardChunk chunk) {
        if (shard == null) {
          ShardRef first = node.shardRef(chunk.getTableId(), chunk.getNumber());
          if (chunk.getStoreLayout() != ShardStore.LAYOUT_VERSION && first.layout() != ShardRef.Layout.BUCKET) {
            throw Errors.invalid("move " + chunk.getMoveId() + ": the source sends layout version " + chunk.getStoreLayout()
                + " and this node stores shard " + first + " in layout " + ShardStore.LAYOUT_VERSION
                + "; upgrade every node before moving range and hashrange shards");
          }
          destination.begin(chunk.getMoveId(), first);
          shard = first;
          moveId = chunk.getMoveId();
          file = new FileReceiver(node.workDir().resolve("in-" + fileSafe(moveId) + ".sst"));
        }
        file.write(chunk.getData());
      }

      @Override
      public void onError(Throwable t) {
        cleanUp();
      }

      @Override
      public void onCompleted() {
        try {
          if (shard == null) {
            throw Errors.invalid("an empty stream carries no shard");
          }
          Path received = file.finish();
          destination.ingest(moveId, shard, received, file.bytes());
          out.onNext(ReceiveShardResponse.newBuilder().setBytes(file.bytes()).build());
          out.onCompleted();
        } catch (RuntimeException e) {
          cleanUp();
          out.onError(Status.INTERNAL.withDescription("ingesting shard " + shard + " failed: " + e.getMessage()).asRuntimeException());
        } finally {
          if (file != null) {
            file.delete();
          }
        }
      }

      private void cleanUp() {
        if (file != null) {
          file.delete();
        }
        if (shard != null) {
          destination.abort(moveId, shard);
        }
      }
    };
  }

  @Override
  public void applyChanges(ShardChanges request, StreamObserver<ShardChangesResponse> out) {
    List<ShardEngine.StoredValue> values = new ArrayList<>(request.getValuesCount());
    for (StoredValue v : request.getValuesList()) {
      values.add(new ShardEngine.StoredValue(v.getStoreKey().toByteArray(), v.getAbsent() ? null : v.getStored().toByteArray()));
    }
    try {
      destination.applyChanges(request.getMoveId(), destination.incoming(request.getMoveId())
          .orElseGet(() -> node.shardRef(request.getTableId(), request.getNumber())), values);
    } catch (StatusRuntimeException e) {
      out.onError(e);
      return;
    }
    out.onNext(ShardChangesResponse.getDefaultInstance());
    out.onCompleted();
  }

  @Override
  public void dropCopy(DropCopyRequest request, StreamObserver<DropCopyResponse> out) {
    try {
      destination.dropCopy(request.getMoveId(), destination.incoming(request.getMoveId())
          .orElseGet(() -> node.shardRef(request.getTableId(), request.getNumber())));
    } catch (StatusRuntimeException e) {
      out.onError(e);
      return;
    }
    out.onNext(DropCopyResponse.getDefaultInstance());
    out.onCompleted();
  }

  /** Merges a trash entry's stored values into a shard this node serves (newer versions win). */
  @Override
  public void mergeStored(MergeStoredRequest request, StreamObserver<MergeStoredResponse> out) {
    ShardRef shard = shardOrAnswer(request.getTableId(), request.getNumber(), out);
    if (shard == null) {
      return;
    }
    List<ShardEngine.StoredValue> values = new ArrayList<>(request.getValuesCount());
    for (StoredValue v : request.getValuesList()) {
      values.add(new ShardEngine.StoredValue(v.getStoreKey().toByteArray(), v.getStored().toByteArray()));
    }
    int written;
    try {
      written = node.shards().merge(shard, values);
    } catch (ShardFencedException e) {
      out.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (IllegalArgumentException e) {
      out.onError(Errors.invalid(e.getMessage()));
      return;
    }
    out.onNext(MergeStoredResponse.newBuilder().setWritten(written).build());
    out.onCompleted();
  }

  /**
   * Where this node, the shard's owner, would split it by size ({@link ShardStore#sizeSplitPoint}, a
   * read), or with {@code parts} the points of equal bytes ({@link ShardStore#sizeSplitPoints}).
   */
  @Override
  public void sizeSplitPoint(SizeSplitPointRequest request, StreamObserver<SizeSplitPointResponse> out) {
    ShardRef shard = shardOrAnswer(request.getTableId(), request.getNumber(), out);
    if (shard == null) {
      return;
    }
    if (!(node.store() instanceof ShardStore store)) {
      out.onError(Status.UNIMPLEMENTED.withDescription("this engine finds no split points").asRuntimeException());
      return;
    }
    int parts = request.getParts();
    // Only while this node serves it and no move copies it; the read itself runs outside the fence
    // (its iterators read a consistent view of the data), so a shard of hundreds of MiB read for
    // seconds never holds up a pause, a cutover or a map change. The point is advice: the split's
    // compare-and-set checks the map. (fea6758 tried RocksDB's estimates instead of the read; the
    // nodes read, as CockroachDB's split-key search does.)
    if (node.shards().maintain(shard, () -> Boolean.TRUE).isEmpty()) {
      out.onError(Status.UNAVAILABLE.withDescription("shard " + shard + " is not served here now (moving, or not this node's yet)")
          .asRuntimeException());
      return;
    }
    List<ShardStore.SplitPoint> found = parts > 2 ? store.sizeSplitPoints(shard, parts)
        : store.sizeSplitPoint(shard).map(List::of).orElse(List.of());
    SizeSplitPointResponse.Builder b = SizeSplitPointResponse.newBuilder().setFound(!found.isEmpty());
    for (ShardStore.SplitPoint p : found) {
      com.google.protobuf.ByteString key = p.partitionKey() == null ? com.google.protobuf.ByteString.EMPTY
          : com.google.protobuf.ByteString.copyFrom(p.partitionKey());
      b.setBytes(p.bytes()).setKeys(p.keys());
      if (parts > 2) {
        b.addPoints(io.shardwise.proto.v1.SplitPointAt.newBuilder().setPartitionKey(key).setHash(p.hash()).setBytesBelow(p.bytesBelow()));
      } else {
        b.setPartitionKey(key).setHash(p.hash()).setBytesBelow(p.bytesBelow());
      }
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  static String fileSafe(String id) {
    return id.replaceAll("[^A-Za-z0-9._-]", "_");
  }

  static void deleteQuietly(Path file) {
    if (file == null) {
      return;
    }
    try {
      Files.deleteIfExists(file);
    } catch (IOException ignored) {
      // a leftover file is removed when the node next starts
    }
  }
}
