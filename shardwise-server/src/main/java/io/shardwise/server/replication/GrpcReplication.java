package io.shardwise.server.replication;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.ByteString;
import io.grpc.stub.StreamObserver;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.AppendRequest;
import io.shardwise.proto.v1.AppendResponse;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.ReplicaLogEntry;
import io.shardwise.proto.v1.ReplicaSnapshotChunk;
import io.shardwise.proto.v1.ReplicationServiceGrpc;
import io.shardwise.proto.v1.ShardAppendResult;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.replication.Messages.AppendBatch;
import io.shardwise.server.replication.Messages.AppendReply;
import io.shardwise.server.replication.Messages.Outcome;
import io.shardwise.server.replication.Messages.ShardAppend;
import io.shardwise.server.replication.Messages.ShardReply;
import io.shardwise.server.replication.Messages.SnapshotOffer;
import io.shardwise.server.rpc.FileReceiver;
import io.shardwise.server.rpc.FileUpload;
import io.shardwise.server.storage.LogEntry;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The replication protocol's messages over gRPC: the {@code ReplicationService} a node serves (a
 * follower's end), the {@link Replicator.Transport} a leader sends with, and the protobuf forms of
 * {@link Messages}. Shards travel as table id and number; each end resolves them against the map
 * it has applied.
 */
public final class GrpcReplication {

  /** How long a leader waits for a follower node's answer before it counts the message as lost. */
  private static final long APPEND_DEADLINE_MILLIS = 5_000;

  private GrpcReplication() {}

  /** The shard of table {@code tableId} numbered {@code number} in this node's map, or {@code null} if it has none. */
  public interface ShardResolver {
    ShardRef resolve(long tableId, long number);
  }

  /**
   * A follower node's end of the protocol: hands each message to its {@link Replicator}.
   *
   * @param snapshotDir where snapshots are received before they are installed (on the store's
   *     file system, so installing moves the file in)
   */
  public static ReplicationServiceGrpc.ReplicationServiceImplBase service(Replicator replicator, ShardResolver shards, Path snapshotDir) {
    java.util.concurrent.atomic.AtomicLong files = new java.util.concurrent.atomic.AtomicLong();
    return new ReplicationServiceGrpc.ReplicationServiceImplBase() {
      @Override
      public StreamObserver<ReplicaSnapshotChunk> installSnapshot(StreamObserver<ShardAppendResult> out) {
        return new StreamObserver<>() {
          private ReplicaSnapshotChunk first;
          private ShardRef shard;
          private FileReceiver file;

          @Override
          public void onNext(ReplicaSnapshotChunk chunk) {
            if (first == null) {
              if (chunk.getStoreLayout() != ShardStore.LAYOUT_VERSION) {
                throw Errors.invalid("the leader " + chunk.getLeader() + " sends a snapshot in store layout " + chunk.getStoreLayout()
                    + " and this node stores layout " + ShardStore.LAYOUT_VERSION + "; upgrade every node before replicating");
              }
              first = chunk;
              shard = shards.resolve(chunk.getTableId(), chunk.getNumber());
              file = new FileReceiver(snapshotDir.resolve("in-" + chunk.getTableId() + "-" + chunk.getNumber() + "-"
                  + files.incrementAndGet() + ".sst"));
            }
            file.write(chunk.getData());
          }

          @Override
          public void onError(Throwable t) {
            if (file != null) {
              file.delete();
            }
          }

          @Override
          public void onCompleted() {
            try {
              ShardAppendResult.Builder b = ShardAppendResult.newBuilder();
              if (first == null) {
                throw Errors.invalid("an empty stream carries no snapshot");
              }
              b.setTableId(first.getTableId()).setNumber(first.getNumber());
              if (shard == null) {
                b.setOutcome(ShardAppendResult.Outcome.NOT_REPLICA); // not in this node's map yet (or any more)
              } else {
                ShardReply r = replicator.onSnapshot(NodeId.of(first.getLeader()), new SnapshotOffer(shard, first.getEpoch(),
                    first.getOffset(), first.getOffsetEpoch()), file.finish());
                b.setOutcome(ShardAppendResult.Outcome.valueOf(r.outcome().name())).setMatched(r.matched()).setKnownEpoch(r.knownEpoch());
              }
              out.onNext(b.build());
              out.onCompleted();
            } catch (RuntimeException e) {
              out.onError(e instanceof io.grpc.StatusRuntimeException ? e
                  : io.grpc.Status.INTERNAL.withDescription("installing the snapshot failed: " + e.getMessage()).asRuntimeException());
            } finally {
              if (file != null) {
                file.delete();
              }
            }
          }
        };
      }

      @Override
      public void append(AppendRequest request, StreamObserver<AppendResponse> out) {
        List<ShardAppend> appends = new ArrayList<>(request.getShardsCount());
        List<ShardAppendResult> unknown = new ArrayList<>();
        for (io.shardwise.proto.v1.ShardAppend a : request.getShardsList()) {
          ShardRef ref = shards.resolve(a.getTableId(), a.getNumber());
          if (ref == null) { // not in this node's map yet (or any more)
            unknown.add(ShardAppendResult.newBuilder().setTableId(a.getTableId()).setNumber(a.getNumber())
                .setOutcome(ShardAppendResult.Outcome.NOT_REPLICA).build());
          } else {
            appends.add(fromProto(ref, a));
          }
        }
        AppendReply reply = replicator.onAppend(new AppendBatch(NodeId.of(request.getLeader()), appends, request.getEchoToken(),
            request.getEchoNanos()));
        AppendResponse.Builder b = AppendResponse.newBuilder().setFollower(reply.follower().value()).setMapEpoch(reply.mapEpoch())
            .addAllShards(unknown).setToken(reply.token()).setSentNanos(reply.sentNanos())
            .setStore(reply.store());
        for (ShardReply r : reply.shards()) {
          b.addShards(ShardAppendResult.newBuilder().setTableId(r.shard().tableId()).setNumber(r.shard().shardNumber())
              .setOutcome(ShardAppendResult.Outcome.valueOf(r.outcome().name())).setMatched(r.matched()).setKnownEpoch(r.knownEpoch()));
        }
        out.onNext(b.build());
        out.onCompleted();
      }

      @Override
      public void quiesce(io.shardwise.proto.v1.QuiesceRequest request, StreamObserver<io.shardwise.proto.v1.QuiesceResponse> out) {
        long holdNanos = TimeUnit.MILLISECONDS.toNanos(request.getHoldMillis());
        List<java.util.concurrent.CompletableFuture<Replica.Quiesced>> waits = new ArrayList<>();
        for (long number : request.getNumbersList()) {
          ShardRef ref = shards.resolve(request.getTableId(), number);
          if (ref == null) {
            waits.forEach(w -> w.cancel(false));
            // UNAVAILABLE, not NOT_FOUND: the caller may know a newer map (a split it just stored) than this
            // node has applied; it asks again, and finds the shard gone in the stored map if it is.
            out.onError(io.grpc.Status.UNAVAILABLE.withDescription("no shard " + number + " of table " + request.getTableId()
                + " in this node's map (yet)").asRuntimeException());
            return;
          }
          waits.add(replicator.quiesce(ref, holdNanos));
        }
        java.util.concurrent.CompletableFuture.allOf(waits.toArray(new java.util.concurrent.CompletableFuture<?>[0])).whenComplete((v, t) -> {
          if (t != null) {
            Throwable cause = t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
            out.onError(io.grpc.Status.UNAVAILABLE.withDescription(cause.getMessage()).asRuntimeException());
            return;
          }
          io.shardwise.proto.v1.QuiesceResponse.Builder b = io.shardwise.proto.v1.QuiesceResponse.newBuilder();
          for (int i = 0; i < waits.size(); i++) {
            Replica.Quiesced q = waits.get(i).join();
            if (q != null) {
              b.addShards(io.shardwise.proto.v1.QuiescedShard.newBuilder().setNumber(request.getNumbers(i)).setShardEpoch(q.shardEpoch())
                  .setLastOffset(q.lastOffset()).addAllInSync(q.inSync().stream().map(NodeId::value).toList()));
            }
          }
          out.onNext(b.build());
          out.onCompleted();
        });
      }
    };
  }

  /**
   * A leader's transport: an asynchronous call per message, to the follower's address as ZooKeeper
   * lists it; a snapshot as a stream at {@code snapshotBytesPerSecond} at most (0: unlimited).
   */
  public static Replicator.Transport transport(Function<NodeId, String> addresses, Function<String, io.grpc.Channel> channels,
      long snapshotBytesPerSecond) {
    return new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
        sendAppend(addresses, channels, to, batch, done);
      }

      @Override
      public void sendSnapshot(NodeId to, NodeId from, SnapshotOffer offer, Path file, java.util.function.BiConsumer<ShardReply, Throwable> done) {
        String address = addresses.apply(to);
        if (address == null) {
          done.accept(null, new IllegalStateException(to + " is not live"));
          return;
        }
        ShardAppendResult r;
        try {
          ReplicaSnapshotChunk.Builder head = ReplicaSnapshotChunk.newBuilder().setLeader(from.value()).setTableId(offer.shard().tableId())
              .setNumber(offer.shard().shardNumber()).setEpoch(offer.epoch()).setOffset(offer.offset()).setOffsetEpoch(offer.offsetEpoch())
              .setStoreLayout(ShardStore.LAYOUT_VERSION);
          r = FileUpload.<ReplicaSnapshotChunk, ShardAppendResult>send(
              answers -> ReplicationServiceGrpc.newStub(channels.apply(address)).withDeadlineAfter(1, TimeUnit.HOURS).installSnapshot(answers),
              (isFirst, data) -> (isFirst ? head : ReplicaSnapshotChunk.newBuilder()).setData(data).build(),
              file, snapshotBytesPerSecond, bytes -> { }, java.time.Duration.ofSeconds(60), "the follower " + to);
        } catch (RuntimeException e) {
          done.accept(null, e);
          return;
        }
        done.accept(r == null ? null : new ShardReply(offer.shard(), Outcome.valueOf(r.getOutcome().name()), r.getMatched(), r.getKnownEpoch()),
            r == null ? new IllegalStateException(to + " did not answer the snapshot") : null);
      }
    };
  }

  private static void sendAppend(Function<NodeId, String> addresses, Function<String, io.grpc.Channel> channels, NodeId to,
      AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
    String address = addresses.apply(to);
    if (address == null) {
      done.accept(null, new IllegalStateException(to + " is not live"));
      return;
    }
    Map<ShardKey, ShardRef> sent = new HashMap<>();
    AppendRequest.Builder request = AppendRequest.newBuilder().setLeader(batch.leader().value()).setEchoToken(batch.echoToken())
        .setEchoNanos(batch.echoNanos());
    for (ShardAppend a : batch.shards()) {
      request.addShards(toProto(a));
      sent.put(new ShardKey(a.shard().tableId(), a.shard().shardNumber()), a.shard());
    }
    var call = ReplicationServiceGrpc.newFutureStub(channels.apply(address)).withDeadlineAfter(APPEND_DEADLINE_MILLIS, TimeUnit.MILLISECONDS)
        .append(request.build());
    Futures.addCallback(call, new FutureCallback<>() {
      @Override
      public void onSuccess(AppendResponse response) {
        List<ShardReply> replies = new ArrayList<>(response.getShardsCount());
        for (ShardAppendResult r : response.getShardsList()) {
          ShardRef ref = sent.get(new ShardKey(r.getTableId(), r.getNumber()));
          if (ref != null) {
            replies.add(new ShardReply(ref, Outcome.valueOf(r.getOutcome().name()), r.getMatched(), r.getKnownEpoch()));
          }
        }
        done.accept(new AppendReply(NodeId.of(response.getFollower()), response.getMapEpoch(), replies, response.getToken(),
            response.getSentNanos(), response.getStore()), null);
      }

      @Override
      public void onFailure(Throwable t) {
        done.accept(null, t);
      }
    }, MoreExecutors.directExecutor());
  }

  private record ShardKey(long tableId, long number) {}

  static io.shardwise.proto.v1.ShardAppend toProto(ShardAppend a) {
    io.shardwise.proto.v1.ShardAppend.Builder b = io.shardwise.proto.v1.ShardAppend.newBuilder().setTableId(a.shard().tableId())
        .setNumber(a.shard().shardNumber()).setEpoch(a.epoch()).setPrevOffset(a.prevOffset()).setPrevEpoch(a.prevEpoch())
        .setCommit(a.commit()).setLeaderLast(a.leaderLast()).setLeaderReady(a.leaderReady());
    for (LogEntry e : a.entries()) {
      ReplicaLogEntry.Builder entry = ReplicaLogEntry.newBuilder().setOffset(e.offset()).setEpoch(e.epoch());
      for (ShardEngine.StoredValue v : e.effects()) {
        StoredValue.Builder sv = StoredValue.newBuilder().setStoreKey(ByteString.copyFrom(v.storeKey()));
        if (v.stored() == null) {
          sv.setAbsent(true);
        } else {
          sv.setStored(ByteString.copyFrom(v.stored()));
        }
        entry.addEffects(sv);
      }
      b.addEntries(entry);
    }
    return b.build();
  }

  static ShardAppend fromProto(ShardRef shard, io.shardwise.proto.v1.ShardAppend a) {
    List<LogEntry> entries = new ArrayList<>(a.getEntriesCount());
    for (ReplicaLogEntry e : a.getEntriesList()) {
      List<ShardEngine.StoredValue> effects = new ArrayList<>(e.getEffectsCount());
      for (StoredValue v : e.getEffectsList()) {
        effects.add(new ShardEngine.StoredValue(v.getStoreKey().toByteArray(), v.getAbsent() ? null : v.getStored().toByteArray()));
      }
      entries.add(new LogEntry(e.getOffset(), e.getEpoch(), effects));
    }
    return new ShardAppend(shard, a.getEpoch(), a.getPrevOffset(), a.getPrevEpoch(), entries, a.getCommit(), a.getLeaderLast(),
        a.getLeaderReady());
  }
}
