package io.shardwise.server.replication;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.server.replication.Messages.Outcome;
import io.shardwise.server.replication.Messages.ShardAppend;
import io.shardwise.server.replication.Messages.ShardReply;
import io.shardwise.server.replication.Messages.SnapshotOffer;
import io.shardwise.server.storage.LogEntry;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ReplicaStorage;
import io.shardwise.server.storage.ReplicaStorage.LogState;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.VersionMismatchException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * One shard's replica on this node, and the replication protocol for it: Kafka's leader and
 * in-sync replicas, with Raft's log matching.
 *
 * <p><b>The leader</b> orders the shard's writes. A write is evaluated (versions, conditions, write
 * ids) against the shard's data with the effects of the entries appended and not yet applied on top,
 * and its effects — the stored values it leaves — become the next entry of the shard's log,
 * appended here durably, in one step under this replica's lock. The entry is sent to every follower ({@link Replicator}); it is <em>committed</em> once
 * every in-sync replica holds it, and only then applied to the leader's data and acknowledged.
 * So the data of every replica only ever holds committed writes, reads of it never see a write
 * that could still be lost, and a replica that returns from a crash never has to undo anything in
 * its data — only a log suffix, which is not data yet.
 *
 * <p><b>A follower</b> takes the leader's entries if its log matches the leader's just before them
 * (the entry at {@code prevOffset} has {@code prevEpoch}); otherwise it says so and the leader
 * goes back until they match, and the follower replaces its divergent suffix. It applies its log
 * up to the leader's commit. It refuses entries of an older leader epoch than it knows.
 *
 * <p><b>In sync.</b> The map (changed only by compare-and-set in ZooKeeper) names the in-sync
 * followers. The leader asks to drop a follower that has not been caught up for {@code lagMax},
 * and to take back one that has caught up to its commit ({@link #inSyncChange}); until the map says
 * so, it waits for every follower the map names. A follower joins only once it has taken an append
 * that reached the end of the leader's log, and with it dropped any deposed leader's entries the
 * leader lacks; the in-sync followers a new leader inherits do the same before it is ready. So a new
 * leader is only ever an in-sync follower: it has every committed entry and nothing no leader since
 * has held; it commits its whole log before it serves anything ({@link #ready}).
 *
 * <p>Thread-safe: the state is guarded by this object; futures complete outside the lock.
 */
final class Replica {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Replica.class);

  /** What this node is for the shard. */
  enum Role { LEADER, FOLLOWER, GONE }

  /** A refusal that happened before anything was appended: the write was not applied and may be retried. */
  static final class NotApplied extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final Reason reason;

    enum Reason { NOT_LEADER, NOT_READY, NOT_ENOUGH_REPLICAS }

    NotApplied(Reason reason, String message) {
      super(message, null, false, false);
      this.reason = reason;
    }
  }

  /** A write whose entry was appended but whose fate this replica will not learn: it may yet be committed by another leader. */
  static final class OutcomeUnknown extends RuntimeException {
    private static final long serialVersionUID = 1L;

    OutcomeUnknown(String message) {
      super(message, null, false, false);
    }
  }

  /** A linearizable read waiting for every in-sync follower to confirm this node still leads. */
  private static final class ReadWaiter {
    final long seq; // its arrival among this replica's reads: waiters are released in this order, not by their identity hashes
    final CompletableFuture<Void> confirmed = new CompletableFuture<>();
    final java.util.Set<NodeId> pending;

    ReadWaiter(long seq, java.util.Collection<NodeId> followers) {
      this.seq = seq;
      pending = new java.util.HashSet<>(followers);
    }
  }

  /** What the leader knows of one follower. */
  private static final class Progress {
    long next; // the next offset to send
    long match; // the highest offset known to equal the leader's log
    long caughtUpNanos; // when it last held everything the leader had
    long answeredNanos; // when it last answered OK: a follower that stops answering leaves the in-sync set even when nothing is written
    long leftNanos = Long.MIN_VALUE; // when the map last took it out of the in-sync set: it joins again only after answering since
    // Messages to it that failed (not delivered, or not answered within the transport's deadline)
    // since its last answer, and when the first of them failed: see #unreachable.
    int failedSends;
    long failingSinceNanos;
    boolean needsSnapshot;
    boolean snapshotInFlight;
    long snapshotFailedNanos = Long.MIN_VALUE;
    long refusedLoggedNanos = Long.MIN_VALUE / 2;
    long sentNanos = Long.MIN_VALUE / 2; // when an append of this shard last went to it
    ShardAppend lastSent; // that append: an OK to it is what a read lease counts from
    // When the latest append it answered OK to was built (leaseFrom set): this leader's read lease
    // from it runs until then plus ReplicationConfig#leaderLeaseNanos.
    long leaseFromNanos;
    boolean leaseFrom;
    // It answered OK to an append that reached the end of this leader's log, so it holds no older
    // leader's entries this leader lacks (see dropOlderLeadersSuffix): only then may it join the in-sync set.
    boolean trimmed;
    // It answered from another store than before (its data directory was replaced): it leaves the
    // in-sync set at the next look, whatever it answers meanwhile, until the map no longer has it there.
    boolean replaced;
    String store; // the store it answered from last (ShardEngine#storeId): what its match is about
    // The highest offset it is known to have applied: it answered OK to an append whose commit and
    // end both reach this far (a follower applies up to the commit before it answers).
    long appliedSeen;
    // Reads that need this follower to confirm the leader with an append sent after they arrived:
    // first waiting for the next send, then for the reply to it.
    List<ReadWaiter> awaitingSend = new ArrayList<>();
    final Map<ShardAppend, List<ReadWaiter>> awaitingReply = new java.util.IdentityHashMap<>();

    Progress(long next, long now) {
      this.next = next;
      this.caughtUpNanos = now;
      this.answeredNanos = now;
    }
  }

  private final NodeId self;
  private final ShardRef ref;
  private final ShardEngine engine;
  private final ReplicaStorage storage;
  private final LongSupplier nanos;
  private final ReplicationConfig config;
  private final Runnable changed;
  /** The leader's appended, unapplied effects by store key (the newest entry's for each key): what writes are evaluated against. */
  private final Map<java.nio.ByteBuffer, Pending> pending = new HashMap<>();

  private Role role = Role.FOLLOWER;
  private NodeId leader;
  private long leaderEpoch; // the newest leader epoch known
  private long shardEpoch; // the shard's epoch in the newest map applied
  // A follower's freshness, on this node's clock: its data holds every write acknowledged before it
  // (see Messages.AppendBatch: the time a reply of ours was sent, echoed with a commit we applied).
  private long freshNanos = Long.MIN_VALUE;
  private long installs; // snapshots installed (or being installed): a read that spans one is not answered
  private boolean installing; // a snapshot is going in, outside this replica's lock: appends and reads wait
  // Leader only:
  private final Map<NodeId, Progress> progress = new HashMap<>();
  private List<NodeId> inSync = List.of();
  private int minInSync = 1;
  private long commit;
  private long readyAt; // the leader's last offset when it took over: committed before it serves
  private CompletableFuture<Void> ready = new CompletableFuture<>();
  private final TreeMap<Long, List<CompletableFuture<Void>>> waiters = new TreeMap<>();
  private long readsWaited; // read waiters made so far (their order)
  /** Writes under way here, by the record keys of their write ids: a retry joins its original. */
  private final Map<java.nio.ByteBuffer, CompletableFuture<long[]>> inProgress = new HashMap<>();
  // An in-sync change asked of the map and not yet seen in it (the map may have stored it even if
  // the answer was lost): until the map moves past proposedAt, commits wait for the followers of
  // both the current and the proposed set, so a follower the map may already name in sync is never
  // left out of a commit (Kafka's "maximal ISR", KIP-497).
  private List<NodeId> proposed;
  private Map<NodeId, String> proposedStores = Map.of();
  private long proposedAt;
  private boolean proposalFailed;
  // A split or merge of this shard is under way ({@link #quiesce}): writes are refused until then.
  private long heldUntilNanos = Long.MIN_VALUE;
  private final List<CompletableFuture<Quiesced>> quiesced = new ArrayList<>();
  // The shard epoch a quiesce reported (-1: none): a cut guarded by it may still be stored, so writes
  // wait until the map has moved past it — by the cut, or by this leader's fence (see inSyncChange).
  private long cutAt = -1;
  // The table's version floor in the newest map applied (Replication#versionFloor): a key with nothing stored is written above it.
  private long versionFloor;
  // Until when (this node's clock) this replica promised a leader it followed not to serve as a
  // leader itself: that leader may serve reads on its lease until then (see #readBarrier). A new
  // replica, as after a restart, assumes it promised just now: a promise lives in memory only.
  private long promisedUntilNanos;

  /**
   * @param changed called (outside any lock) when the leader has something new to send: an entry
   *     appended, or a commit its followers have not heard of
   */
  Replica(NodeId self, ShardRef ref, ShardEngine engine, LongSupplier nanos, ReplicationConfig config, Runnable changed) {
    this.changed = changed;
    this.self = self;
    this.ref = ref;
    this.engine = engine;
    this.storage = engine.replicaStorage();
    this.nanos = nanos;
    this.config = config;
    this.promisedUntilNanos = nanos.getAsLong() + config.followerLeaseNanos();
  }

  ShardRef ref() {
    return ref;
  }

  synchronized Role role() {
    return role;
  }

  synchronized long leaderEpoch() {
    return leaderEpoch;
  }

  /** The followers to send to (a leader's), in no particular order. */
  synchronized List<NodeId> followers() {
    return role == Role.LEADER ? new ArrayList<>(progress.keySet()) : List.of();
  }

  synchronized long commit() {
    return role == Role.LEADER ? commit : storage.state(ref).appliedOffset();
  }

  /** The log and applied position as stored. */
  LogState logState() {
    return storage.state(ref);
  }

  // ------------------------------------------------------------------ the map

  /**
   * Brings the replica in line with the map's assignment of the shard (this node a replica of it
   * there): leads, follows, or takes a new in-sync set. Futures to complete go to {@code after}.
   */
  synchronized void update(ShardAssignment a, io.shardwise.core.map.Replication replication, List<Runnable> after) {
    versionFloor = Math.max(versionFloor, replication.versionFloor()); // a table change, not the shard's: its epoch may not move
    int minInSyncReplicas = replication.minInSync();
    if (a.epoch() < shardEpoch) {
      return; // an older map than one already applied
    }
    shardEpoch = a.epoch();
    if (!neverStarted() && storage.state(ref).lastEpoch() < replication.since()) {
      // Left from an earlier time the table kept replicas (a crash before it was dropped, or a copy
      // awaiting the trash): writes taken since without a log are not in it, so it must never match.
      LOG.info("shard {}: dropping a replication log older than the table's replication (its last epoch {} < {})", ref,
          storage.state(ref).lastEpoch(), replication.since());
      storage.forget(ref);
    }
    if (cutAt >= 0 && shardEpoch > cutAt) {
      cutAt = -1; // no cut guarded by that epoch can be stored any more
    }
    if (proposed != null && a.epoch() > proposedAt) {
      proposed = null; // the map moved on: it holds the proposal, or the proposal can no longer apply
    }
    if (a.owner().equals(self)) {
      if (role != Role.LEADER || leaderEpoch != a.leaderEpoch()) {
        takeOver(a, after);
      }
      minInSync = minInSyncReplicas;
      long now = nanos.getAsLong();
      for (NodeId f : inSync) {
        Progress p = progress.get(f);
        if (p != null && !a.inSync().contains(f)) {
          p.leftNanos = now; // out (by this leader, or by the controller because its node left ZooKeeper)
          p.replaced = false;
        }
      }
      inSync = a.inSync();
      LogState s = storage.state(ref);
      java.util.Set<ReadWaiter> reads = waitingReads(); // before a removed follower takes its waiters with it
      progress.keySet().retainAll(a.followers());
      for (NodeId f : a.followers()) {
        progress.computeIfAbsent(f, n -> new Progress(s.lastOffset() + 1, now));
      }
      advanceCommit(after); // a smaller in-sync set may commit at once
      releaseReads(reads, after);
      checkQuiesced(after);
    } else {
      if (role == Role.LEADER) {
        stepDown("shard " + ref + " is led by " + a.owner() + " from epoch " + a.leaderEpoch(), after);
      }
      role = Role.FOLLOWER;
      if (a.leaderEpoch() >= leaderEpoch) {
        leaderEpoch = a.leaderEpoch();
        leader = a.owner();
      }
    }
  }

  /** This node is no longer a replica of the shard. */
  synchronized void remove(List<Runnable> after) {
    if (role == Role.LEADER) {
      stepDown("shard " + ref + " is no longer replicated on " + self, after);
    }
    role = Role.GONE;
  }

  /** Becomes the leader at {@code a.leaderEpoch()}: it must commit its whole log before it serves. */
  private void takeOver(ShardAssignment a, List<Runnable> after) {
    if (role == Role.LEADER) {
      stepDown("shard " + ref + " changed leader epoch", after);
    }
    role = Role.LEADER;
    leader = self;
    leaderEpoch = a.leaderEpoch();
    if (neverStarted() && engine.holdsAny(ref)) {
      startLogOverData(leaderEpoch); // data no entry of its log brought: a cut's half, or replication just turned on
    }
    LogState s = storage.state(ref);
    commit = s.appliedOffset(); // everything applied was committed
    readyAt = s.lastOffset(); // entries after it were appended by an earlier leader: commit them first
    progress.clear();
    ready = new CompletableFuture<>();
  }

  /** True if this replica's log never started: no entry, no snapshot, no start over data. */
  private boolean neverStarted() {
    LogState s = storage.state(ref);
    return s.baseOffset() == 0 && s.lastOffset() == 0;
  }

  /**
   * Starts the log at offset 1 of leader epoch {@code epoch}, with no entry: the shard's data here
   * is the log's state at 1. A log's entries are not the whole of a shard's data when the shard
   * began as a cut's half (or merged shard) over its parents' data, or when its table began to keep
   * replicas over data written before: a follower whose log matches at offset 0 would then take the
   * entries alone and lack that data. So the leader's log starts at 1, and a follower holding none
   * of it answers a mismatch there and gets a snapshot. The cut's own replicas (which hold the
   * parents' data as of the cut) start theirs at the same place ({@link #startLogAtCut}) and take
   * the entries only.
   */
  private void startLogOverData(long epoch) {
    storage.reset(ref, 1, epoch);
    LOG.debug("shard {}: log starts over the data here at offset 1 of leader epoch {}", ref, epoch);
  }

  /**
   * A follower that held the whole of this shard's parents ({@code parents}: the replicas of the
   * shards a split or merge replaced, still here) at the cut starts its log where the leader of
   * the cut starts its own ({@link #startLogOverData}): at 1, of the leader epoch the cut gave the
   * shard. Only if the parents are whole — each applied to the end of its log, which a quiesced
   * cut leaves on every in-sync replica — and hold something in this shard's span (as the leader
   * decides); otherwise the log stays unstarted and the leader sends a snapshot. Starting here
   * with a leader epoch other than the leader's only costs a snapshot as well.
   */
  synchronized void startLogAtCut(List<Replica> parents, long epoch) {
    if (!neverStarted() || parents.isEmpty()) {
      return;
    }
    for (Replica p : parents) {
      LogState ps = p.logState();
      if (ps.appliedOffset() != ps.lastOffset() || ps.lastOffset() == 0) {
        return;
      }
    }
    if (engine.holdsAny(ref)) {
      startLogOverData(epoch);
    }
  }

  /** Stops leading: appended writes not yet applied end with an unknown outcome (another leader may commit them). */
  private void stepDown(String why, List<Runnable> after) {
    role = Role.FOLLOWER;
    heldUntilNanos = Long.MIN_VALUE;
    cutAt = -1; // a new leader is a new shard epoch: no cut guarded by the old one can be stored
    List<CompletableFuture<Quiesced>> quiesceWaiters = new ArrayList<>(quiesced);
    quiesced.clear();
    NotApplied notLeader = new NotApplied(NotApplied.Reason.NOT_LEADER, why);
    after.add(() -> quiesceWaiters.forEach(f -> f.completeExceptionally(notLeader)));
    pending.clear(); // what was appended and not applied is the next leader's to commit or not
    CompletableFuture<Void> wasReady = ready;
    after.add(() -> wasReady.completeExceptionally(new NotApplied(NotApplied.Reason.NOT_LEADER, why)));
    ready = new CompletableFuture<>();
    List<CompletableFuture<Void>> pending = new ArrayList<>();
    waiters.values().forEach(pending::addAll);
    waiters.clear();
    OutcomeUnknown unknown = new OutcomeUnknown(why + "; a write it had appended may still be committed by the new leader");
    after.add(() -> pending.forEach(f -> f.completeExceptionally(unknown)));
    failReads(why, after);
    progress.clear();
  }

  // ------------------------------------------------------------------ the leader's writes

  /**
   * Applies {@code batch} (all of it in this shard) through the log: completes with the results
   * once its entry is committed and applied here, or fails — {@link NotApplied} when nothing was
   * appended, {@link OutcomeUnknown} when an entry was and its fate is not known here.
   */
  CompletableFuture<long[]> write(List<Mutation> batch) {
    List<java.nio.ByteBuffer> ids = new ArrayList<>();
    for (Mutation m : batch) {
      if (m.requestId() != null) {
        ids.add(java.nio.ByteBuffer.wrap(m.shard().recordKey(m.key(), m.requestId())));
      }
    }
    CompletableFuture<Void> whenReady;
    CompletableFuture<long[]> mine = new CompletableFuture<>();
    synchronized (this) {
      if (role != Role.LEADER) {
        return CompletableFuture.failedFuture(new NotApplied(NotApplied.Reason.NOT_LEADER, "this node does not lead shard " + ref));
      }
      // A retry of a write still in progress here gets that write's answer: evaluated on its own it
      // could find no record of it yet (a mismatch, say) and then see it applied after all.
      for (java.nio.ByteBuffer id : ids) {
        CompletableFuture<long[]> original = inProgress.get(id);
        if (original != null) {
          return original;
        }
      }
      ids.forEach(id -> inProgress.put(id, mine));
      whenReady = ready;
    }
    whenReady.thenCompose(v -> evaluateAndAppend(batch)).whenComplete((r, t) -> {
      synchronized (this) {
        ids.forEach(id -> inProgress.remove(id, mine));
      }
      if (t != null) {
        mine.completeExceptionally(t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t);
      } else {
        mine.complete(r);
      }
    });
    return mine;
  }

  /**
   * Evaluates the batch against the shard as its log will leave it — its data, with the effects of
   * the entries appended and not yet applied on top ({@link #pending}) — and appends its effects,
   * in one step under this replica's lock: so a write never waits for the one before it to be
   * replicated, and an entry only ever follows the entries it was evaluated against (if one of them
   * is never committed, neither is it: a log commits a prefix). Returns the future of its
   * application here.
   */
  private CompletableFuture<long[]> evaluateAndAppend(List<Mutation> batch) {
    CompletableFuture<Void> applied = new CompletableFuture<>();
    List<Runnable> after = new ArrayList<>();
    long[] results = null;
    VersionMismatchException mismatch = null;
    boolean readOnly;
    synchronized (this) {
      checkCanWrite();
      try {
        ShardEngine.Evaluation e = engine.evaluate(batch, key -> {
          Pending p = pending.get(java.nio.ByteBuffer.wrap(key));
          return p == null ? null : p.stored == null ? ShardEngine.REMOVED : p.stored;
        }, versionFloor);
        results = e.results();
        readOnly = e.effects().isEmpty();
        if (!readOnly) {
          LogState s = storage.state(ref);
          LogEntry entry = new LogEntry(s.lastOffset() + 1, leaderEpoch, e.effects());
          storage.append(ref, List.of(entry));
          for (ShardEngine.StoredValue v : e.effects()) {
            pending.put(java.nio.ByteBuffer.wrap(v.storeKey()), new Pending(entry.offset(), v.stored()));
          }
          waiters.computeIfAbsent(entry.offset(), o -> new ArrayList<>(1)).add(applied);
          advanceCommit(after); // alone in sync: committed at once
          if (!progress.isEmpty()) {
            after.add(changed);
          }
        }
      } catch (VersionMismatchException refused) {
        mismatch = refused;
        readOnly = true;
      }
      if (readOnly) {
        // Nothing to append (a refusal, a retry answered from its record, a delete of nothing): an
        // answer read from the shard as its log will leave it. It may rest on entries not committed
        // yet, so it waits until everything appended before it is (if one never is, the answer is
        // never given), and then for the read barrier (a deposed leader would answer stale).
        long dependsOn = storage.state(ref).lastOffset();
        waiters.computeIfAbsent(dependsOn, o -> new ArrayList<>(1)).add(applied);
        advanceCommit(after);
      }
    }
    after.forEach(Runnable::run);
    if (mismatch != null) {
      VersionMismatchException m = mismatch;
      return applied.thenCompose(v -> readBarrier()).thenCompose(v -> CompletableFuture.<long[]>failedFuture(m));
    }
    long[] answer = results;
    return readOnly ? applied.thenCompose(v -> readBarrier()).thenApply(v -> answer) : applied.thenApply(v -> answer);
  }

  /** A stored value an appended entry leaves, not applied yet. */
  private record Pending(long offset, byte[] stored) {}

  private void checkCanWrite() {
    if (role != Role.LEADER) {
      throw new NotApplied(NotApplied.Reason.NOT_LEADER, "this node no longer leads shard " + ref);
    }
    if (!ready.isDone()) {
      throw new NotApplied(NotApplied.Reason.NOT_READY, "shard " + ref + " has a new leader that is still committing its log");
    }
    if (held(nanos.getAsLong()) || cutAt >= shardEpoch) {
      throw new NotApplied(NotApplied.Reason.NOT_READY, "shard " + ref + " is being split or merged: writes wait until it is");
    }
    if (1 + inSync.size() < minInSync) {
      throw new NotApplied(NotApplied.Reason.NOT_ENOUGH_REPLICAS, "shard " + ref + " has " + (1 + inSync.size())
          + " in-sync replica" + (inSync.isEmpty() ? "" : "s") + " " + inSyncNames() + "; writes need " + minInSync);
    }
  }

  private String inSyncNames() {
    List<String> names = new ArrayList<>();
    names.add(self.value());
    inSync.forEach(n -> names.add(n.value()));
    return names.toString();
  }

  /** Completes once this leader has committed its log (at once if it already has); fails if it stops leading. */
  synchronized CompletableFuture<Void> whenReady() {
    return role == Role.LEADER ? ready : CompletableFuture.failedFuture(new NotApplied(NotApplied.Reason.NOT_LEADER,
        "this node does not lead shard " + ref));
  }

  // ------------------------------------------------------------------ purging write-id records

  /**
   * Removes, through the log, up to {@code limit} of the shard's write-id records written before
   * {@code cutoffMillis}: one entry of removals, which every replica applies, so all of them keep
   * the same records (one replica purging on its own would answer a retry differently from the
   * next leader). The records are found outside this replica's lock (a record changes only by such
   * a removal); a record with an entry pending is left for the next time. Leader only, and not
   * while writes are held or refused: completes with how many were removed once the entry is
   * committed and applied here, 0 if nothing was appended.
   */
  CompletableFuture<Integer> purgeRecords(long cutoffMillis, int limit) {
    synchronized (this) {
      if (role != Role.LEADER || !ready.isDone()) {
        return CompletableFuture.completedFuture(0);
      }
    }
    List<byte[]> expired = engine.expiredRequestRecords(ref, cutoffMillis, limit);
    if (expired.isEmpty()) {
      return CompletableFuture.completedFuture(0);
    }
    return removeThroughTheLog(() -> {
      List<ShardEngine.StoredValue> removals = new ArrayList<>(expired.size());
      for (byte[] key : expired) {
        if (!pending.containsKey(java.nio.ByteBuffer.wrap(key))) {
          removals.add(new ShardEngine.StoredValue(key, null));
        }
      }
      return removals;
    });
  }

  /**
   * Appends one entry of the removals {@code choose} returns (called under this replica's lock,
   * once writes are allowed; none: nothing appended); completes with how many once the entry is
   * committed and applied here, or with 0 at once if nothing was appended.
   */
  private CompletableFuture<Integer> removeThroughTheLog(java.util.function.Supplier<List<ShardEngine.StoredValue>> choose) {
    CompletableFuture<Void> applied = new CompletableFuture<>();
    List<Runnable> after = new ArrayList<>();
    int removed;
    synchronized (this) {
      try {
        checkCanWrite();
      } catch (NotApplied refused) {
        return CompletableFuture.completedFuture(0);
      }
      removed = appendRemovals(choose.get(), applied, after);
    }
    after.forEach(Runnable::run);
    return removed == 0 ? CompletableFuture.completedFuture(0) : applied.thenApply(v -> removed);
  }

  /** Appends one entry of {@code removals} (none: nothing appended), whose application completes {@code applied}; returns how many. */
  private int appendRemovals(List<ShardEngine.StoredValue> removals, CompletableFuture<Void> applied, List<Runnable> after) {
    if (removals.isEmpty()) {
      return 0;
    }
    LogEntry entry = new LogEntry(storage.state(ref).lastOffset() + 1, leaderEpoch, removals);
    storage.append(ref, List.of(entry));
    waiters.computeIfAbsent(entry.offset(), o -> new ArrayList<>(1)).add(applied);
    advanceCommit(after);
    if (!progress.isEmpty()) {
      after.add(changed);
    }
    return removals.size();
  }

  /**
   * Removes {@code tombstones} (found by {@link ShardEngine#expiredTombstones}, outside this lock)
   * through the log: one entry of removals that every replica applies. Only those still stored as
   * found and with no entry pending (a write that came meanwhile keeps its key), and only once the
   * table's version floor in the map this leader applied covers each removed version: a key written
   * later where nothing is stored gets a version above it here and on every later leader (they
   * apply the map with the floor before they lead), so a purged key never comes back at a version a
   * client has seen. Completes with how many were removed once committed and applied here.
   */
  CompletableFuture<Integer> purgeTombstones(List<ShardEngine.StoredValue> tombstones) {
    return removeThroughTheLog(() -> {
      List<ShardEngine.StoredValue> removals = new ArrayList<>(tombstones.size());
      for (ShardEngine.StoredValue t : tombstones) {
        byte[] now = engine.stored(t.storeKey());
        if (!pending.containsKey(java.nio.ByteBuffer.wrap(t.storeKey())) && now != null && java.util.Arrays.equals(now, t.stored())
            && engine.versionOf(now) <= versionFloor) {
          removals.add(new ShardEngine.StoredValue(t.storeKey(), null));
        }
      }
      return removals;
    });
  }

  // ------------------------------------------------------------------ splits and merges

  /**
   * The shard as a split or merge may cut it: every write accepted is committed and applied, here
   * and on each in-sync follower ({@code inSync}, as the map at {@code shardEpoch} names them), up
   * to {@code lastOffset}, the end of the log.
   */
  record Quiesced(long lastOffset, long shardEpoch, List<NodeId> inSync) {}

  /**
   * Quiesces the shard for a split or merge (Kafka and Raft have no such step; CockroachDB splits
   * through its log instead): writes are refused for {@code holdNanos} (or until {@link #release}),
   * and the future completes once the shard is {@link Quiesced} — every in-sync follower has
   * answered an append whose commit covers the whole log, so it has applied all of it, and the
   * halves (or the merged shard) can start logs of their own on every replica with the same data.
   * Fails if this node stops leading, or if the hold ends first (seen at the next reply or map
   * change; the caller's deadline ends the wait in any case). Holding again extends the hold.
   *
   * <p>Once a quiesce has completed, its caller may cut the shard at the epoch it reported at any
   * time, however late its compare-and-set arrives: so writes resume only once the map has moved
   * past that epoch — by the cut (this replica then goes), or, when the hold ends or is released
   * without one, by a fence this leader stores first: an in-sync change to the same set, which
   * raises the shard's epoch ({@link #inSyncChange}). A write accepted after the hold and lost by a
   * late cut is so ruled out without comparing clocks.
   */
  CompletableFuture<Quiesced> quiesce(long holdNanos) {
    CompletableFuture<Quiesced> f = new CompletableFuture<>();
    List<Runnable> after = new ArrayList<>();
    synchronized (this) {
      if (role != Role.LEADER) {
        return CompletableFuture.failedFuture(new NotApplied(NotApplied.Reason.NOT_LEADER, "this node does not lead shard " + ref));
      }
      heldUntilNanos = nanos.getAsLong() + holdNanos;
      quiesced.add(f);
      checkQuiesced(after);
      after.add(changed); // the followers hear the commit at once
    }
    after.forEach(Runnable::run);
    return f;
  }

  /** Whether writes are held for a split or merge at {@code now}. */
  private boolean held(long now) {
    return heldUntilNanos != Long.MIN_VALUE && now - heldUntilNanos < 0;
  }

  /** Ends a hold: the split or merge it was for did not happen. */
  synchronized void release() {
    heldUntilNanos = Long.MIN_VALUE;
  }

  /** Completes the quiesce waiters if the shard is quiesced now. */
  private void checkQuiesced(List<Runnable> after) {
    if (quiesced.isEmpty() || role != Role.LEADER || !ready.isDone()) {
      return;
    }
    if (!held(nanos.getAsLong())) {
      List<CompletableFuture<Quiesced>> late = new ArrayList<>(quiesced);
      quiesced.clear();
      NotApplied notInTime = new NotApplied(NotApplied.Reason.NOT_READY, "shard " + ref + " was not quiesced while writes were held");
      after.add(() -> late.forEach(f -> f.completeExceptionally(notInTime)));
      return;
    }
    LogState s = storage.state(ref);
    if (s.appliedOffset() < s.lastOffset() || commit < s.lastOffset()) {
      return;
    }
    for (NodeId f : maximalInSync()) {
      Progress p = progress.get(f);
      if (p == null || p.appliedSeen < s.lastOffset() || !p.trimmed) {
        return;
      }
    }
    Quiesced q = new Quiesced(s.lastOffset(), shardEpoch, List.copyOf(inSync));
    cutAt = shardEpoch;
    List<CompletableFuture<Quiesced>> done = new ArrayList<>(quiesced);
    quiesced.clear();
    after.add(() -> done.forEach(f -> f.complete(q)));
  }

  // ------------------------------------------------------------------ the leader's side of replication

  /**
   * What to send {@code follower} now: entries from where it stands, or only the commit when it
   * has everything ({@code heartbeat}: even if it knows the commit already); null when there is
   * nothing to say or this node does not lead.
   */
  synchronized ShardAppend nextAppend(NodeId follower, boolean heartbeat) {
    Progress p = progress.get(follower);
    if (role != Role.LEADER || p == null || p.needsSnapshot) {
      return null;
    }
    LogState s = storage.state(ref);
    if (p.next <= s.baseOffset()) {
      p.needsSnapshot = true; // what it lacks is no longer in the log
      return null;
    }
    long prev = p.next - 1;
    long prevEpoch = storage.epochOf(ref, prev);
    List<LogEntry> entries = p.next <= s.lastOffset()
        ? storage.read(ref, p.next, config.maxEntriesPerAppend(), config.maxBytesPerAppend()) : List.of();
    long now = nanos.getAsLong();
    // A heartbeat is due per shard, not per follower node: while other shards keep the node's
    // messages busy, an idle shard must still be heard from, or its follower looks silent and
    // leaves the in-sync set (and then the shard refuses writes).
    boolean due = heartbeat || now - p.sentNanos >= config.heartbeat().toNanos()
        || (held(now) && p.appliedSeen < commit); // a quiesce waits for it to apply the commit: tell it now
    if (entries.isEmpty() && !due && p.match >= s.lastOffset() && p.match >= commit && p.awaitingSend.isEmpty()) {
      return null; // it has everything; the commit it knows may lag, which the next heartbeat fixes
    }
    p.sentNanos = now;
    ShardAppend a = new ShardAppend(ref, leaderEpoch, prev, prevEpoch, entries, commit, s.lastOffset(), ready.isDone());
    p.lastSent = a;
    if (!p.awaitingSend.isEmpty()) {
      p.awaitingReply.put(a, p.awaitingSend); // its OK reply confirms this leader for them
      p.awaitingSend = new ArrayList<>();
    }
    return a;
  }

  /**
   * The leader epoch to put on a snapshot for {@code follower}, which now needs one (its next entry
   * is no longer in the log) and has none on its way; -1 if it needs none, or this node does not
   * lead. A snapshot that failed is tried again after a heartbeat's wait.
   */
  synchronized long startSnapshot(NodeId follower) {
    Progress p = progress.get(follower);
    if (role != Role.LEADER || p == null || !p.needsSnapshot || p.snapshotInFlight
        || (p.snapshotFailedNanos != Long.MIN_VALUE && nanos.getAsLong() - p.snapshotFailedNanos < config.heartbeat().toNanos() * 10)) {
      return -1;
    }
    p.snapshotInFlight = true;
    return leaderEpoch;
  }

  /** How a snapshot for {@code follower} ended: its reply, or {@code failure}. */
  synchronized void onSnapshotReply(NodeId follower, SnapshotOffer sent, ShardReply reply, Throwable failure, List<Runnable> after) {
    Progress p = progress.get(follower);
    if (role != Role.LEADER || sent == null || sent.epoch() != leaderEpoch || p == null) {
      return;
    }
    p.snapshotInFlight = false;
    if (failure != null || reply == null || reply.outcome() != Outcome.OK) {
      p.snapshotFailedNanos = nanos.getAsLong();
      return;
    }
    p.needsSnapshot = false;
    p.answeredNanos = nanos.getAsLong();
    // Its log now ends at the snapshot. Only an append's answer, which names the store it comes
    // from, raises its match: the next one, from here, confirms it.
    p.next = Math.max(reply.matched(), storage.state(ref).baseOffset()) + 1;
    after.add(changed); // the entries after the snapshot, next
  }

  /**
   * Drops applied entries from the log but the last {@code logRetainEntries} (a leader also keeps
   * what any follower it waits for still lacks): a follower further behind gets a snapshot. Trims
   * in steps of half the retention, so the log is not rewritten for every entry.
   */
  synchronized void trimLog() {
    if (role == Role.GONE) {
      return;
    }
    LogState s = storage.state(ref);
    long upTo = s.appliedOffset() - config.logRetainEntries();
    if (role == Role.LEADER) {
      for (NodeId f : maximalInSync()) {
        Progress p = progress.get(f);
        upTo = Math.min(upTo, p == null ? 0 : p.match);
      }
    }
    if (upTo > s.baseOffset() && upTo - s.baseOffset() >= Math.max(1, config.logRetainEntries() / 2)) {
      storage.trim(ref, upTo);
    }
  }

  /**
   * The read barrier (Raft's ReadIndex, on the replication messages): completes once every follower
   * a commit waits for has answered OK to an append this leader sent after the call. A follower
   * answers OK only while it knows no newer leader epoch of the shard, and the map makes a new
   * leader only of such a follower, so whatever this node's data holds then includes every write
   * acknowledged by anyone before the call: a read of it is linearizable. Without this, a leader
   * cut off from ZooKeeper and from its followers would go on answering reads from data that a new
   * leader elsewhere has since overwritten. Fails with {@link NotApplied} if this node does not
   * (or no longer) lead.
   *
   * <p><b>Read lease</b> (Raft's leader lease, §6.4.1 of its thesis; TiKV and CockroachDB read on
   * leases too). A follower that answers this leader promises not to serve as a leader itself for
   * {@code readLease} on its own clock ({@link #follow}); the leader counts {@link
   * ReplicationConfig#LEASE_MARGIN} of that from before it built the append answered. While every
   * follower a commit waits for has so answered within its lease, no other replica can serve or
   * commit anything — a new leader must be one of them, and it waits for its promise to end before
   * it is ready ({@link #checkReady}) — so the read needs no round at all. This rests on the nodes'
   * clocks running at rates within that margin of each other (not on their agreeing on the time);
   * a lease of zero leaves the barrier alone.
   */
  CompletableFuture<Void> readBarrier() {
    CompletableFuture<Void> whenReady;
    synchronized (this) {
      if (role != Role.LEADER) {
        return CompletableFuture.failedFuture(new NotApplied(NotApplied.Reason.NOT_LEADER, "this node does not lead shard " + ref));
      }
      if (ready.isDone() && leased()) {
        return CompletableFuture.completedFuture(null);
      }
      whenReady = ready;
    }
    return whenReady.thenCompose(v -> {
      ReadWaiter w;
      synchronized (this) {
        if (role != Role.LEADER) {
          return CompletableFuture.failedFuture(new NotApplied(NotApplied.Reason.NOT_LEADER, "this node no longer leads shard " + ref));
        }
        List<NodeId> followers = maximalInSync();
        if (followers.isEmpty()) {
          return CompletableFuture.completedFuture(null); // no other replica can lead while this one is alone in sync
        }
        w = new ReadWaiter(readsWaited++, followers);
        for (NodeId f : followers) {
          Progress p = progress.get(f);
          if (p == null) {
            w.pending.remove(f);
          } else {
            p.awaitingSend.add(w);
          }
        }
        if (w.pending.isEmpty()) {
          return CompletableFuture.completedFuture(null);
        }
      }
      changed.run(); // an append to each of them soon
      return w.confirmed;
    });
  }

  /** True if this leader holds a read lease now: every follower a commit waits for answered it within its lease. */
  private boolean leased() {
    long lease = config.leaderLeaseNanos();
    if (lease == 0) {
      return false;
    }
    long now = nanos.getAsLong();
    for (NodeId f : maximalInSync()) {
      Progress p = progress.get(f);
      if (p == null || !p.leaseFrom || now - p.leaseFromNanos >= lease) {
        return false;
      }
    }
    return true;
  }

  /**
   * Forgets what {@code p}'s follower said of its log: it answers from another store than before
   * (its data directory was replaced), or the map refused it into the in-sync set for the store
   * it answered from. Its match starts over, it needs a fresh answer and the end of this log before
   * it joins again, and if it is in the in-sync set it leaves it at the next look. Its node took
   * itself out of every in-sync set before serving ({@code StoreTrust}); this covers what this
   * leader learnt from the old directory.
   */
  private void forgetProgress(NodeId follower, Progress p) {
    p.match = 0;
    p.next = storage.state(ref).lastOffset() + 1;
    p.trimmed = false;
    p.appliedSeen = 0;
    p.needsSnapshot = false;
    p.leftNanos = nanos.getAsLong();
    p.replaced = inSync.contains(follower);
    p.leaseFrom = false;
  }

  /** The transport could not deliver {@code sent} or bring its reply: the reads it carried wait for the next send. */
  synchronized void onSendFailed(NodeId follower, ShardAppend sent) {
    Progress p = progress.get(follower);
    if (p == null) {
      return;
    }
    if (p.failedSends++ == 0) {
      p.failingSinceNanos = nanos.getAsLong();
    }
    List<ReadWaiter> back = p.awaitingReply.remove(sent);
    if (back != null) {
      p.awaitingSend.addAll(back);
    }
  }

  /** Confirms or returns the reads that rode on {@code sent}; completes those every follower has confirmed. */
  private void settleReads(NodeId follower, Progress p, ShardAppend sent, boolean ok, List<Runnable> after) {
    List<ReadWaiter> rode = p.awaitingReply.remove(sent);
    if (rode == null) {
      return;
    }
    if (!ok) {
      p.awaitingSend.addAll(rode); // confirmed only by an OK: try again with the next append
      after.add(changed);
      return;
    }
    for (ReadWaiter w : rode) {
      w.pending.remove(follower);
      if (w.pending.isEmpty()) {
        after.add(() -> w.confirmed.complete(null));
      }
    }
  }

  /** Every read waiting for a follower's confirmation, once each, in the order they arrived. */
  private java.util.Set<ReadWaiter> waitingReads() {
    java.util.Set<ReadWaiter> all = new java.util.TreeSet<>(java.util.Comparator.comparingLong(w -> w.seq));
    for (Progress p : progress.values()) {
      all.addAll(p.awaitingSend);
      p.awaitingReply.values().forEach(all::addAll);
    }
    return all;
  }

  /** After the in-sync set changed: followers no commit waits for any more no longer hold up {@code reads}. */
  private void releaseReads(java.util.Set<ReadWaiter> reads, List<Runnable> after) {
    List<NodeId> needed = new ArrayList<>(maximalInSync());
    needed.retainAll(progress.keySet());
    for (ReadWaiter w : reads) {
      if (w.pending.retainAll(needed) && w.pending.isEmpty()) {
        after.add(() -> w.confirmed.complete(null));
      }
    }
  }

  /** Fails every read waiting on this leader: it stopped leading. */
  private void failReads(String why, List<Runnable> after) {
    java.util.Set<ReadWaiter> all = waitingReads();
    NotApplied notLeader = new NotApplied(NotApplied.Reason.NOT_LEADER, why);
    after.add(() -> all.forEach(w -> w.confirmed.completeExceptionally(notLeader)));
  }

  /** A follower's reply to {@code sent}. Futures to complete go to {@code after}. */
  synchronized void onReply(NodeId follower, ShardAppend sent, ShardReply reply, String store, List<Runnable> after) {
    Progress p = progress.get(follower);
    if (role != Role.LEADER || sent.epoch() != leaderEpoch || p == null) {
      return; // an answer to a leader this node no longer is
    }
    if (p.store != null && !p.store.equals(store)) {
      forgetProgress(follower, p);
    }
    p.store = store;
    p.failedSends = 0; // it answers
    long now = nanos.getAsLong();
    settleReads(follower, p, sent, reply.outcome() == Outcome.OK, after);
    switch (reply.outcome()) {
      case OK -> {
        p.answeredNanos = now;
        if (sent == p.lastSent) {
          p.leaseFromNanos = p.sentNanos; // it answered after this: no other leader serves before its promise ends
          p.leaseFrom = true;
        }
        p.trimmed |= sent.reachesLeaderEnd();
        p.match = Math.max(p.match, reply.matched());
        p.appliedSeen = Math.max(p.appliedSeen, Math.min(sent.commit(), reply.matched()));
        p.next = Math.max(p.next, p.match + 1);
        if (p.match >= storage.state(ref).lastOffset()) {
          p.caughtUpNanos = now;
        }
        advanceCommit(after);
      }
      case MISMATCH -> {
        long next = Math.min(p.next - 1, reply.matched() + 1);
        if (next <= storage.state(ref).baseOffset()) {
          p.needsSnapshot = true; // it does not even match where the log starts: what it lacks is only in the data
        } else {
          p.next = next;
        }
      }
      case NEEDS_SNAPSHOT -> p.needsSnapshot = true;
      case STALE_EPOCH, NOT_REPLICA -> {
        // A newer leader exists (the map will say so), or the follower has not applied the map yet: nothing to do here.
        if (now - p.refusedLoggedNanos > 5_000_000_000L) {
          p.refusedLoggedNanos = now;
          LOG.info("replication: shard {}: {} answers {} (knows leader epoch {}; this leader's is {})",
              ref, follower, reply.outcome(), reply.knownEpoch(), leaderEpoch);
        }
      }
      default -> throw new IllegalStateException("unknown outcome " + reply.outcome());
    }
    checkQuiesced(after);
  }

  /** The commit is the least offset every in-sync replica holds; entries up to it are applied here and their writers answered. */
  private void advanceCommit(List<Runnable> after) {
    if (role != Role.LEADER) {
      return;
    }
    LogState s = storage.state(ref);
    long c = s.lastOffset();
    for (NodeId f : maximalInSync()) {
      Progress p = progress.get(f);
      c = Math.min(c, p == null ? 0 : p.match);
    }
    if (c > commit) {
      commit = c;
      if (!progress.isEmpty()) {
        after.add(changed); // the followers learn the new commit with the next message
      }
    }
    applyUpTo(commit);
    // A writer is answered once its entry is applied here and held by at least min in-sync replicas:
    // the in-sync set may have shrunk below that after the entry was appended (Kafka answers that
    // case NOT_ENOUGH_REPLICAS_AFTER_APPEND), and then the write waits for a follower to catch up,
    // or its writer gives up with an unknown outcome. An acknowledged write is always on that many nodes.
    long acknowledgeable = Math.min(storage.state(ref).appliedOffset(), heldByMinInSync(s.lastOffset()));
    List<CompletableFuture<Void>> done = new ArrayList<>();
    while (!waiters.isEmpty() && waiters.firstKey() <= acknowledgeable) {
      done.addAll(waiters.pollFirstEntry().getValue());
    }
    if (!done.isEmpty()) {
      after.add(() -> done.forEach(f -> f.complete(null)));
    }
    checkReady(after);
  }

  /**
   * A new leader is ready once it has committed its whole log and the promises it made as a
   * follower have run out: until then the leader it followed may still serve reads on a lease.
   */
  private void checkReady(List<Runnable> after) {
    if (role == Role.LEADER && !ready.isDone() && commit >= readyAt && nanos.getAsLong() - promisedUntilNanos >= 0) {
      CompletableFuture<Void> r = ready;
      after.add(() -> r.complete(null));
    }
  }

  /** Called every heartbeat: a leader waiting only for its promises to run out becomes ready. */
  synchronized void tick(List<Runnable> after) {
    checkReady(after);
  }

  /** The highest offset at least {@code minInSync} replicas hold (this leader's log and its followers' matches, in sync or not). */
  private long heldByMinInSync(long leaderLast) {
    if (minInSync <= 1) {
      return leaderLast;
    }
    long[] held = new long[1 + progress.size()];
    held[0] = leaderLast;
    int i = 1;
    for (Progress p : progress.values()) {
      held[i++] = p.match;
    }
    java.util.Arrays.sort(held);
    return minInSync > held.length ? -1 : held[held.length - minInSync];
  }

  private void applyUpTo(long offset) {
    LogState s = storage.state(ref);
    while (s.appliedOffset() < Math.min(offset, s.lastOffset())) {
      List<LogEntry> entries = storage.read(ref, s.appliedOffset() + 1, config.maxEntriesPerAppend(), config.maxBytesPerAppend());
      List<LogEntry> upTo = new ArrayList<>(entries.size());
      for (LogEntry e : entries) {
        if (e.offset() <= offset) {
          upTo.add(e);
        }
      }
      storage.apply(ref, upTo);
      s = storage.state(ref);
      forgetApplied(upTo, s.appliedOffset());
    }
  }

  /**
   * Drops the pending values of {@code applied}'s keys, which are in the data now; a key a newer
   * entry wrote keeps that entry's value. By key, not by a sweep of {@link #pending}: a sweep costs
   * the map's largest size since, on every apply.
   */
  private void forgetApplied(List<LogEntry> applied, long appliedOffset) {
    if (pending.isEmpty()) {
      return;
    }
    for (LogEntry e : applied) {
      for (ShardEngine.StoredValue v : e.effects()) {
        pending.computeIfPresent(java.nio.ByteBuffer.wrap(v.storeKey()), (k, p) -> p.offset() <= appliedOffset ? null : p);
      }
    }
  }

  /**
   * Whether {@code p}'s follower cannot be reached: its messages have failed, and nothing answered,
   * for {@link ReplicationConfig#unreachableAfter()} and at least two messages in a row. A node
   * killed or stopped is refused at once by its host, and every heartbeat fails again: its in-sync
   * shards would otherwise hold their writes (and reads, which every in-sync follower confirms) until
   * its ZooKeeper session ends or the lag max passes, seconds for every shard it follows. Leaving the
   * in-sync set is safe at any time (the map takes it out before a write is acknowledged without it);
   * one lost message or a slow answer does not count, and back, it joins again once caught up.
   */
  private boolean unreachable(Progress p, long now) {
    return p.failedSends >= 2 && now - p.failingSinceNanos >= config.unreachableAfter().toNanos();
  }

  /** The followers a commit waits for: the in-sync ones, and those a proposed change would add. */
  private List<NodeId> maximalInSync() {
    if (proposed == null) {
      return inSync;
    }
    List<NodeId> all = new ArrayList<>(inSync);
    for (NodeId f : proposed) {
      if (!all.contains(f)) {
        all.add(f);
      }
    }
    return all;
  }

  /**
   * An in-sync set to ask the map for, guarded by the shard epoch it was computed at; {@code
   * stores}: the store each follower it adds answered from.
   */
  record InSyncProposal(List<NodeId> inSync, long shardEpoch, Map<NodeId, String> stores) {}

  /**
   * The change of the in-sync set the leader should ask the map for now, if any: followers caught
   * up to the commit join it; in-sync followers that have not been caught up for {@code lagMax}
   * leave it. While one is unanswered nothing new is proposed; one that failed is proposed again,
   * under the same guard, so that a change that was stored after all cannot be applied twice. The
   * caller reports back with {@link #proposalDone}.
   */
  synchronized InSyncProposal inSyncChange() {
    if (role != Role.LEADER || !ready.isDone()) {
      return null;
    }
    if (proposed == null && cutAt >= 0 && !held(nanos.getAsLong())) {
      // A quiesce ended without a cut in this leader's map: fence it off before writes resume.
      proposed = List.copyOf(inSync);
      proposedAt = shardEpoch;
      proposedStores = Map.of();
      return new InSyncProposal(proposed, shardEpoch, proposedStores);
    }
    if (proposed != null) {
      if (!proposalFailed) {
        return null;
      }
      proposalFailed = false;
      return new InSyncProposal(proposed, proposedAt, proposedStores); // the very same change, vouching for the same stores
    }
    long now = nanos.getAsLong();
    long lastOffset = storage.state(ref).lastOffset();
    List<NodeId> next = new ArrayList<>();
    boolean changed = false;
    for (Map.Entry<NodeId, Progress> e : progress.entrySet()) {
      NodeId f = e.getKey();
      Progress p = e.getValue();
      boolean in = inSync.contains(f);
      boolean lagging = p.replaced || (p.match < lastOffset && now - p.caughtUpNanos > config.lagMax().toNanos())
          || now - p.answeredNanos > config.lagMax().toNanos() // silent: reads would wait for it forever
          || unreachable(p, now);
      // Back in only if it answers (a silent follower's old match would otherwise let it flap in and out).
      boolean caughtUp = p.match >= commit && p.match >= readyAt && p.trimmed && !p.needsSnapshot
          && now - p.answeredNanos <= config.lagMax().toNanos() / 2 && p.answeredNanos > p.leftNanos;
      if (in && lagging) {
        changed = true; // leaves
      } else if (in || caughtUp) {
        changed |= !in;
        next.add(f);
      }
    }
    if (!changed) {
      return null;
    }
    proposed = next;
    proposedAt = shardEpoch;
    proposedStores = storesOf(next);
    return new InSyncProposal(next, shardEpoch, proposedStores);
  }

  /** The store each follower of {@code followers} not in the in-sync set answered from. */
  private Map<NodeId, String> storesOf(List<NodeId> followers) {
    Map<NodeId, String> out = new HashMap<>();
    for (NodeId f : followers) {
      Progress p = progress.get(f);
      if (!inSync.contains(f) && p != null && p.store != null) {
        out.put(f, p.store);
      }
    }
    return out;
  }

  /**
   * The map refused a proposal: {@code followers} would have joined on the word of a store it does
   * not grant their replicas to. The proposal is dropped, and what they said is forgotten.
   */
  synchronized void proposalRefused(List<NodeId> followers) {
    proposed = null;
    proposalFailed = false;
    for (NodeId f : followers) {
      Progress p = progress.get(f);
      if (p != null) {
        forgetProgress(f, p);
      }
    }
  }

  /**
   * The answer to a proposal: {@code failed} if it may not have been stored (it is proposed again
   * at the next look, unless the map has moved on meanwhile). A stored one ends when the node
   * applies the map that holds it.
   */
  synchronized void proposalDone(boolean failed) {
    if (proposed != null && failed) {
      proposalFailed = true;
    }
  }

  /** Leading: how many entries the furthest-behind follower lacks of this log (0 when not leading or without followers). */
  synchronized long lagEntries() {
    if (role != Role.LEADER || progress.isEmpty()) {
      return 0;
    }
    long last = storage.state(ref).lastOffset();
    long lag = 0;
    for (Progress p : progress.values()) {
      lag = Math.max(lag, last - p.match);
    }
    return lag;
  }

  synchronized long shardEpoch() {
    return shardEpoch;
  }

  // ------------------------------------------------------------------ the follower's side

  /**
   * A follower read: {@code read}'s answer if this replica follows the shard and its data holds
   * every write acknowledged up to {@code maxStalenessNanos} ago; empty otherwise (the leader
   * answers instead). It knows that from its own clock alone: a commit it applied came in a message
   * built after the leader had received a reply this node sent at a known time (a round trip, as a
   * lease would use; no clocks compared). Its data holds only committed writes, so an answer is
   * never a write that could be lost. Not under this replica's lock: a snapshot installed
   * meanwhile voids the answer. {@code read} never returns null.
   */
  <T> java.util.Optional<T> readAsFollower(long maxStalenessNanos, java.util.function.Supplier<T> read) {
    long before;
    synchronized (this) {
      if (role != Role.FOLLOWER || installing || freshNanos == Long.MIN_VALUE || nanos.getAsLong() - freshNanos > maxStalenessNanos) {
        return java.util.Optional.empty();
      }
      before = installs;
    }
    T answer = read.get();
    synchronized (this) {
      return installs == before && role == Role.FOLLOWER ? java.util.Optional.of(answer) : java.util.Optional.empty();
    }
  }

  /**
   * A leader's append for this shard, from {@code from}. Futures to complete go to {@code after}.
   * {@code echoNanos}: when, on this node's clock, it sent the last reply the leader had received
   * before building the append ({@link Messages.AppendBatch}), or {@code Long.MIN_VALUE} if unknown.
   */
  synchronized ShardReply onAppend(NodeId from, ShardAppend a, long echoNanos, List<Runnable> after) {
    ShardReply refused = follow(from, a.epoch(), after);
    if (refused != null) {
      return refused;
    }
    if (installing) {
      return new ShardReply(ref, Outcome.NOT_REPLICA, 0, leaderEpoch); // a snapshot is going in: its log is not there yet
    }
    LogState s = storage.state(ref);
    long prevEpoch = storage.epochOf(ref, a.prevOffset());
    if (a.prevOffset() < s.baseOffset()) {
      // Entries up to our base are applied here, so committed: they match the leader's. Skip them.
      long skip = s.baseOffset() - a.prevOffset();
      if (skip >= a.entries().size()) {
        if (a.reachesLeaderEnd()) {
          dropOlderLeadersSuffix(a);
        }
        return new ShardReply(ref, Outcome.OK, Math.max(a.end(), s.baseOffset()), leaderEpoch);
      }
      ShardAppend rest = new ShardAppend(ref, a.epoch(), s.baseOffset(), storage.epochOf(ref, s.baseOffset()),
          a.entries().subList((int) skip, a.entries().size()), a.commit(), a.leaderLast(), a.leaderReady());
      return onAppend(from, rest, echoNanos, after);
    }
    if (prevEpoch != a.prevEpoch()) {
      // Missing, or another leader's: back to where our log surely matches or ends.
      long hint = Math.min(a.prevOffset() - 1, s.lastOffset());
      while (hint > s.baseOffset() && hint > s.appliedOffset() && storage.epochOf(ref, hint) > a.prevEpoch()) {
        hint--; // an entry of an epoch newer than the leader's at prevOffset cannot be in the leader's log there
      }
      return new ShardReply(ref, Outcome.MISMATCH, Math.max(s.baseOffset(), hint), leaderEpoch);
    }
    List<LogEntry> toAppend = new ArrayList<>();
    for (LogEntry e : a.entries()) {
      if (toAppend.isEmpty() && e.offset() <= s.lastOffset()) {
        if (storage.epochOf(ref, e.offset()) == e.epoch()) {
          continue; // already held
        }
        storage.truncateAfter(ref, e.offset() - 1); // a suffix the leader does not have: it was never committed
        s = storage.state(ref);
      }
      toAppend.add(e);
    }
    long matched = a.end();
    long applyTo = Math.min(a.commit(), matched);
    // One write for the new entries and for those the leader's commit covers (usually the ones the
    // last append brought); whatever one step did not take is applied right after.
    storage.appendAndApply(ref, toAppend, toApply(s, toAppend, applyTo));
    if (a.reachesLeaderEnd()) {
      dropOlderLeadersSuffix(a); // entries after a.end() only: none of them is applied
    }
    applyUpTo(applyTo);
    if (a.leaderReady() && echoNanos != Long.MIN_VALUE && storage.state(ref).appliedOffset() >= a.commit()) {
      // Every write acknowledged before echoNanos is at or below a.commit(), and applied here.
      freshNanos = Math.max(freshNanos, echoNanos);
    }
    return new ShardReply(ref, Outcome.OK, matched, leaderEpoch);
  }

  /**
   * The entries after the applied one through {@code through}, consecutive: held ones (the log as
   * {@code s} says, before {@code appended} is appended), then those of {@code appended}; at most
   * an append's worth.
   */
  private List<LogEntry> toApply(LogState s, List<LogEntry> appended, long through) {
    List<LogEntry> out = new ArrayList<>();
    long next = s.appliedOffset() + 1;
    if (through < next) {
      return out;
    }
    if (next <= s.lastOffset()) {
      for (LogEntry e : storage.read(ref, next, config.maxEntriesPerAppend(), config.maxBytesPerAppend())) {
        if (e.offset() > through) {
          break;
        }
        out.add(e);
        next = e.offset() + 1;
      }
    }
    if (next > s.lastOffset()) { // every held one is taken: the appended ones follow
      for (LogEntry e : appended) {
        if (e.offset() != next || e.offset() > through || out.size() >= config.maxEntriesPerAppend()) {
          break;
        }
        out.add(e);
        next++;
      }
    }
    return out;
  }

  /**
   * Follows {@code from} as the leader at {@code epoch}, unless this replica knows a newer epoch (or
   * leads at this one, or is gone): then the refusal to answer with.
   */
  private ShardReply follow(NodeId from, long epoch, List<Runnable> after) {
    if (role == Role.GONE) {
      return new ShardReply(ref, Outcome.NOT_REPLICA, 0, leaderEpoch);
    }
    if (epoch < leaderEpoch || (epoch == leaderEpoch && role == Role.LEADER)) {
      return new ShardReply(ref, Outcome.STALE_EPOCH, 0, leaderEpoch);
    }
    if (epoch > leaderEpoch || role == Role.LEADER) {
      if (role == Role.LEADER) {
        stepDown("shard " + ref + " has a newer leader, " + from + " at epoch " + epoch, after);
      }
      leaderEpoch = epoch;
      leader = from;
      role = Role.FOLLOWER;
    }
    // Whatever it answers now, the leader may count a lease from it (only an OK does): promise.
    promisedUntilNanos = Math.max(promisedUntilNanos, nanos.getAsLong() + config.followerLeaseNanos());
    return null;
  }

  /**
   * A leader's snapshot of the shard ({@code file}: its data as applied up to {@code o.offset()};
   * {@code null}: empty): the data here is replaced with it and the log starts over there — unless
   * this replica has applied that far already (what it applied is committed, so the leader's too).
   * The file is moved in or left for the caller to delete.
   */
  ShardReply onSnapshot(NodeId from, SnapshotOffer o, java.nio.file.Path file, List<Runnable> after) {
    synchronized (this) {
      ShardReply refused = follow(from, o.epoch(), after);
      if (refused != null) {
        return refused;
      }
      if (installing) {
        return new ShardReply(ref, Outcome.NOT_REPLICA, 0, leaderEpoch); // another install is under way: not now
      }
      if (o.offset() <= storage.state(ref).appliedOffset()) {
        return new ShardReply(ref, Outcome.OK, o.offset(), leaderEpoch);
      }
      installing = true; // appends wait (refused) until it is in
      installs++;
      freshNanos = Long.MIN_VALUE; // fresh again at the next append whose commit it has applied
    }
    // Not under this replica's lock: the install takes the store's trash lock, which a node applying
    // a map holds while it updates this replica — the two would wait for each other.
    try {
      engine.installReplica(ref, file, o.offset(), o.offsetEpoch());
    } finally {
      synchronized (this) {
        installing = false;
      }
    }
    synchronized (this) {
      return new ShardReply(ref, Outcome.OK, o.offset(), leaderEpoch);
    }
  }

  /**
   * After an append that reached the end of the leader's log: entries after it from an older leader
   * epoch were appended by a deposed leader and are in no log that can commit any more (the leader
   * holds every committed entry, and it appends only entries of its own epoch after its end). Kept,
   * they would be committed if this follower led next — a write whose retry the leader has since
   * answered on its own (a version mismatch, say) would then take effect after all. Raft's leaders
   * rule that out by being elected with the most up-to-date log; here a follower joins the in-sync
   * set only once it has dropped them. Entries of the leader's own epoch after {@code a.end()} come
   * from an append sent after this one (delivered first) and stay.
   */
  private void dropOlderLeadersSuffix(ShardAppend a) {
    LogState s = storage.state(ref);
    long o = a.end() + 1;
    while (o <= s.lastOffset() && storage.epochOf(ref, o) == a.epoch()) {
      o++;
    }
    if (o <= s.lastOffset()) {
      if (o <= s.appliedOffset()) {
        throw new IllegalStateException("shard " + ref + ": applied entry " + o + " of epoch " + storage.epochOf(ref, o)
            + " is not in the log of the leader at epoch " + a.epoch() + ", which ends at " + a.leaderLast());
      }
      storage.truncateAfter(ref, o - 1);
    }
  }

  @Override
  public synchronized String toString() {
    LogState s = storage.state(ref);
    return ref + " " + role + " leader epoch " + leaderEpoch + " log (" + s.baseOffset() + ", " + s.lastOffset() + "] applied "
        + s.appliedOffset() + (role == Role.LEADER ? " commit " + commit + " in sync " + inSync + " followers " + progressSummary()
            : " leader " + leader);
  }

  private String progressSummary() {
    long now = nanos.getAsLong();
    StringBuilder b = new StringBuilder("{");
    progress.forEach((f, p) -> b.append(b.length() > 1 ? ", " : "").append(f).append(": match ").append(p.match).append(" next ")
        .append(p.next).append(p.needsSnapshot ? " needs snapshot" : "").append(p.trimmed ? "" : " not trimmed").append(" answered ")
        .append((now - p.answeredNanos) / 1_000_000).append(" ms ago"));
    return b.append("}").toString();
  }
}
