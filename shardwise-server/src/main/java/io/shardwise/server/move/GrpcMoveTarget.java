package io.shardwise.server.move;

import com.google.common.util.concurrent.RateLimiter;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.DropCopyRequest;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.ReceiveShardResponse;
import io.shardwise.proto.v1.ShardChanges;
import io.shardwise.proto.v1.ShardChunk;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;

/**
 * A move's destination over gRPC: the snapshot as a client stream with flow control and the
 * move's bandwidth limit, catch-up values and the drop request as unary calls.
 */
final class GrpcMoveTarget implements MoveTarget {

  private static final int CHUNK_BYTES = 1 << 20;
  private static final Duration CALL_DEADLINE = Duration.ofSeconds(60);

  private final ManagedChannel channel;
  private final MoveServiceGrpc.MoveServiceBlockingStub peer;
  private final MoveShardRequest request;
  private final ShardRef shard;
  private final NodeId to;

  private GrpcMoveTarget(ManagedChannel channel, MoveShardRequest request, ShardRef shard) {
    this.channel = channel;
    this.peer = MoveServiceGrpc.newBlockingStub(channel);
    this.request = request;
    this.shard = shard;
    this.to = NodeId.of(request.getTo());
  }

  /** Opens destinations through the node's peer channels; a destination must be live. */
  static MoveTarget.Factory factory(ClusterContext ctx) {
    return (request, shard) -> {
      String address = ctx.addressOf(NodeId.of(request.getTo()));
      if (address == null) {
        throw Status.FAILED_PRECONDITION.withDescription("destination " + request.getTo() + " is not live").asRuntimeException();
      }
      return new GrpcMoveTarget(ctx.peers().channel(address), request, shard);
    };
  }

  @Override
  public void sendSnapshot(Path file, LongConsumer sent) {
    CompletableFuture<ReceiveShardResponse> done = new CompletableFuture<>();
    ReentrantLock lock = new ReentrantLock();
    Condition ready = lock.newCondition();
    ClientResponseObserver<ShardChunk, ReceiveShardResponse> responses = new ClientResponseObserver<>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<ShardChunk> requestStream) {
        requestStream.setOnReadyHandler(() -> {
          lock.lock();
          try {
            ready.signalAll();
          } finally {
            lock.unlock();
          }
        });
      }

      @Override
      public void onNext(ReceiveShardResponse value) {
        done.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        done.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {
        done.complete(ReceiveShardResponse.getDefaultInstance());
      }
    };
    ClientCallStreamObserver<ShardChunk> stream = (ClientCallStreamObserver<ShardChunk>) MoveServiceGrpc.newStub(channel)
        .withDeadlineAfter(Math.max(CALL_DEADLINE.toSeconds(), 3600), TimeUnit.SECONDS).receiveShard(responses);
    ShardChunk.Builder first = ShardChunk.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId()).setNumber(shard.shardNumber())
        .setStoreLayout(ShardStore.LAYOUT_VERSION);
    try {
      if (file == null) {
        stream.onNext(first.setEmptyShard(true).build());
      } else {
        RateLimiter limiter = request.getBandwidthBytesPerSecond() > 0 ? RateLimiter.create(request.getBandwidthBytesPerSecond()) : null;
        try (InputStream in = Files.newInputStream(file)) {
          // Throttled: chunks of a tenth of a second's worth, so the limit holds smoothly.
          long bandwidth = request.getBandwidthBytesPerSecond();
          byte[] buffer = new byte[bandwidth > 0 ? (int) Math.max(16 << 10, Math.min(CHUNK_BYTES, bandwidth / 10)) : CHUNK_BYTES];
          boolean firstChunk = true;
          for (int n; (n = in.readNBytes(buffer, 0, buffer.length)) > 0; ) {
            if (done.isDone()) {
              break; // the destination failed: its error is reported below
            }
            awaitReady(stream, lock, ready, done, sent);
            if (limiter != null) {
              limiter.acquire(n);
            }
            sent.accept(n);
            ShardChunk.Builder chunk = firstChunk ? first : ShardChunk.newBuilder();
            stream.onNext(chunk.setData(ByteString.copyFrom(buffer, 0, n)).build());
            firstChunk = false;
          }
        }
      }
      stream.onCompleted();
      done.get(CALL_DEADLINE.toSeconds(), TimeUnit.SECONDS);
    } catch (IOException e) {
      stream.cancel("the snapshot could not be read", e);
      throw new IllegalStateException("reading the snapshot " + file + " failed: " + e.getMessage(), e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("the destination " + to + " did not take the snapshot: " + e.getCause().getMessage(), e);
    } catch (TimeoutException e) {
      stream.cancel("timed out", e);
      throw new IllegalStateException("the destination " + to + " did not confirm the snapshot within " + CALL_DEADLINE.toSeconds() + " s");
    } catch (InterruptedException e) {
      stream.cancel("interrupted", e);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending the snapshot", e);
    } catch (RuntimeException e) {
      stream.cancel("move abandoned", e);
      throw e;
    }
  }

  private static void awaitReady(ClientCallStreamObserver<ShardChunk> stream, ReentrantLock lock, Condition ready,
      CompletableFuture<?> done, LongConsumer sent) throws InterruptedException {
    lock.lock();
    try {
      while (!stream.isReady() && !done.isDone()) {
        sent.accept(0); // lets the source stop a move stuck on a destination that reads nothing
        ready.await(100, TimeUnit.MILLISECONDS);
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void applyChanges(List<ShardEngine.StoredValue> values) {
    ShardChanges.Builder changes = ShardChanges.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId())
        .setNumber(shard.shardNumber());
    for (ShardEngine.StoredValue v : values) {
      StoredValue.Builder b = StoredValue.newBuilder().setStoreKey(ByteString.copyFrom(v.storeKey()));
      if (v.stored() == null) {
        b.setAbsent(true);
      } else {
        b.setStored(ByteString.copyFrom(v.stored()));
      }
      changes.addValues(b);
    }
    peer.withDeadlineAfter(CALL_DEADLINE.toSeconds(), TimeUnit.SECONDS).applyChanges(changes.build());
  }

  @Override
  public void dropCopy(long plannedEpoch) {
    peer.withDeadlineAfter(10, TimeUnit.SECONDS).dropCopy(DropCopyRequest.newBuilder().setMoveId(request.getMoveId())
        .setTableId(shard.tableId()).setNumber(shard.shardNumber()).setShardEpoch(plannedEpoch).build());
  }
}
