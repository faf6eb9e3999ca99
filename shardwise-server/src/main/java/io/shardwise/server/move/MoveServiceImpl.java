package io.shardwise.server.move;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.DropCopyRequest;
import io.shardwise.proto.v1.DropCopyResponse;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.ReceiveShardResponse;
import io.shardwise.proto.v1.ShardChanges;
import io.shardwise.proto.v1.ShardChangesResponse;
import io.shardwise.proto.v1.ShardChunk;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Node-to-node shard moves. As the source it runs {@link ShardMover} for the balancer; as the
 * destination it receives the snapshot (an SST file, ingested whole) and the catch-up values of a
 * shard it does not own yet, and drops them again if the move is abandoned.
 *
 * <p>A destination accepts data only for a shard of a table that exists and that it does not own:
 * it can never overwrite a shard it serves.
 */
public final class MoveServiceImpl extends MoveServiceGrpc.MoveServiceImplBase {

  private static final Logger LOG = LoggerFactory.getLogger(MoveServiceImpl.class);

  private final ClusterContext ctx;
  private final Path workDir;
  private final Consumer<ShardMap> applyMap;
  private final Consumer<MoveProgress> listener;
  private final MoveMetrics metrics;
  private final ConcurrentHashMap<String, ShardRef> incoming = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<ShardRef, String> outgoing = new ConcurrentHashMap<>();

  /**
   * @param workDir where snapshots are written and received (inside the node's data directory,
   *     on the store's file system, so ingestion moves files instead of copying them)
   * @param listener hears every progress report of a move from this node
   * @param applyMap installs a map this node has just stored (after a cutover) without waiting for
   *     the ZooKeeper watch
   */
  public MoveServiceImpl(ClusterContext ctx, Path workDir, Consumer<ShardMap> applyMap, Consumer<MoveProgress> listener) {
    this.ctx = ctx;
    this.listener = listener;
    this.metrics = new MoveMetrics(ctx.metrics());
    this.workDir = workDir;
    this.applyMap = applyMap;
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

  /** True while a move into this node is receiving {@code shard}: its data must not be dropped. */
  public boolean receiving(ShardRef shard) {
    return incoming.containsValue(shard);
  }

  // ------------------------------------------------------------------ source

  @Override
  public void moveShard(MoveShardRequest request, StreamObserver<MoveProgress> out) {
    ServerCallStreamObserver<MoveProgress> call = (ServerCallStreamObserver<MoveProgress>) out;
    ShardRef shard = new ShardRef(request.getTableId(), request.getNumber());
    if (outgoing.putIfAbsent(shard, request.getMoveId()) != null) {
      out.onError(Status.ALREADY_EXISTS.withDescription("shard " + request.getTable() + "/" + request.getNumber()
          + " is already being moved (move " + outgoing.get(shard) + ")").asRuntimeException());
      return;
    }
    ShardMover mover = new ShardMover(ctx, workDir, applyMap, request, shard, metrics);
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
      private Path file;
      private FileChannel channel;
      private boolean empty;
      private long bytes;

      @Override
      public void onNext(ShardChunk chunk) {
        try {
          if (shard == null) {
            shard = new ShardRef(chunk.getTableId(), chunk.getNumber());
            moveId = chunk.getMoveId();
            checkNotOwned(shard, moveId);
            ShardRef previous = incoming.put(moveId, shard);
            if (previous != null) {
              throw Errors.invalid("move " + moveId + " is already receiving");
            }
            empty = chunk.getEmptyShard();
            file = workDir.resolve("in-" + fileSafe(moveId) + ".sst");
            if (!empty) {
              channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
            }
          }
          if (channel != null) {
            bytes += chunk.getData().size();
            for (var buffer : chunk.getData().asReadOnlyByteBufferList()) {
              while (buffer.hasRemaining()) {
                channel.write(buffer);
              }
            }
          }
        } catch (IOException e) {
          throw new IllegalStateException("cannot write the received snapshot: " + e.getMessage(), e);
        }
      }

      @Override
      public void onError(Throwable t) {
        cleanUp(true);
      }

      @Override
      public void onCompleted() {
        try {
          if (shard == null) {
            throw Errors.invalid("an empty stream carries no shard");
          }
          if (channel != null) {
            channel.force(false);
            channel.close();
            channel = null;
          }
          ctx.store().ingest(shard, empty ? null : file);
          LOG.info("move {}: received {} bytes of shard {}", moveId, bytes, shard);
          out.onNext(ReceiveShardResponse.newBuilder().setBytes(bytes).build());
          out.onCompleted();
        } catch (RuntimeException | IOException e) {
          cleanUp(true);
          out.onError(Status.INTERNAL.withDescription("ingesting shard " + shard + " failed: " + e.getMessage()).asRuntimeException());
        } finally {
          deleteQuietly(file);
        }
      }

      private void cleanUp(boolean drop) {
        try {
          if (channel != null) {
            channel.close();
          }
        } catch (IOException ignored) {
          // the file is deleted below
        }
        deleteQuietly(file);
        if (moveId != null && drop) {
          incoming.remove(moveId, shard);
          if (!ownedHere(shard)) {
            ctx.store().drop(shard);
          }
        }
      }
    };
  }

  @Override
  public void applyChanges(ShardChanges request, StreamObserver<ShardChangesResponse> out) {
    ShardRef shard = new ShardRef(request.getTableId(), request.getNumber());
    if (!shard.equals(incoming.get(request.getMoveId()))) {
      out.onError(Errors.invalid("move " + request.getMoveId() + " is not receiving shard " + shard));
      return;
    }
    List<ShardStore.StoredValue> values = new ArrayList<>(request.getValuesCount());
    for (StoredValue v : request.getValuesList()) {
      values.add(new ShardStore.StoredValue(v.getStoreKey().toByteArray(), v.getAbsent() ? null : v.getStored().toByteArray()));
    }
    try {
      ctx.store().writeStored(shard, values);
    } catch (IllegalArgumentException e) {
      out.onError(Errors.invalid(e.getMessage()));
      return;
    }
    out.onNext(ShardChangesResponse.getDefaultInstance());
    out.onCompleted();
  }

  @Override
  public void dropCopy(DropCopyRequest request, StreamObserver<DropCopyResponse> out) {
    ShardRef shard = new ShardRef(request.getTableId(), request.getNumber());
    ShardMap map;
    try {
      map = ctx.coordinator().readMapSynced().map(); // the source's word is not enough: read the map
    } catch (RuntimeException e) {
      out.onError(Status.UNAVAILABLE.withDescription("cannot read the map to check the move's outcome: " + e.getMessage())
          .asRuntimeException());
      return;
    }
    applyMap.accept(map);
    if (map.owns(ctx.self(), shard.tableId(), shard.shardNumber()) || ownedHere(shard)) {
      out.onError(Status.FAILED_PRECONDITION.withDescription("move " + request.getMoveId() + ": the map at epoch " + map.epoch()
          + " gives shard " + shard + " to this node; its copy is kept").asRuntimeException());
      return;
    }
    incoming.remove(request.getMoveId(), shard);
    ctx.store().drop(shard); // an incomplete copy this node never served
    out.onNext(DropCopyResponse.getDefaultInstance());
    out.onCompleted();
  }

  /** This node owns {@code shard} now: the move that brought it here is over. */
  public void arrived(ShardRef shard) {
    incoming.values().removeIf(shard::equals);
  }

  private void checkNotOwned(ShardRef shard, String moveId) {
    ShardMap map = ctx.map().current();
    ShardAssignment s = map.shard(shard.tableId(), shard.shardNumber())
        .orElseThrow(() -> Errors.invalid("move " + moveId + ": no shard " + shard + " in the map at epoch " + map.epoch()));
    if (s.owner().equals(ctx.self())) {
      throw Errors.invalid("move " + moveId + ": this node already owns shard " + s.id());
    }
  }

  private boolean ownedHere(ShardRef shard) {
    return ctx.map().current().owns(ctx.self(), shard.tableId(), shard.shardNumber());
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
