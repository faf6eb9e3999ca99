package io.shardwise.server.replication;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.server.replication.Messages.AppendBatch;
import io.shardwise.server.replication.Messages.AppendReply;
import io.shardwise.server.replication.Messages.Outcome;
import io.shardwise.server.replication.Messages.ShardAppend;
import io.shardwise.server.replication.Messages.ShardReply;
import io.shardwise.server.replication.Messages.SnapshotOffer;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replicas of one node, and the node's end of the replication protocol ({@link Replica} is the
 * protocol of one shard): it keeps a replica for every shard of a replicated table this node holds
 * a copy of, as the map it applies says; sends each follower node, in one message at a time, the
 * entries of every shard this node leads and that node follows; answers other leaders' messages;
 * and asks the map to change a shard's in-sync set when its leader here says so.
 *
 * <p>Everything it needs from outside comes through interfaces — {@link Transport} for the
 * messages, {@link MapUpdates} for the map, an executor for sending, a clock — so that the
 * replication simulation runs this class as the nodes do, with lost messages and crashes.
 *
 * <p>Thread-safe.
 */
public final class Replicator {

  private static final Logger LOG = LoggerFactory.getLogger(Replicator.class);

  /** Carries messages to follower nodes. */
  public interface Transport {
    /** Sends a message to a follower node; {@code done} hears its reply or why there is none. */
    void send(NodeId to, AppendBatch batch, BiConsumer<AppendReply, Throwable> done);

    /**
     * Sends a shard's snapshot ({@code file}: its data; {@code null}: empty) to a follower node,
     * which installs it; {@code done} hears the follower's answer or why there is none. May block
     * the calling thread for as long as the file takes to send.
     */
    void sendSnapshot(NodeId to, NodeId from, SnapshotOffer offer, Path file, BiConsumer<ShardReply, Throwable> done);
  }

  /**
   * Changes the stored map by compare-and-set, asynchronously: {@code done} hears the stored map
   * (after this node has applied it), or why there is none — which does not say the change was not
   * stored.
   */
  public interface MapUpdates {
    void update(Function<ShardMap, Optional<ShardMapDelta>> change, BiConsumer<ShardMap, Throwable> done);
  }

  /** One follower node: at most one message to it is on its way. */
  private static final class Sender {
    final NodeId to;
    final ConcurrentHashMap<ShardRef, Replica> shards = new ConcurrentHashMap<>(); // keyed by shard, so the order a message lists them replays
    boolean inFlight;
    boolean again; // something new to send once the message in flight is answered
    boolean queued; // a pump of this sender waits on the executor
    boolean snapshotting; // one snapshot at a time to a node
    long echoToken; // the last reply's token and send time, echoed in the next message (see AppendBatch)
    long echoNanos;
    String store; // the follower's store id in its last reply
    long lastSentNanos;
    long failedAtNanos;

    Sender(NodeId to) {
      this.to = to;
    }
  }

  private final NodeId self;
  private final ShardEngine engine;
  private final Transport transport;
  private final MapUpdates maps;
  private final java.util.concurrent.Executor executor;
  private final java.util.concurrent.Executor snapshots;
  private final Path snapshotDir;
  private final java.util.concurrent.atomic.AtomicLong snapshotFiles = new java.util.concurrent.atomic.AtomicLong();
  private final LongSupplier nanos;
  private final ReplicationConfig config;
  private final ConcurrentHashMap<ShardRef, Replica> replicas = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<NodeId, Sender> senders = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.LongAdder readsAtOnce = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder readsAfterRound = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder messagesSent = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder entriesSent = new java.util.concurrent.atomic.LongAdder();
  private volatile long mapEpoch;
  // This process's replies carry it; an echo of another token (an earlier process of this node, whose
  // clock meant something else) is ignored. Random, never 0 (0: no reply echoed).
  private final long token = java.util.concurrent.ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE);

  /**
   * @param executor runs the sending of messages (never on the caller's stack: a write must not
   *     wait for a message to another node to be handed over)
   * @param snapshots runs the export and sending of snapshots, which take as long as the shard
   *     takes to copy (apart from {@code executor}, so heartbeats never wait for them)
   * @param snapshotDir where snapshots are written before they are sent (on the store's file
   *     system; emptied here, as what it holds was left by a process that died)
   */
  public Replicator(NodeId self, ShardEngine engine, Transport transport, MapUpdates maps, java.util.concurrent.Executor executor,
      java.util.concurrent.Executor snapshots, Path snapshotDir, LongSupplier nanos, ReplicationConfig config) {
    this.self = self;
    this.engine = engine;
    this.transport = transport;
    this.maps = maps;
    this.executor = executor;
    this.snapshots = snapshots;
    this.snapshotDir = snapshotDir;
    emptyDirectory(snapshotDir);
    this.nanos = nanos;
    this.config = config;
  }

  /** True if shards of {@code t} go through the replication log here: its replication factor is above one. */
  public static boolean replicated(Table t) {
    return t.replication().replicated();
  }

  /** The replica of {@code shard} on this node, if it keeps one. */
  public Optional<Replica> replica(ShardRef shard) {
    return Optional.ofNullable(replicas.get(shard));
  }

  /** Entries the furthest-behind follower of {@code shard} lacks, if this node leads it; 0 otherwise. */
  public long lagEntries(ShardRef shard) {
    Replica r = replicas.get(shard);
    return r == null ? 0 : r.lagEntries();
  }

  /** Every replica on this node. */
  public Map<ShardRef, Replica> replicas() {
    return Map.copyOf(replicas);
  }

  // ------------------------------------------------------------------ the map

  /**
   * Brings the replicas in line with {@code next}: a replica for every shard of a replicated table
   * that names this node as its leader or a follower, leading or following as it says; replicas
   * of shards it no longer names are removed (their data is the node's to keep or trash, not this
   * class's). Only tables changed since {@code previous} are visited.
   *
   * @return the replicas removed
   */
  public List<ShardRef> apply(ShardMap previous, ShardMap next) {
    mapEpoch = Math.max(mapEpoch, next.epoch());
    List<Runnable> after = new ArrayList<>();
    Set<ShardRef> seen = new HashSet<>();
    Set<Long> changedTables = new HashSet<>();
    for (Table t : next.tables().values()) {
      if (t.unchangedSince(previous)) {
        continue;
      }
      changedTables.add(t.id());
      if (!replicated(t)) {
        continue;
      }
      for (ShardAssignment a : t.shards()) {
        if (!a.isReplica(self)) {
          continue;
        }
        ShardRef ref = ShardRef.of(t, a.id().number());
        seen.add(ref);
        Replica r = replicas.get(ref);
        if (r == null) {
          r = new Replica(self, ref, engine, nanos, config, () -> wake(ref));
          replicas.put(ref, r);
          if (!a.owner().equals(self)) {
            r.startLogAtCut(cutParents(t, ref), a.leaderEpoch());
          }
        }
        r.update(a, t.replication(), after);
        index(r, a);
      }
    }
    List<ShardRef> removed = new ArrayList<>();
    for (Replica r : replicas.values()) {
      ShardRef ref = r.ref();
      boolean tableGone = next.tableById(ref.tableId()).isEmpty();
      if (!seen.contains(ref) && (tableGone || changedTables.contains(ref.tableId()))) {
        r.remove(after);
        replicas.remove(ref);
        senders.values().forEach(s -> s.shards.remove(ref, r));
        removed.add(ref);
      }
    }
    after.forEach(Runnable::run);
    return removed;
  }

  /**
   * The replicas here of the shards of {@code t} that a split or merge replaced and whose spans
   * together cover {@code shard}'s — this node kept each of them up to the cut — or an empty list if
   * they do not cover it (the node was not a replica of all of them).
   */
  private List<Replica> cutParents(Table t, ShardRef shard) {
    List<Replica> parents = new ArrayList<>();
    for (Replica r : replicas.values()) {
      ShardRef p = r.ref();
      if (p.tableId() == shard.tableId() && t.positionOf(p.shardNumber()) < 0 && p.overlaps(shard)) {
        parents.add(r);
      }
    }
    parents.sort((x, y) -> java.util.Arrays.compareUnsigned(x.ref().start(), y.ref().start()));
    byte[] covered = shard.start();
    for (Replica r : parents) {
      if (java.util.Arrays.compareUnsigned(r.ref().start(), covered) > 0) {
        return List.of(); // a gap
      }
      if (java.util.Arrays.compareUnsigned(r.ref().end(), covered) > 0) {
        covered = r.ref().end();
      }
    }
    return java.util.Arrays.compareUnsigned(covered, shard.end()) >= 0 ? parents : List.of();
  }

  /** Files the replica under the follower nodes it sends to (only while it leads). */
  private void index(Replica r, ShardAssignment a) {
    boolean leads = a.owner().equals(self);
    for (Sender s : senders.values()) {
      if (!leads || !a.followers().contains(s.to)) {
        s.shards.remove(r.ref(), r);
      }
    }
    if (leads) {
      for (NodeId f : a.followers()) {
        senders.computeIfAbsent(f, Sender::new).shards.put(r.ref(), r);
      }
      wake(r.ref());
    }
  }

  // ------------------------------------------------------------------ writes

  /**
   * Up to {@code limit} tombstones of {@code shard} older than {@code cutoffMillis}, if this node
   * leads it (empty otherwise): the candidates of a purge, whose highest version the table's floor
   * must reach first ({@link #purgeTombstones}).
   */
  public List<ShardEngine.StoredValue> tombstonesToPurge(ShardRef shard, long cutoffMillis, int limit) {
    Replica r = replicas.get(shard);
    return r == null || r.role() != Replica.Role.LEADER ? List.of() : engine.expiredTombstones(shard, cutoffMillis, limit);
  }

  /**
   * Removes {@code tombstones} of {@code shard} through its log if this node leads it ({@link
   * Replica#purgeTombstones}); completes with how many (0 if it does not lead it).
   */
  public CompletableFuture<Integer> purgeTombstones(ShardRef shard, List<ShardEngine.StoredValue> tombstones) {
    Replica r = replicas.get(shard);
    return r == null ? CompletableFuture.completedFuture(0) : r.purgeTombstones(tombstones);
  }

  /**
   * Removes write-id records of {@code shard} older than {@code cutoffMillis} through its log, up to
   * {@code limit} of them, if this node leads it ({@link Replica#purgeRecords}); completes with how
   * many (0 if it does not lead it).
   */
  public CompletableFuture<Integer> purgeRecords(ShardRef shard, long cutoffMillis, int limit) {
    Replica r = replicas.get(shard);
    return r == null ? CompletableFuture.completedFuture(0) : r.purgeRecords(cutoffMillis, limit);
  }

  /**
   * Quiesces {@code shard} for a split or merge, if this node leads it ({@link Replica#quiesce});
   * {@code holdNanos} 0 releases a hold instead (completing with null).
   */
  public CompletableFuture<Replica.Quiesced> quiesce(ShardRef shard, long holdNanos) {
    Replica r = replicas.get(shard);
    if (r == null) {
      return CompletableFuture.failedFuture(new Replica.NotApplied(Replica.NotApplied.Reason.NOT_LEADER,
          "this node keeps no replica of shard " + shard));
    }
    if (holdNanos <= 0) {
      r.release();
      return CompletableFuture.completedFuture(null);
    }
    return r.quiesce(holdNanos);
  }

  /**
   * Completes once a read of {@code shard} here is linearizable ({@link Replica#readBarrier}); fails
   * with {@link Replica.NotApplied} if this node does not lead it.
   */
  public CompletableFuture<Void> readBarrier(ShardRef shard) {
    Replica r = replicas.get(shard);
    if (r == null) {
      return CompletableFuture.failedFuture(new Replica.NotApplied(Replica.NotApplied.Reason.NOT_LEADER,
          "this node keeps no replica of shard " + shard));
    }
    CompletableFuture<Void> barrier = r.readBarrier();
    (barrier.isDone() ? readsAtOnce : readsAfterRound).increment();
    return barrier;
  }

  /**
   * How this node's leader reads passed their barriers so far.
   *
   * @param atOnce at once: on a read lease, or by a leader alone in sync
   * @param afterRound after a round to the followers
   */
  public record ReadBarriers(long atOnce, long afterRound) {}

  public ReadBarriers readBarriers() {
    return new ReadBarriers(readsAtOnce.sum(), readsAfterRound.sum());
  }

  /**
   * What this node sent its followers so far, as a leader: append messages (one per follower node
   * at a time, each carrying every shard's entries that waited) and the log entries in them.
   * Entries per message is how deep the batching is; heartbeats are messages of no entry.
   */
  public record Sent(long messages, long entries) {
    public static final Sent NONE = new Sent(0, 0);

    public Sent plus(Sent other) {
      return new Sent(messages + other.messages, entries + other.entries);
    }

    public Sent minus(Sent earlier) {
      return new Sent(messages - earlier.messages, entries - earlier.entries);
    }
  }

  public Sent sent() {
    return new Sent(messagesSent.sum(), entriesSent.sum());
  }

  /**
   * {@code read}'s answer if this node follows {@code shard} and its replica is at most {@code
   * maxStalenessNanos} stale ({@link Replica#readAsFollower}); empty otherwise.
   */
  public <T> Optional<T> readAsFollower(ShardRef shard, long maxStalenessNanos, java.util.function.Supplier<T> read) {
    Replica r = replicas.get(shard);
    return r == null ? Optional.empty() : r.readAsFollower(maxStalenessNanos, read);
  }

  /**
   * Writes {@code batch} (all in {@code shard}) through the shard's log, if this node leads it:
   * completes once it is committed and applied, with the results {@link ShardEngine#apply} would
   * give. Fails with {@link Replica.NotApplied} if nothing was appended, or {@link
   * Replica.OutcomeUnknown} if the write may or may not be committed by another leader.
   */
  public CompletableFuture<long[]> write(ShardRef shard, List<Mutation> batch) {
    Replica r = replicas.get(shard);
    if (r == null) {
      return CompletableFuture.failedFuture(new Replica.NotApplied(Replica.NotApplied.Reason.NOT_LEADER,
          "this node keeps no replica of shard " + shard));
    }
    return r.write(batch);
  }

  /**
   * {@link #write(ShardRef, List)} for each shard's part of one request, its followers woken once
   * all are appended: a request's entries for one follower leave in one message, not one message
   * for the first shard and another for the rest (which arrived while the first was on its way).
   */
  public Map<ShardRef, CompletableFuture<long[]>> write(Map<ShardRef, List<Mutation>> parts) {
    Map<ShardRef, CompletableFuture<long[]>> started = new java.util.LinkedHashMap<>();
    if (parts.size() == 1) {
      parts.forEach((shard, batch) -> started.put(shard, write(shard, batch)));
      return started;
    }
    Set<Sender> woken = new java.util.LinkedHashSet<>();
    wakesHeld.set(woken);
    try {
      parts.forEach((shard, batch) -> started.put(shard, write(shard, batch)));
    } finally {
      wakesHeld.remove();
      woken.forEach(this::schedule);
    }
    return started;
  }

  // ------------------------------------------------------------------ sending

  /** While a request's parts are appended on this thread ({@link #write(Map)}): the senders their appends woke. */
  private final ThreadLocal<Set<Sender>> wakesHeld = new ThreadLocal<>();

  /**
   * The replica has something to send: its followers' senders run soon. A sender with a message on
   * its way sends again when it is answered, and one already waiting for the executor takes this
   * too, so a busy shard's writes and reads cost no hand-over to another thread each: one pump
   * serves everything that arrived while the last message was out (the batching of the log).
   */
  private void wake(ShardRef shard) {
    Replica r = replicas.get(shard);
    if (r == null) {
      return;
    }
    Set<Sender> held = wakesHeld.get();
    for (NodeId f : r.followers()) {
      Sender s = senders.get(f);
      if (s != null) {
        if (held != null) {
          held.add(s);
        } else {
          schedule(s);
        }
      }
    }
  }

  /** Runs a pump of {@code s} on the executor, unless one waits there or its reply will run one. */
  private void schedule(Sender s) {
    synchronized (s) {
      if (s.inFlight) {
        s.again = true;
        return;
      }
      if (s.queued) {
        return;
      }
      s.queued = true;
    }
    executor.execute(() -> pump(s, false));
  }

  /** Sends {@code s.to} what it lacks of every shard this node leads and it follows, unless a message is already on its way. */
  private void pump(Sender s, boolean heartbeat) {
    List<ShardAppend> shards = new ArrayList<>();
    synchronized (s) {
      s.queued = false;
      if (!s.snapshotting) {
        for (Replica r : s.shards.values()) {
          long epoch = r.startSnapshot(s.to);
          if (epoch >= 0) {
            s.snapshotting = true;
            snapshots.execute(() -> sendSnapshot(s, r, epoch));
            break;
          }
        }
      }
      if (s.inFlight) {
        s.again = true;
        return;
      }
      for (Replica r : s.shards.values()) {
        ShardAppend a = r.nextAppend(s.to, heartbeat);
        if (a != null) {
          shards.add(a);
        }
      }
      if (shards.isEmpty()) {
        return;
      }
      s.inFlight = true;
      s.again = false;
      s.lastSentNanos = nanos.getAsLong();
    }
    Map<ShardRef, ShardAppend> sent = new HashMap<>();
    shards.forEach(a -> sent.put(a.shard(), a));
    long echoToken;
    long echoNanos;
    synchronized (s) {
      echoToken = s.echoToken;
      echoNanos = s.echoNanos;
    }
    messagesSent.increment();
    shards.forEach(a -> entriesSent.add(a.entries().size()));
    transport.send(s.to, new AppendBatch(self, shards, echoToken, echoNanos), (reply, failure) -> {
      List<Runnable> after = new ArrayList<>();
      if (reply != null) {
        String before;
        synchronized (s) { // before the next message is built: its commits are read after this reply arrived
          s.echoToken = reply.token();
          s.echoNanos = reply.sentNanos();
          before = s.store;
          s.store = reply.store();
        }
        if (before != null && !before.equals(reply.store())) {
          LOG.warn("replication: {} answers from store {}, not {} as before: its data directory was replaced; what it said before"
              + " is forgotten, and it is rebuilt", s.to, reply.store(), before);
        }
        for (ShardReply r : reply.shards()) {
          Replica replica = replicas.get(r.shard());
          ShardAppend a = sent.remove(r.shard());
          if (replica != null && a != null) {
            replica.onReply(s.to, a, r, reply.store(), after);
          }
        }
      }
      for (ShardAppend a : sent.values()) { // no answer for these: the reads they carried wait for the next send
        Replica replica = replicas.get(a.shard());
        if (replica != null) {
          replica.onSendFailed(s.to, a);
        }
      }
      // Still in flight while the reply's effects run (writes committed, reads confirmed, the
      // followers to hear the new commit): what they wake is sent by this thread right after,
      // in one message, not handed to the executor once per wake.
      after.forEach(Runnable::run);
      boolean again;
      synchronized (s) {
        s.inFlight = false;
        again = failure == null && (s.again || (reply != null && anyMore(reply)));
        if (failure != null) {
          s.failedAtNanos = nanos.getAsLong(); // the next heartbeat tries again; no tight loop against a dead node
        }
      }
      if (again) {
        pump(s, false); // on the thread that took the reply, never a request's
      }
    });
  }

  /**
   * Exports {@code r}'s shard as applied here and sends it to {@code s.to}, which installs it and
   * then takes the entries after it.
   */
  private void sendSnapshot(Sender s, Replica r, long epoch) {
    Path file = snapshotDir.resolve("replica-" + r.ref().tableId() + "-" + r.ref().shardNumber() + "-" + snapshotFiles.incrementAndGet()
        + ".sst");
    BiConsumer<SnapshotOffer, Object> finish = (offer, outcome) -> {
      deleteQuietly(file);
      List<Runnable> after = new ArrayList<>();
      r.onSnapshotReply(s.to, offer, outcome instanceof ShardReply reply ? reply : null,
          outcome instanceof Throwable t ? t : null, after);
      synchronized (s) {
        s.snapshotting = false;
      }
      after.forEach(Runnable::run);
      schedule(s); // the entries after it, or the next shard's snapshot
    };
    SnapshotOffer offer = new SnapshotOffer(r.ref(), epoch, 0, 0);
    try {
      ShardEngine.ReplicaExport export = engine.exportReplica(r.ref(), file);
      offer = new SnapshotOffer(r.ref(), epoch, export.offset(), export.epoch());
      LOG.info("replication: shard {}: sending {} a snapshot at offset {} ({} entries, {} bytes)", r.ref(), s.to, export.offset(),
          export.stats().entries(), export.stats().bytes());
      SnapshotOffer sent = offer;
      transport.sendSnapshot(s.to, self, offer, export.stats().entries() == 0 ? null : file,
          (reply, failure) -> finish.accept(sent, failure != null ? failure : reply));
    } catch (RuntimeException e) {
      LOG.info("replication: shard {}: the snapshot for {} failed: {}", r.ref(), s.to, e.toString());
      finish.accept(offer, e);
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      java.nio.file.Files.deleteIfExists(file);
    } catch (java.io.IOException ignored) {
      // removed when the node next starts
    }
  }

  private static void emptyDirectory(Path dir) {
    try {
      java.nio.file.Files.createDirectories(dir);
      try (var old = java.nio.file.Files.list(dir)) {
        old.forEach(Replicator::deleteQuietly);
      }
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot prepare the snapshot directory " + dir + ": " + e.getMessage(), e);
    }
  }

  /** True if the reply calls for another message at once: a follower to walk back to where it matches. */
  private static boolean anyMore(AppendReply reply) {
    for (ShardReply r : reply.shards()) {
      if (r.outcome() == Outcome.MISMATCH) {
        return true;
      }
    }
    return false;
  }

  /**
   * The heartbeat: every follower node that has heard nothing for {@code heartbeat} gets every
   * shard's commit (and whatever else it lacks); every leader replica whose in-sync set should
   * change asks the map for it. Called every heartbeat interval (and by the simulation's clock).
   */
  public void tick() {
    long now = nanos.getAsLong();
    for (Sender s : senders.values()) {
      boolean due;
      synchronized (s) {
        due = !s.inFlight && now - s.lastSentNanos >= config.heartbeat().toNanos() && !s.shards.isEmpty();
      }
      if (due) {
        pump(s, true);
      }
    }
    for (Replica r : replicas.values()) {
      Replica.InSyncProposal p = r.inSyncChange();
      if (p != null) {
        proposeInSync(r, p);
      }
      r.trimLog();
      List<Runnable> after = new ArrayList<>();
      r.tick(after);
      after.forEach(Runnable::run);
    }
  }

  private void proposeInSync(Replica r, Replica.InSyncProposal proposal) {
    ShardRef ref = r.ref();
    List<NodeId> inSync = proposal.inSync();
    long guard = proposal.shardEpoch();
    LOG.info("replication: shard {}: proposing in-sync followers {} ({})", ref, inSync, r);
    List<NodeId> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
    maps.update(map -> {
      refused.clear();
      Table t = map.tableById(ref.tableId()).orElse(null);
      ShardAssignment a = t == null ? null : t.shard(ref.shardNumber()).orElse(null);
      if (a == null || !a.owner().equals(self) || a.epoch() != guard) {
        return Optional.empty(); // the shard changed since we looked: look again at the next tick
      }
      for (NodeId f : inSync) {
        Optional<String> granted = map.storeOf(f);
        if (!a.inSync().contains(f) && granted.isPresent() && !granted.get().equals(proposal.stores().get(f))) {
          refused.add(f); // it answered from a store its replicas are not granted to: a replaced data directory
        }
      }
      if (!refused.isEmpty()) {
        return Optional.empty();
      }
      return Optional.of(ShardMapDelta.on(map).add(new ShardMapDelta.ChangeInSync(a.id(), self, guard, inSync, proposal.stores())).build());
    }, (stored, failure) -> {
      if (failure == null && !refused.isEmpty()) {
        LOG.warn("replication: shard {}: {} did not join the in-sync set: they answered from stores their replicas are not granted to"
            + " (replaced data directories); they are rebuilt", ref, refused);
        r.proposalRefused(List.copyOf(refused));
        return;
      }
      r.proposalDone(failure != null);
      if (failure != null) {
        LOG.info("replication: shard {}: the in-sync change to {} was not stored: {}", ref, inSync, failure.toString());
      }
    });
  }

  // ------------------------------------------------------------------ following

  /** Another leader's message: each shard's append taken or refused, as its replica here decides. */
  public AppendReply onAppend(AppendBatch batch) {
    List<Runnable> after = new ArrayList<>();
    List<ShardReply> replies = new ArrayList<>(batch.shards().size());
    long echo = batch.echoToken() == token ? batch.echoNanos() : Long.MIN_VALUE; // a reply of this process, or none
    for (ShardAppend a : batch.shards()) {
      Replica r = replicas.get(a.shard());
      replies.add(r == null ? new ShardReply(a.shard(), Outcome.NOT_REPLICA, 0, 0) : r.onAppend(batch.leader(), a, echo, after));
    }
    after.forEach(Runnable::run);
    return new AppendReply(self, mapEpoch, replies, token, nanos.getAsLong(), engine.storeId());
  }

  /**
   * A leader's snapshot of a shard ({@code file}: its data, moved in or left for the caller to
   * delete; {@code null}: empty), installed by the replica here if it should be.
   */
  public ShardReply onSnapshot(NodeId leader, SnapshotOffer offer, Path file) {
    Replica r = replicas.get(offer.shard());
    if (r == null) {
      return new ShardReply(offer.shard(), Outcome.NOT_REPLICA, 0, 0);
    }
    List<Runnable> after = new ArrayList<>();
    ShardReply reply = r.onSnapshot(leader, offer, file, after);
    after.forEach(Runnable::run);
    return reply;
  }

  /** Every replica's state, one line each (for logs and tests). */
  public List<String> describe() {
    List<String> out = new ArrayList<>();
    replicas.values().forEach(r -> out.add(r.toString()));
    return out;
  }

  /** Shards this node replicates with {@code consumer}: for tests that look at every replica. */
  void forEach(Consumer<Replica> consumer) {
    replicas.values().forEach(consumer);
  }
}
