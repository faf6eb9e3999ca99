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
  public static Service service(Replicator replicator, ShardResolver shards, Path snapshotDir) {
    java.util.concurrent.atomic.AtomicLong files = new java.util.concurrent.atomic.AtomicLong();
    AnsweredStreams streams = new AnsweredStreams();
    return new Service(streams, new ReplicationServiceGrpc.ReplicationServiceImplBase() {
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
        out.onNext(answer(replicator, shards, request));
        out.onCompleted();
      }

      @Override
      public StreamObserver<AppendRequest> appendStream(StreamObserver<AppendResponse> out) {
        AnsweredStream answers = streams.open(out);
        return new StreamObserver<>() {
          @Override
          public void onNext(AppendRequest request) { // a call's messages come one at a time, in order: answered in order
            AppendResponse answer;
            try {
              answer = answer(replicator, shards, request);
            } catch (RuntimeException e) {
              answers.fail(io.grpc.Status.INTERNAL.withDescription("taking an append failed: " + e).asRuntimeException());
              return;
            }
            answers.answer(answer);
          }

          @Override
          public void onError(Throwable t) {
            answers.forget(); // the leader closed or lost the stream: nothing is owed to it
          }

          @Override
          public void onCompleted() {
            answers.complete();
          }
        };
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
    });
  }

  /**
   * The replication service a node serves ({@link #service}), and the end of its append streams
   * when the node stops: a server stopping gracefully waits for its open calls, and these never end
   * by themselves.
   */
  public static final class Service implements io.grpc.BindableService {
    private final AnsweredStreams streams;
    private final ReplicationServiceGrpc.ReplicationServiceImplBase calls;

    private Service(AnsweredStreams streams, ReplicationServiceGrpc.ReplicationServiceImplBase calls) {
      this.streams = streams;
      this.calls = calls;
    }

    @Override
    public io.grpc.ServerServiceDefinition bindService() {
      return calls.bindService();
    }

    /** Ends every open append stream (its leader opens another, elsewhere or later) and refuses new ones. */
    public void closeStreams() {
      streams.closeAll();
    }
  }

  /** The append streams a follower node answers. */
  private static final class AnsweredStreams {
    private final java.util.Set<AnsweredStream> open = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile boolean closing;

    AnsweredStream open(StreamObserver<AppendResponse> out) {
      AnsweredStream s = new AnsweredStream(out, open);
      open.add(s);
      if (closing) {
        s.fail(io.grpc.Status.UNAVAILABLE.withDescription("this node is stopping").asRuntimeException());
      }
      return s;
    }

    void closeAll() {
      closing = true;
      open.forEach(AnsweredStream::complete);
    }
  }

  /** One append stream's answers: written by its call's messages and by a stopping node, never after it ended. */
  private static final class AnsweredStream {
    private final StreamObserver<AppendResponse> out;
    private final java.util.Set<AnsweredStream> open;
    private boolean ended;

    AnsweredStream(StreamObserver<AppendResponse> out, java.util.Set<AnsweredStream> open) {
      this.out = out;
      this.open = open;
    }

    synchronized void answer(AppendResponse answer) {
      if (!ended) {
        out.onNext(answer);
      }
    }

    synchronized void fail(RuntimeException e) {
      if (!ended) {
        ended = true;
        open.remove(this);
        out.onError(e);
      }
    }

    synchronized void complete() {
      if (!ended) {
        ended = true;
        open.remove(this);
        out.onCompleted();
      }
    }

    synchronized void forget() {
      ended = true;
      open.remove(this);
    }
  }

  /** A follower node's answer to one append message. */
  private static AppendResponse answer(Replicator replicator, ShardResolver shards, AppendRequest request) {
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
    return b.build();
  }

  /**
   * A leader's transport: messages on one stream per follower address ({@link AppendStreams}; a
   * call per message to a node that does not serve the stream), to the follower's address as
   * ZooKeeper lists it; a snapshot as a stream at {@code snapshotBytesPerSecond} at most (0:
   * unlimited).
   *
   * @param answersOnNetworkThread take followers' answers on the network thread that read them
   *     ({@link AppendStreams}); false on nodes that fsync every write, where applying an answer may
   *     wait for a replica's lock held across an fsync (a node passes {@code
   *     NodeConfig.writesOnNetworkThreads()}, as it does for its call executors)
   */
  public static Replicator.Transport transport(Function<NodeId, String> addresses, Function<String, io.grpc.Channel> channels,
      long snapshotBytesPerSecond, boolean answersOnNetworkThread) {
    AppendStreams streams = new AppendStreams(channels, APPEND_DEADLINE_MILLIS, AppendStreams.IDLE_CLOSE_MILLIS, answersOnNetworkThread);
    return new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
        sendAppend(addresses, channels, streams, to, batch, done);
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

  private static void sendAppend(Function<NodeId, String> addresses, Function<String, io.grpc.Channel> channels, AppendStreams streams,
      NodeId to, AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
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
    java.util.function.BiConsumer<AppendResponse, Throwable> answered = (response, failure) -> {
      if (failure != null) {
        done.accept(null, failure);
        return;
      }
      List<ShardReply> replies = new ArrayList<>(response.getShardsCount());
      for (ShardAppendResult r : response.getShardsList()) {
        ShardRef ref = sent.get(new ShardKey(r.getTableId(), r.getNumber()));
        if (ref != null) {
          replies.add(new ShardReply(ref, Outcome.valueOf(r.getOutcome().name()), r.getMatched(), r.getKnownEpoch()));
        }
      }
      done.accept(new AppendReply(NodeId.of(response.getFollower()), response.getMapEpoch(), replies, response.getToken(),
          response.getSentNanos(), response.getStore()), null);
    };
    if (streams.send(address, request.build(), answered)) {
      return;
    }
    var call = ReplicationServiceGrpc.newFutureStub(channels.apply(address)).withDeadlineAfter(APPEND_DEADLINE_MILLIS, TimeUnit.MILLISECONDS)
        .append(request.build());
    Futures.addCallback(call, new FutureCallback<>() {
      @Override
      public void onSuccess(AppendResponse response) {
        answered.accept(response, null);
      }

      @Override
      public void onFailure(Throwable t) {
        answered.accept(null, t);
      }
    }, MoreExecutors.directExecutor());
  }

  /**
   * A leader node's append streams: one per follower address, opened at its first message and
   * again after it broke, on which every message is answered in order (CockroachDB's Raft
   * transport and TiKV's batched Raft messages keep a stream per node pair the same way). A call per
   * message costs a new HTTP/2 stream with its headers coded both ways, and on few cores that was
   * much of replication's cost. A message not answered within the deadline (a leader's: {@link
   * #APPEND_DEADLINE_MILLIS}) cancels its stream, which fails every message on it: each is then
   * lost, as a call past its deadline was. An address that answers UNIMPLEMENTED (a node that
   * serves only {@code Append}) gets a call per message from then on.
   */
  static final class AppendStreams {
    private static final java.util.concurrent.ScheduledThreadPoolExecutor TIMEOUTS = timeouts();

    /** One thread for every leader's message deadlines (a stream's check runs about once a deadline while it is busy). */
    private static java.util.concurrent.ScheduledThreadPoolExecutor timeouts() {
      return new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "shardwise-append-timeouts");
        t.setDaemon(true);
        return t;
      });
    }

    /** A stream that carried nothing for this long is closed (a node that no longer follows any shard this node leads). */
    static final long IDLE_CLOSE_MILLIS = 60_000;

    private final Function<String, io.grpc.Channel> channels;
    private final long deadlineMillis;
    private final long idleCloseMillis;
    private final boolean answersOnNetworkThread;
    private final java.util.concurrent.ConcurrentHashMap<String, Stream> streams = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Set<String> unaryOnly = java.util.concurrent.ConcurrentHashMap.newKeySet();

    AppendStreams(Function<String, io.grpc.Channel> channels, long deadlineMillis) {
      this(channels, deadlineMillis, IDLE_CLOSE_MILLIS, true);
    }

    /**
     * @param answersOnNetworkThread true: answers are taken on the network thread that read them,
     *     not handed to gRPC's executor — what a leader does with one (apply the commit, wake the
     *     writers, send what they woke) never waits, and the hand-off was a thread switch per message
     */
    AppendStreams(Function<String, io.grpc.Channel> channels, long deadlineMillis, long idleCloseMillis, boolean answersOnNetworkThread) {
      this.channels = channels;
      this.deadlineMillis = deadlineMillis;
      this.idleCloseMillis = idleCloseMillis;
      this.answersOnNetworkThread = answersOnNetworkThread;
    }

    /** The streams open now, by follower address. */
    int open() {
      return streams.size();
    }

    /**
     * Sends {@code request} on {@code address}'s stream; false if that address takes a call per
     * message instead. A stream found broken is replaced by one new stream; if that one broke as
     * it opened (a node that refuses at once), the message is lost with its cause, not sent again.
     */
    boolean send(String address, AppendRequest request, java.util.function.BiConsumer<AppendResponse, Throwable> answered) {
      Stream s = streams.get(address);
      for (int attempt = 0; ; attempt++) {
        if (unaryOnly.contains(address)) {
          return false;
        }
        if (s == null) {
          // Opened outside the map: with answers on the calling thread, a stream can fail while it
          // opens, and its close must not remove itself from the map inside computeIfAbsent.
          Stream opened = new Stream(address);
          s = streams.putIfAbsent(address, opened);
          if (s == null) {
            s = opened;
          } else {
            opened.discard(); // another sender opened one first
          }
        }
        if (s.send(request, answered)) {
          return true;
        }
        streams.remove(address, s);
        if (attempt > 0 && !unaryOnly.contains(address)) {
          Throwable why = s.failure();
          answered.accept(null, why != null ? why : new IllegalStateException("the append stream to " + address + " closed as it opened"));
          return true;
        }
        s = null; // it broke meanwhile: open another
      }
    }

    /**
     * One stream: the messages sent and not yet answered, oldest first. Their deadline is checked
     * lazily: one check is scheduled when a message goes out and none is, and it schedules itself
     * again for the oldest message still unanswered — not a timer per message, which would wake the
     * deadline thread for every message sent. A stream idle for {@code idleCloseMillis} (heartbeats
     * keep a follower's busy) is ended the same lazy way, and the next message opens another.
     */
    private final class Stream implements io.grpc.stub.ClientResponseObserver<AppendRequest, AppendResponse> {
      private record Pending(java.util.function.BiConsumer<AppendResponse, Throwable> answered, long sentNanos) {}

      private final String address;
      private final java.util.ArrayDeque<Pending> pending = new java.util.ArrayDeque<>();
      private final io.grpc.stub.ClientCallStreamObserver<AppendRequest> requests;
      private boolean closed;
      private Throwable failure; // why it closed
      private boolean checkScheduled;
      private long lastSentNanos = System.nanoTime();

      @SuppressWarnings("unchecked")
      Stream(String address) {
        this.address = address;
        ReplicationServiceGrpc.ReplicationServiceStub stub = ReplicationServiceGrpc.newStub(channels.apply(address));
        this.requests = (io.grpc.stub.ClientCallStreamObserver<AppendRequest>) (answersOnNetworkThread
            ? stub.withExecutor(MoreExecutors.directExecutor()) : stub).appendStream(this);
        TIMEOUTS.schedule(this::checkIdle, idleCloseMillis, TimeUnit.MILLISECONDS);
      }

      /** Ends the stream if nothing went on it for {@code idleCloseMillis} and nothing waits on it; else checks again then. */
      private void checkIdle() {
        synchronized (this) {
          if (closed) {
            return;
          }
          long left = lastSentNanos + TimeUnit.MILLISECONDS.toNanos(idleCloseMillis) - System.nanoTime();
          if (left > 0 || !pending.isEmpty()) {
            TIMEOUTS.schedule(this::checkIdle, left > 0 ? left : TimeUnit.MILLISECONDS.toNanos(idleCloseMillis), TimeUnit.NANOSECONDS);
            return;
          }
          closed = true; // a send from now on opens another stream
        }
        streams.remove(address, this);
        requests.onCompleted();
      }

      @Override
      public void beforeStart(io.grpc.stub.ClientCallStreamObserver<AppendRequest> call) {
        // nothing: messages are small and one at a time per leader, gRPC buffers what its window holds back
      }

      synchronized boolean send(AppendRequest request, java.util.function.BiConsumer<AppendResponse, Throwable> answered) {
        if (closed) {
          return false;
        }
        lastSentNanos = System.nanoTime();
        pending.add(new Pending(answered, lastSentNanos));
        if (!checkScheduled) {
          checkScheduled = true;
          TIMEOUTS.schedule(this::checkDeadline, deadlineMillis, TimeUnit.MILLISECONDS);
        }
        requests.onNext(request);
        return true;
      }

      /** Cancels the stream if its oldest unanswered message is past the deadline, else checks again when it would be. */
      private void checkDeadline() {
        synchronized (this) {
          Pending oldest = pending.peek();
          if (closed || oldest == null) {
            checkScheduled = false;
            return;
          }
          long left = oldest.sentNanos() + TimeUnit.MILLISECONDS.toNanos(deadlineMillis) - System.nanoTime();
          if (left > 0) {
            TIMEOUTS.schedule(this::checkDeadline, left, TimeUnit.NANOSECONDS);
            return;
          }
          checkScheduled = false;
        }
        requests.cancel("no answer within " + deadlineMillis + " ms", null); // fails every message on it (onError)
      }

      @Override
      public void onNext(AppendResponse response) {
        Pending p;
        synchronized (this) {
          p = pending.poll();
        }
        if (p != null) {
          p.answered().accept(response, null);
        }
      }

      @Override
      public void onError(Throwable t) {
        if (io.grpc.Status.fromThrowable(t).getCode() == io.grpc.Status.Code.UNIMPLEMENTED) {
          unaryOnly.add(address);
        }
        close(t);
      }

      @Override
      public void onCompleted() {
        close(new IllegalStateException("the follower at " + address + " closed the append stream"));
      }

      /** Why the stream closed (null while it is open). */
      synchronized Throwable failure() {
        return failure;
      }

      /** Ends a stream opened in a race another sender won: it carried nothing. */
      void discard() {
        synchronized (this) {
          closed = true;
        }
        requests.cancel("another stream to " + address + " was opened first", null);
      }

      private void close(Throwable why) {
        List<Pending> lost;
        synchronized (this) {
          closed = true;
          if (failure == null) {
            failure = why;
          }
          lost = new ArrayList<>(pending);
          pending.clear();
        }
        streams.remove(address, this);
        for (Pending p : lost) {
          p.answered().accept(null, why);
        }
      }
    }
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
