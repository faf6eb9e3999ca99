package io.shardwise.server.move;

import io.grpc.Status;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.server.shard.ChangeLog;
import io.shardwise.server.shard.LocalShard;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
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
 *       compare-and-set of the map in ZooKeeper (the shard's epoch rises, the destination owns it),
 *       together with the cutovers of other moves from this node that reach it at the same time
 *       ({@link Cutovers});
 *   <li>install the new map here before the pause ends, so every paused request is routed again
 *       and answered with WRONG_SHARD (or forwarded) instead of being served here.
 * </ol>
 *
 * <p>Until the compare-and-set is sent nothing has changed for anyone but the destination's unused
 * copy: any failure or a cancel ends the move, drops the copy, and this node remains the owner.
 * Once it is sent, the outcome is read from the map and nothing else; until it is known the shard
 * stays paused here and neither copy is dropped. After the cutover the destination has every
 * acknowledged write; this node keeps its old copy (never served again) for a grace period.
 *
 * <p>The protocol talks to the destination only through {@link MoveTarget} and to the map only
 * through {@link io.shardwise.server.coordination.MapStore}, so the move simulation runs this
 * class as it is, with lost replies and crashes at every call.
 */
final class ShardMover {

  private static final Logger LOG = LoggerFactory.getLogger(ShardMover.class);
  private static final int CATCH_UP_BATCH_KEYS = 1_000;
  private static final int CATCH_UP_BATCH_BYTES = 4 << 20;
  /** Catch up until a round has at most this many keys, then pause: the pause stays short. */
  private static final int SMALL_ROUND = 256;
  private static final int MAX_ROUNDS = 50;

  private final MoveNode node;
  private final MoveTarget.Factory targets;
  private final MoveShardRequest request;
  private final ShardRef shard;
  private final NodeId to;
  private final MoveMetrics metrics;
  private final Cutovers cutovers;
  private volatile boolean cancelled;
  private final MoveProgress.Builder progress = MoveProgress.newBuilder();

  ShardMover(MoveNode node, MoveTarget.Factory targets, Cutovers cutovers, MoveShardRequest request, ShardRef shard,
      MoveMetrics metrics) {
    this.metrics = metrics;
    this.cutovers = cutovers;
    this.node = node;
    this.targets = targets;
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
    ShardAssignment assignment = checkMovable(node.map().current());
    LocalShard local = node.shards().get(shard);
    if (local == null || local.state() != LocalShard.State.SERVING) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + shard + " is not served by " + node.self()).asRuntimeException();
    }
    MoveTarget target = targets.open(request, shard);
    ShardEngine store = node.store();
    ChangeLog log = local.track();
    metrics.started(log);
    Path file = node.workDir().resolve("out-" + MoveServiceImpl.fileSafe(request.getMoveId()) + ".sst");
    Outcome outcome = Outcome.ABANDONED;
    try {
      ShardEngine.ExportStats exported = store.exportShard(shard, file);
      progress.setPhase(MoveProgress.Phase.COPYING).setTotalBytes(exported.bytes()).setKeys(exported.liveKeys());
      report.accept(progress.build());
      sendSnapshot(target, exported.entries() == 0 ? null : file, report);
      metrics.sent(exported.bytes(), exported.liveKeys());
      MoveServiceImpl.deleteQuietly(file);

      progress.setPhase(MoveProgress.Phase.CATCHING_UP);
      report.accept(progress.build());
      for (int round = 0; round < MAX_ROUNDS; round++) {
        checkNotCancelled();
        int sent = catchUp(target, log.drain());
        report.accept(progress.build());
        if (sent <= SMALL_ROUND) {
          break;
        }
      }

      checkNotCancelled();
      long pauseStart = System.nanoTime();
      local.pause(false);
      progress.setPhase(MoveProgress.Phase.PAUSED);
      catchUp(target, log.drain()); // nothing is written to the shard any more: this is the last of it
      checkNotCancelled();
      local.pause(true); // from here until the new map is installed, reads wait too
      outcome = Outcome.UNKNOWN;
      Optional<ShardMap> stored = cutOver(assignment);
      if (stored.isEmpty()) {
        outcome = Outcome.ABANDONED;
        throw new IllegalStateException("the cutover was not stored: the map still gives shard " + shard + " to " + node.self());
      }
      ShardMap next = stored.get();
      outcome = Outcome.CUT_OVER;
      node.applyMap().accept(next); // hands the local shard off before anyone routes by the new map
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
        dropCopy(target, assignment);
      } else if (outcome == Outcome.UNKNOWN) {
        // Stopping before the map could be read: the shard stays paused (nothing is served or
        // written here) and neither copy is dropped; after a restart the map decides.
        LOG.warn("move {}: stopping with the cutover of shard {} unresolved; the shard stays paused and both copies are kept",
            request.getMoveId(), request.getTable() + "/" + request.getNumber());
      }
    }
  }

  /** How a move ended, as far as this node knows. */
  private enum Outcome { ABANDONED, UNKNOWN, CUT_OVER }

  private ShardAssignment checkMovable(ShardMap map) {
    ShardAssignment s = map.shard(request.getTableId(), request.getNumber())
        .orElseThrow(() -> Status.FAILED_PRECONDITION.withDescription("no shard " + request.getTable() + "/" + request.getNumber()
            + " (table id " + request.getTableId() + ") in the map at epoch " + map.epoch()).asRuntimeException());
    if (!s.owner().equals(node.self())) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + " belongs to " + s.owner() + ", not to " + node.self())
          .asRuntimeException();
    }
    if (request.getShardEpoch() != 0 && s.epoch() != request.getShardEpoch()) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + " is at epoch " + s.epoch() + ", the move was planned at "
          + request.getShardEpoch()).asRuntimeException();
    }
    if (to.equals(node.self())) {
      throw Status.INVALID_ARGUMENT.withDescription("shard " + s.id() + " already belongs to " + to).asRuntimeException();
    }
    if (!node.writable().getAsBoolean()) {
      throw Status.UNAVAILABLE.withDescription("node " + node.self() + " is fenced (lost its ZooKeeper session)").asRuntimeException();
    }
    return s;
  }

  /** Sends the snapshot file ({@code null}: empty shard), reporting progress and stopping if cancelled. */
  private void sendSnapshot(MoveTarget target, Path file, Consumer<MoveProgress> report) {
    long[] lastReport = {System.nanoTime()};
    target.sendSnapshot(file, bytes -> {
      checkNotCancelled();
      progress.setCopiedBytes(progress.getCopiedBytes() + bytes);
      if (System.nanoTime() - lastReport[0] > 250_000_000L) {
        report.accept(progress.build());
        lastReport[0] = System.nanoTime();
      }
    });
    progress.setCopiedBytes(progress.getTotalBytes());
  }

  /** Sends the stored values of {@code keys} to the destination; returns how many. */
  private int catchUp(MoveTarget target, List<byte[]> keys) {
    int sent = 0;
    while (sent < keys.size()) {
      int end = sent;
      long keyBytes = 0;
      while (end < keys.size() && end - sent < CATCH_UP_BATCH_KEYS && keyBytes < CATCH_UP_BATCH_BYTES) {
        keyBytes += keys.get(end).length;
        end++;
      }
      List<ShardEngine.StoredValue> values = node.store().readStored(keys.subList(sent, end));
      target.applyChanges(values);
      long bytes = 0;
      for (ShardEngine.StoredValue v : values) {
        bytes += v.storeKey().length + (v.stored() == null ? 0 : v.stored().length);
      }
      progress.setCaughtUpKeys(progress.getCaughtUpKeys() + (end - sent));
      metrics.sent(bytes, end - sent);
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
    NodeId self = node.self();
    try {
      ShardMap after = cutovers.cutOver(planned.id(), self, to, map -> {
        ShardAssignment now = checkMovable(map);
        if (now.epoch() != planned.epoch()) {
          throw new IllegalStateException("shard " + now.id() + " changed epoch during the move");
        }
      });
      Optional<ShardMap> decided = decide(after, planned);
      if (decided.isPresent()) {
        node.hooks().cutOverStored(shard);
      }
      return decided;
    } catch (RuntimeException e) {
      LOG.warn("move {}: the cutover of shard {} did not answer cleanly ({}); reading the map to learn its outcome",
          request.getMoveId(), request.getTable() + "/" + request.getNumber(), e.getMessage());
      return resolveFromMap(planned);
    }
  }

  /**
   * What a map read after the cutover was sent says: empty if this node still owns the shard at the
   * planned epoch (not stored); otherwise the map, in which the destination owns it (or the table
   * was dropped, or it changed hands since) — this node must never serve it again, and the
   * destination's copy is not ours to drop.
   */
  private Optional<ShardMap> decide(ShardMap map, ShardAssignment planned) {
    Optional<ShardAssignment> now = map.shard(request.getTableId(), request.getNumber());
    if (now.isPresent() && now.get().owner().equals(node.self()) && now.get().epoch() == planned.epoch()) {
      return Optional.empty();
    }
    return Optional.of(map);
  }

  private Optional<ShardMap> resolveFromMap(ShardAssignment planned) {
    long backoffMillis = 50;
    while (!node.store().isClosed()) {
      try {
        return decide(node.maps().syncedMap(), planned);
      } catch (RuntimeException unreachable) {
        node.sleep().accept(backoffMillis);
        backoffMillis = Math.min(2_000, backoffMillis * 2);
      }
    }
    throw new IllegalStateException("the node stopped before it could read whether the cutover of shard " + shard + " was stored");
  }

  /** Asks the destination to drop its copy; it does so only if the map it reads shows the move did not happen. */
  private void dropCopy(MoveTarget target, ShardAssignment planned) {
    try {
      target.dropCopy(planned.epoch());
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
}
