package io.shardwise.server.move;

import com.google.common.util.concurrent.RateLimiter;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.proto.v1.DropCopyRequest;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.ReceiveShardResponse;
import io.shardwise.proto.v1.ShardChanges;
import io.shardwise.proto.v1.ShardChunk;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.shard.ChangeLog;
import io.shardwise.server.shard.LocalShard;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves one shard from this node (its owner) to another, while it keeps serving (design rule 3):
 *
 * <ol>
 *   <li>track the shard: from now on every written key is recorded in a {@link ChangeLog};
 *   <li>export a consistent snapshot to an SST file and stream it to the destination, which
 *       drops whatever it had of the shard and ingests the file whole;
 *   <li>catch up: send the current stored values of the keys written meanwhile, in rounds, until
 *       a round is small;
 *   <li>pause writes to the shard, send the last keys, pause reads too, and cut over with one
 *       compare-and-set of the map in ZooKeeper (the shard's epoch rises, the destination owns it);
 *   <li>install the new map here before the pause ends, so every paused request is routed again
 *       and answered with WRONG_SHARD (or forwarded) instead of being served here.
 * </ol>
 *
 * <p>Until the compare-and-set is sent nothing has changed for anyone but the destination's unused
 * copy: any failure or a cancel ends the move, drops the copy, and this node remains the owner.
 * Once it is sent, the outcome is read from the map and nothing else; until it is known the shard
 * stays paused here and neither copy is dropped. After the cutover the destination has every
 * acknowledged write; this node keeps its old copy (never served again) for a grace period.
 */
final class ShardMover {

  private static final Logger LOG = LoggerFactory.getLogger(ShardMover.class);
  private static final int CHUNK_BYTES = 1 << 20;
  private static final int CATCH_UP_BATCH_KEYS = 1_000;
  private static final int CATCH_UP_BATCH_BYTES = 4 << 20;
  /** Catch up until a round has at most this many keys, then pause: the pause stays short. */
  private static final int SMALL_ROUND = 256;
  private static final int MAX_ROUNDS = 50;
  private static final Duration CALL_DEADLINE = Duration.ofSeconds(60);

  private final ClusterContext ctx;
  private final Path workDir;
  private final Consumer<ShardMap> applyMap;
  private final MoveShardRequest request;
  private final ShardRef shard;
  private final NodeId to;
  private final MoveMetrics metrics;
  private volatile boolean cancelled;
  private final MoveProgress.Builder progress = MoveProgress.newBuilder();

  ShardMover(ClusterContext ctx, Path workDir, Consumer<ShardMap> applyMap, MoveShardRequest request, ShardRef shard,
      MoveMetrics metrics) {
    this.metrics = metrics;
    this.ctx = ctx;
    this.workDir = workDir;
    this.applyMap = applyMap;
    this.request = request;
    this.shard = shard;
    this.to = NodeId.of(request.getTo());
  }

  void cancel() {
    cancelled = true;
  }

  /**
   * Runs the move, reporting progress; returns once cut over, throws if abandoned. Before the
   * cutover's compare-and-set is sent, any failure abandons the move: the shard serves here again
   * and the destination drops its copy. Once it is sent, only the map decides (see {@link #cutOver}).
   */
  void run(Consumer<MoveProgress> report) {
    ShardAssignment assignment = checkMovable(ctx.map().current());
    String destination = ctx.addressOf(to);
    if (destination == null) {
      throw Status.FAILED_PRECONDITION.withDescription("destination " + to + " is not live").asRuntimeException();
    }
    LocalShard local = ctx.shards().get(shard);
    if (local == null || local.state() != LocalShard.State.SERVING) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + shard + " is not served by " + ctx.self()).asRuntimeException();
    }
    ManagedChannel channel = ctx.peers().channel(destination);
    MoveServiceGrpc.MoveServiceBlockingStub peer = MoveServiceGrpc.newBlockingStub(channel);
    ShardStore store = ctx.store();
    ChangeLog log = local.track();
    metrics.started(log);
    Path file = workDir.resolve("out-" + MoveServiceImpl.fileSafe(request.getMoveId()) + ".sst");
    Outcome outcome = Outcome.ABANDONED;
    try {
      ShardStore.ExportStats exported = store.exportShard(shard, file);
      progress.setPhase(MoveProgress.Phase.COPYING).setTotalBytes(exported.bytes()).setKeys(exported.liveKeys());
      report.accept(progress.build());
      sendSnapshot(channel, exported.entries() == 0 ? null : file, report);
      metrics.sent(exported.bytes(), exported.liveKeys());
      MoveServiceImpl.deleteQuietly(file);

      progress.setPhase(MoveProgress.Phase.CATCHING_UP);
      report.accept(progress.build());
      for (int round = 0; round < MAX_ROUNDS; round++) {
        checkNotCancelled();
        int sent = catchUp(peer, log.drain());
        report.accept(progress.build());
        if (sent <= SMALL_ROUND) {
          break;
        }
      }

      checkNotCancelled();
      long pauseStart = System.nanoTime();
      local.pause(false);
      progress.setPhase(MoveProgress.Phase.PAUSED);
      catchUp(peer, log.drain()); // nothing is written to the shard any more: this is the last of it
      checkNotCancelled();
      local.pause(true); // from here until the new map is installed, reads wait too
      outcome = Outcome.UNKNOWN;
      Optional<ShardMap> stored = cutOver(assignment);
      if (stored.isEmpty()) {
        outcome = Outcome.ABANDONED;
        throw new IllegalStateException("the cutover was not stored: the map still gives shard " + shard + " to " + ctx.self());
      }
      ShardMap next = stored.get();
      outcome = Outcome.CUT_OVER;
      applyMap.accept(next); // hands the local shard off before anyone routes by the new map
      local.resume(); // paused requests route again, to the new owner
      long pausedNanos = System.nanoTime() - pauseStart;
      long pauseMicros = pausedNanos / 1_000;
      metrics.paused(Duration.ofNanos(pausedNanos));
      progress.setPhase(MoveProgress.Phase.DONE).setPauseMicros(pauseMicros).setNewEpoch(next.epoch());
      report.accept(progress.build());
      LOG.info("move {}: shard {}/{} now on {} at epoch {} ({} keys, {} bytes, {} caught up, writes paused {} µs)",
          request.getMoveId(), request.getTable(), request.getNumber(), to, next.epoch(), progress.getKeys(), progress.getTotalBytes(),
          progress.getCaughtUpKeys(), pauseMicros);
    } finally {
      metrics.ended(log);
      MoveServiceImpl.deleteQuietly(file);
      if (outcome == Outcome.ABANDONED) {
        local.resume(); // this node is still the owner: serve again
        dropCopy(peer, assignment);
      } else if (outcome == Outcome.UNKNOWN) {
        // Stopping before the map could be read: the shard stays paused (nothing is served or
        // written here) and neither copy is dropped; after a restart the map decides.
        LOG.warn("move {}: stopping with the cutover of shard {} unresolved; the shard stays paused and both copies are kept",
            request.getMoveId(), shard);
      }
    }
  }

  /** How a move ended, as far as this node knows. */
  private enum Outcome { ABANDONED, UNKNOWN, CUT_OVER }

  private ShardAssignment checkMovable(ShardMap map) {
    ShardAssignment s = map.shard(request.getTableId(), request.getNumber())
        .orElseThrow(() -> Status.FAILED_PRECONDITION.withDescription("no shard " + request.getTable() + "/" + request.getNumber()
            + " (table id " + request.getTableId() + ") in the map at epoch " + map.epoch()).asRuntimeException());
    if (!s.owner().equals(ctx.self())) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + " belongs to " + s.owner() + ", not to " + ctx.self())
          .asRuntimeException();
    }
    if (request.getShardEpoch() != 0 && s.epoch() != request.getShardEpoch()) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + " is at epoch " + s.epoch() + ", the move was planned at "
          + request.getShardEpoch()).asRuntimeException();
    }
    if (to.equals(ctx.self())) {
      throw Status.INVALID_ARGUMENT.withDescription("shard " + s.id() + " already belongs to " + to).asRuntimeException();
    }
    if (!ctx.writable().getAsBoolean()) {
      throw Status.UNAVAILABLE.withDescription("node " + ctx.self() + " is fenced (lost its ZooKeeper session)").asRuntimeException();
    }
    return s;
  }

  /** Streams the snapshot file ({@code null}: empty shard) with flow control and the bandwidth limit. */
  private void sendSnapshot(ManagedChannel channel, Path file, Consumer<MoveProgress> report) {
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
    ShardChunk.Builder first = ShardChunk.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId()).setNumber(shard.shardNumber());
    try {
      if (file == null) {
        stream.onNext(first.setEmptyShard(true).build());
      } else {
        RateLimiter limiter = request.getBandwidthBytesPerSecond() > 0 ? RateLimiter.create(request.getBandwidthBytesPerSecond()) : null;
        long lastReport = System.nanoTime();
        try (InputStream in = Files.newInputStream(file)) {
          // Throttled: chunks of a tenth of a second's worth, so the limit holds smoothly.
          long bandwidth = request.getBandwidthBytesPerSecond();
          byte[] buffer = new byte[bandwidth > 0 ? (int) Math.max(16 << 10, Math.min(CHUNK_BYTES, bandwidth / 10)) : CHUNK_BYTES];
          boolean firstChunk = true;
          for (int n; (n = in.readNBytes(buffer, 0, buffer.length)) > 0; ) {
            checkNotCancelled();
            if (done.isDone()) {
              break; // the destination failed: its error is reported below
            }
            awaitReady(stream, lock, ready, done);
            if (limiter != null) {
              limiter.acquire(n);
            }
            ShardChunk.Builder chunk = firstChunk ? first : ShardChunk.newBuilder();
            stream.onNext(chunk.setData(ByteString.copyFrom(buffer, 0, n)).build());
            firstChunk = false;
            progress.setCopiedBytes(progress.getCopiedBytes() + n);
            if (System.nanoTime() - lastReport > 250_000_000L) {
              report.accept(progress.build());
              lastReport = System.nanoTime();
            }
          }
        }
      }
      stream.onCompleted();
      done.get(CALL_DEADLINE.toSeconds(), TimeUnit.SECONDS);
      progress.setCopiedBytes(progress.getTotalBytes());
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

  private void awaitReady(ClientCallStreamObserver<ShardChunk> stream, ReentrantLock lock, Condition ready, CompletableFuture<?> done)
      throws InterruptedException {
    lock.lock();
    try {
      while (!stream.isReady() && !done.isDone()) {
        checkNotCancelled();
        ready.await(100, TimeUnit.MILLISECONDS);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Sends the stored values of {@code keys} to the destination; returns how many. */
  private int catchUp(MoveServiceGrpc.MoveServiceBlockingStub peer, List<byte[]> keys) {
    int sent = 0;
    while (sent < keys.size()) {
      int end = sent;
      long bytes = 0;
      while (end < keys.size() && end - sent < CATCH_UP_BATCH_KEYS && bytes < CATCH_UP_BATCH_BYTES) {
        bytes += keys.get(end).length;
        end++;
      }
      ShardChanges.Builder changes = ShardChanges.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId())
          .setNumber(shard.shardNumber());
      for (ShardStore.StoredValue v : ctx.store().readStored(keys.subList(sent, end))) {
        StoredValue.Builder b = StoredValue.newBuilder().setStoreKey(ByteString.copyFrom(v.storeKey()));
        if (v.stored() == null) {
          b.setAbsent(true);
        } else {
          b.setStored(ByteString.copyFrom(v.stored()));
        }
        changes.addValues(b);
      }
      ShardChanges batch = changes.build();
      peer.withDeadlineAfter(CALL_DEADLINE.toSeconds(), TimeUnit.SECONDS).applyChanges(batch);
      progress.setCaughtUpKeys(progress.getCaughtUpKeys() + (end - sent));
      metrics.sent(batch.getSerializedSize(), end - sent);
      sent = end;
    }
    return keys.size();
  }

  /**
   * The compare-and-set that gives the shard to the destination. Its outcome is decided only by
   * reading the map: whatever went wrong while it was sent (a lost reply, a Curator retry answered
   * with BadVersion, ZooKeeper unreachable, a check failing inside the change), the map is read
   * again — however long ZooKeeper takes to answer — and shows either the destination owning the
   * shard at a newer epoch (stored) or this node owning it at the planned epoch (not stored).
   *
   * @return the map that gives the shard to the destination, or empty if the cutover was not stored
   * @throws IllegalStateException if the node stops before the map could be read (outcome unknown)
   */
  private Optional<ShardMap> cutOver(ShardAssignment planned) {
    NodeId self = ctx.self();
    try {
      ShardMap stored = ctx.coordinator().updateMap(map -> {
        ShardAssignment now = checkMovable(map);
        if (now.epoch() != planned.epoch()) {
          throw new IllegalStateException("shard " + now.id() + " changed epoch during the move");
        }
        return Optional.of(ShardMapDelta.on(map).moveShard(now.id(), self, to).build());
      });
      ctx.hooks().cutOverStored(shard);
      return Optional.of(stored);
    } catch (RuntimeException e) {
      LOG.warn("move {}: the cutover of shard {} did not answer cleanly ({}); reading the map to learn its outcome",
          request.getMoveId(), shard, e.getMessage());
      return resolveFromMap(planned);
    }
  }

  private Optional<ShardMap> resolveFromMap(ShardAssignment planned) {
    long backoffMillis = 50;
    while (!ctx.store().isClosed()) {
      try {
        ShardMap map = ctx.coordinator().readMapSynced().map();
        Optional<ShardAssignment> now = map.shard(request.getTableId(), request.getNumber());
        if (now.isPresent() && now.get().owner().equals(ctx.self()) && now.get().epoch() == planned.epoch()) {
          return Optional.empty();
        }
        // The destination owns it (or the table was dropped, or it changed hands since): this
        // node must never serve it again, and the destination's copy is not ours to drop.
        return Optional.of(map);
      } catch (RuntimeException unreachable) {
        sleepQuietly(backoffMillis);
        backoffMillis = Math.min(2_000, backoffMillis * 2);
      }
    }
    throw new IllegalStateException("the node stopped before it could read whether the cutover of shard " + shard + " was stored");
  }

  /** Asks the destination to drop its copy; it does so only if the map it reads shows the move did not happen. */
  private void dropCopy(MoveServiceGrpc.MoveServiceBlockingStub peer, ShardAssignment planned) {
    try {
      peer.withDeadlineAfter(10, TimeUnit.SECONDS).dropCopy(DropCopyRequest.newBuilder().setMoveId(request.getMoveId())
          .setTableId(shard.tableId()).setNumber(shard.shardNumber()).setShardEpoch(planned.epoch()).build());
    } catch (RuntimeException e) {
      LOG.info("move {}: the destination's copy was not dropped now ({}); it goes to the destination's trash when it restarts",
          request.getMoveId(), e.getMessage());
    }
  }

  private void checkNotCancelled() {
    if (cancelled) {
      throw Status.CANCELLED.withDescription("move " + request.getMoveId() + " cancelled before its cutover").asRuntimeException();
    }
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
