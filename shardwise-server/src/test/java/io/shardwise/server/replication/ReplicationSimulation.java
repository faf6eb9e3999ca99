package io.shardwise.server.replication;

import io.shardwise.core.key.Key;
import io.shardwise.core.key.Lists;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.history.LinearizabilityChecker;
import io.shardwise.history.Op;
import io.shardwise.server.move.MemoryEngine;
import io.shardwise.server.replication.Messages.AppendBatch;
import io.shardwise.server.replication.Messages.AppendReply;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ReplicaStorage;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.storage.Versioned;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * One seeded schedule of the replication protocol, in one thread: the real {@link Replicator}s and
 * {@link Replica}s of three nodes on {@link MemoryEngine}s, a map kept in memory with
 * compare-and-set, a network that delivers, delays and loses messages and replies in an order the
 * seed picks, a clock the seed advances, crashes (a node's process is gone, its engine — data and
 * logs — stays: kill -9; or, half of the time, a power loss of a node that fsyncs its writes:
 * applies that skipped their fsync since the last synced write are undone, {@link
 * MemoryEngine#losePower}) and restarts, some on a wiped data directory (a new engine: the node
 * first takes itself out of the map's in-sync sets and leaderships, {@code StoreTrust}'s {@link
 * io.shardwise.server.balance.Failover#forget}, or refuses to start when it was a shard's only
 * in-sync copy — then its old directory is put back), partitions that cut a node off from the others and from
 * ZooKeeper, and a controller that moves the leadership of a shard whose leader is gone to an
 * in-sync follower, as the balancer's leader does.
 *
 * <p>Clients write (puts, conditional puts, deletes, each with a write id, retried under the same
 * id when the outcome is unknown) and read at the leader their map names. Every operation is
 * recorded with its outcome, and the history of each key is checked for linearizability ({@link
 * LinearizabilityChecker}): nothing acknowledged is lost, nothing is applied twice, nothing is
 * read that was never written. After every event, and at the end, the replicas are checked
 * against each other: no replica's data ever holds an entry that differs from the final leader's
 * log at the same offset (its data only ever holds committed writes), and at the end every replica
 * the map names in sync holds exactly the leader's data.
 */
final class ReplicationSimulation {

  /** A broken invariant. */
  static final class Violation extends AssertionError {
    private static final long serialVersionUID = 1L;

    Violation(String message) {
      super(message);
    }
  }

  /** What a campaign of schedules did, summed. */
  static final class Stats {
    long events;
    long writesOk;
    long writesFailed;
    long writesUnknown;
    long reads;
    long leaseReads; // of them, answered at once (on the leader's read lease, or alone in sync)
    long followerReads;
    long followerReadsRefused;
    long messagesLost;
    long crashes;
    long powerLosses;
    long unsyncedLost; // applies the power losses undid
    long wipes;
    long partitions;
    long failovers;
    long inSyncChanges;
    long snapshots;
    long appendsOk;
    long feedReads;

    void add(Stats o) {
      events += o.events;
      writesOk += o.writesOk;
      writesFailed += o.writesFailed;
      writesUnknown += o.writesUnknown;
      reads += o.reads;
      leaseReads += o.leaseReads;
      followerReads += o.followerReads;
      followerReadsRefused += o.followerReadsRefused;
      messagesLost += o.messagesLost;
      crashes += o.crashes;
      powerLosses += o.powerLosses;
      unsyncedLost += o.unsyncedLost;
      wipes += o.wipes;
      partitions += o.partitions;
      failovers += o.failovers;
      inSyncChanges += o.inSyncChanges;
      snapshots += o.snapshots;
      appendsOk += o.appendsOk;
      feedReads += o.feedReads;
    }

    @Override
    public String toString() {
      return events + " events, writes " + writesOk + " acknowledged / " + writesFailed + " refused / " + writesUnknown + " unknown, "
          + reads + " reads (" + leaseReads + " at once), " + followerReads + " follower reads (" + followerReadsRefused + " too stale), " + messagesLost + " messages lost, " + crashes + " crashes (" + powerLosses + " power losses, undoing " + unsyncedLost + " unsynced applies), " + wipes + " wiped restarts, " + partitions + " partitions, " + failovers
          + " failovers, " + inSyncChanges + " in-sync changes stored, " + snapshots + " snapshots installed"
          + (appendsOk + feedReads == 0 ? "" : ", " + appendsOk + " appends acknowledged, " + feedReads + " list reads checked");
    }
  }

  private static final int NODES = 3;
  private static final int SHARDS = 2;
  private static final int KEYS = 6;
  private static final int CLIENTS = 3;
  private static final int EVENTS = 400;
  private static final int TRACE = Integer.getInteger("shardwise.sim.trace", 80);
  private static final long TICK_NANOS = Duration.ofMillis(50).toNanos();
  // Logs keep 1 applied entry: a follower that falls behind gets a snapshot.
  private static final ReplicationConfig CONFIG = new ReplicationConfig(Duration.ofMillis(500), Duration.ofMillis(100), 4, 1 << 20,
      Duration.ofSeconds(10), 1, 0, Duration.ofMillis(300));
  // Each node's clock runs at its own rate, down to this share of the true one: as far apart as the
  // read lease's margin allows (ReplicationConfig#LEASE_MARGIN), and a little closer.
  private static final double SLOWEST_CLOCK = 0.92;

  private final long seed;
  private final Random rnd;
  private final Stats stats = new Stats();
  private final ArrayDeque<String> trace = new ArrayDeque<>();
  private final List<SimNode> nodes = new ArrayList<>();
  /** The same nodes by id: the replica check looks them up at every step. */
  private final java.util.Map<NodeId, SimNode> byId = new java.util.HashMap<>();
  private final List<SimClient> clients = new ArrayList<>();
  private final List<Event> pending = new ArrayList<>();
  private final Map<String, List<Op>> history = new TreeMap<>();
  private final java.nio.file.Path files; // snapshots on their way
  private long filesSent;
  private ShardMap stored;
  private long clock;
  private long step;
  private final List<Long> tickSteps = new ArrayList<>(List.of(0L)); // the step at which the clock reached each tick
  private long writeCounter;
  private final boolean withFeed;
  /** The list clients append to (withFeed): its acknowledged elements (when invoked, when answered), all invoked ones, and reads. */
  static final String FEED = "feed";
  private final Map<String, long[]> appendsAcknowledged = new java.util.HashMap<>();
  private final java.util.Set<String> appendsInvoked = new java.util.HashSet<>();
  private final List<List<String>> feedReads = new ArrayList<>();

  /** Something the world will do later: a message or reply on its way, a task, a map change. */
  private record Event(String what, Runnable action, Runnable lost) {}

  ReplicationSimulation(long seed) {
    this(seed, false);
  }

  /**
   * {@code withFeed}: clients also append to one list, {@link #FEED}, with unique elements (an
   * append is a transform the leader evaluates, {@link Lists#append}) and read it at its leader: a
   * retried append must never land twice, an acknowledged one never be lost, across crashes and
   * failovers. Without it the schedules are those the seeds in the tests have always made.
   */
  ReplicationSimulation(long seed, boolean withFeed) {
    this.withFeed = withFeed;
    this.seed = seed;
    this.rnd = new Random(seed);
    try {
      this.files = java.nio.file.Files.createTempDirectory("shardwise-replication-sim");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, SHARDS, NODES, KeySample.empty()).layout();
    List<NodeId> owners = new ArrayList<>();
    List<List<NodeId>> followers = new ArrayList<>();
    for (int i = 0; i < SHARDS; i++) {
      List<NodeId> all = new ArrayList<>();
      for (int n = 1; n <= NODES; n++) {
        all.add(NodeId.of("n" + n));
      }
      java.util.Collections.shuffle(all, rnd);
      owners.add(all.get(0));
      followers.add(all.subList(1, NODES));
    }
    stored = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, owners, followers,
        Replication.of(3)).build());
    for (int n = 1; n <= NODES; n++) {
      SimNode node = new SimNode(NodeId.of("n" + n));
      nodes.add(node);
      byId.put(node.id, node);
    }
    ShardMapDelta.Builder grants = ShardMapDelta.on(stored);
    nodes.forEach(n -> grants.add(new ShardMapDelta.GrantStore(n.id, n.engine.storeId())));
    stored = stored.apply(grants.build());
    nodes.forEach(SimNode::start);
    for (int c = 0; c < CLIENTS; c++) {
      clients.add(new SimClient(c));
      clients.get(c).map = stored; // each client's map goes stale until it refreshes it
    }
  }

  /** Runs the schedule; returns what it did, or throws {@link Violation} with the seed and the last events. */
  Stats run() {
    try {
      for (int i = 0; i < EVENTS; i++) {
        step();
      }
      finish();
    } catch (Violation | RuntimeException e) {
      throw new Violation("seed " + seed + ": " + e + "\nlast events:\n  " + String.join("\n  ", trace)
          + "\nreplay: mvn -pl shardwise-server test -Dtest=ReplicationSimulationTest -Dshardwise.sim.seed=" + seed);
    } finally {
      deleteFiles();
    }
    return stats;
  }

  private void deleteFiles() {
    try (var left = java.nio.file.Files.walk(files)) {
      left.sorted(java.util.Comparator.reverseOrder()).forEach(ReplicationSimulation::deleteQuietly);
    } catch (java.io.IOException ignored) {
      // a temporary directory
    }
  }

  /**
   * A scripted schedule for the read lease (no random steps): the leader of {@code k0} is cut off
   * from the other nodes and ZooKeeper just after its followers answered it; the controller moves
   * the lead; a client writes {@code k0} at the new leader while another, whose map still names the
   * old one, reads {@code k0} there every 10 ms until the write is acknowledged. The old leader
   * answers on its lease, and the new one must not acknowledge anything before that lease has run
   * out: the history check finds a read of the old value after the new one was acknowledged
   * otherwise. {@code restartFollowers}: the followers' processes crash and start again just before
   * the cut, so the new leader is one that forgot the promise it made (it must assume one).
   * Returns the stats, with the reads the old leader answered in {@code leaseReads}.
   */
  Stats leaseAgainstANewLeader(boolean restartFollowers) {
    try {
      String key = "k0";
      SimClient writer = clients.get(0);
      SimClient reader = clients.get(1);
      send(writer, new Pending(key, Op.Kind.PUT, "before", 0, "w-before".getBytes(StandardCharsets.UTF_8)));
      for (int i = 0; i < 200 && writer.inFlight != null; i++) { // the replicas' first promises run out first
        drainPending();
        clock += TICK_NANOS / 5;
        nodes.forEach(n -> n.replicator.tick());
      }
      drainPending(); // the followers' answers to the last heartbeat: the leader's lease starts now
      if (writer.inFlight != null) {
        throw new Violation("the first write was not acknowledged: " + describeAll());
      }
      SimNode old = node(stored.table("t").orElseThrow().shardFor(Key.of(key).partitionKey()).owner());
      if (restartFollowers) {
        for (SimNode n : nodes) {
          if (n != old) {
            note("CRASH and restart " + n.id + " (scripted)");
            n.crash();
            n.start();
          }
        }
      }
      note("PARTITION " + old.id + " (scripted)");
      old.isolated = true;
      controller();
      nodes.stream().filter(SimNode::zk).forEach(n -> n.applyMap(stored));
      writer.map = stored;
      step++;
      send(writer, new Pending(key, Op.Kind.PUT, "after", 0, "w-after".getBytes(StandardCharsets.UTF_8)));
      for (int i = 0; i < 200 && writer.inFlight != null; i++) {
        step++;
        if (reader.inFlight == null) {
          read(reader, key); // reader.map still names the old leader
        }
        drainPending();
        clock += TICK_NANOS / 5;
        nodes.stream().filter(n -> n.up).forEach(n -> n.replicator.tick());
      }
      if (writer.inFlight != null) {
        throw new Violation("the write at the new leader was not acknowledged within 2 s: " + describeAll());
      }
      step++;
      reader.inFlight = null; // a read still waiting at the cut-off leader never answers
      for (int i = 0; i < 5; i++) {
        read(reader, key);
        step++;
        reader.inFlight = null;
      }
      finish();
    } catch (Violation | RuntimeException e) {
      throw new Violation("scripted lease schedule: " + e + "\nlast events:\n  " + String.join("\n  ", trace));
    } finally {
      deleteFiles();
    }
    return stats;
  }

  /** Runs every pending event in order, none lost. */
  private void drainPending() {
    for (int i = 0; i < 10_000 && !pending.isEmpty(); i++) {
      Event e = pending.remove(0);
      note(e.what());
      e.action().run();
    }
  }

  List<String> trace() {
    return List.copyOf(trace);
  }

  private void note(String event) {
    if (trace.size() == TRACE) {
      trace.removeFirst();
    }
    trace.addLast("[" + step + "] " + event);
  }

  private boolean chance(double p) {
    return rnd.nextDouble() < p;
  }

  // ------------------------------------------------------------------ the scheduler

  private void step() {
    step++;
    stats.events++;
    int r = rnd.nextInt(1000);
    if (r < 300) {
      clientOp(clients.get(rnd.nextInt(CLIENTS)));
    } else if (r < 680) {
      runPending();
    } else if (r < 800) {
      advanceClock();
      for (SimNode n : nodes) {
        if (n.up) {
          n.replicator.tick();
        }
      }
    } else if (r < 880) {
      SimNode n = nodes.get(rnd.nextInt(NODES));
      if (n.up && n.zk()) {
        note(n.id + " applies the map at epoch " + stored.epoch() + " (watch)");
        n.applyMap(stored);
      }
    } else if (r < 930) {
      controller();
    } else if (r < 945) {
      SimNode n = nodes.get(rnd.nextInt(NODES));
      if (n.up) {
        stats.crashes++;
        if (chance(0.5)) {
          int unsynced = n.engine.unsyncedWrites();
          int kept = rnd.nextInt(unsynced + 1);
          note("CRASH " + n.id + " by a POWER LOSS: " + (unsynced - kept) + " of its " + unsynced + " unsynced writes lost");
          stats.powerLosses++;
          stats.unsyncedLost += unsynced - kept;
          n.engine.losePower(kept);
        } else {
          note("CRASH " + n.id);
        }
        n.crash();
      }
    } else if (r < 975) {
      SimNode n = nodes.get(rnd.nextInt(NODES));
      if (!n.up) {
        if (chance(0.3)) {
          n.wipe();
        }
        n.start();
        note("restart " + n.id + " at map epoch " + n.map.epoch());
      }
    } else if (r < 990) {
      SimNode n = nodes.get(rnd.nextInt(NODES));
      if (n.up && !n.isolated && nodes.stream().noneMatch(x -> x.isolated)) {
        note("PARTITION " + n.id + " (from the other nodes and from ZooKeeper)");
        stats.partitions++;
        n.isolated = true;
      }
    } else {
      for (SimNode n : nodes) {
        if (n.isolated) {
          note("heal " + n.id);
          n.isolated = false;
        }
      }
    }
    checkReplicas(false);
  }

  private void advanceClock() {
    clock += TICK_NANOS;
    tickSteps.add(step);
  }

  /** The first step at which the clock read {@code nanos} or more (0 before the start). */
  private long firstStepAt(long nanos) {
    if (nanos <= 0) {
      return 0;
    }
    int tick = (int) ((nanos + TICK_NANOS - 1) / TICK_NANOS);
    return tick < tickSteps.size() ? tickSteps.get(tick) : step;
  }

  /** Runs one pending event, or loses it. */
  private void runPending() {
    if (pending.isEmpty()) {
      return;
    }
    Event e = pending.remove(rnd.nextInt(pending.size()));
    if (chance(0.05)) {
      note("lost: " + e.what());
      stats.messagesLost++;
      e.lost().run();
      return;
    }
    note(e.what());
    e.action().run();
  }

  private void later(String what, Runnable action, Runnable lost) {
    pending.add(new Event(what, action, lost));
  }

  private SimNode node(NodeId id) {
    SimNode n = byId.get(id);
    if (n == null) {
      throw new java.util.NoSuchElementException("no node " + id);
    }
    return n;
  }

  // ------------------------------------------------------------------ the controller

  /** The balancer leader's failover, the nodes' own code ({@link io.shardwise.server.balance.Failover#plan}), on who ZooKeeper sees. */
  private void controller() {
    java.util.Set<NodeId> live = new java.util.HashSet<>();
    nodes.stream().filter(SimNode::zk).forEach(n -> live.add(n.id));
    Optional<ShardMapDelta> delta = io.shardwise.server.balance.Failover.plan(stored, live);
    if (delta.isPresent()) {
      ShardMap before = stored;
      stored = stored.apply(delta.get());
      stats.failovers += delta.get().changes().stream().filter(c -> c instanceof ShardMapDelta.ChangeLeader).count();
      note("FAILOVER (live " + live + "): " + delta.get().changes() + " (map epoch " + before.epoch() + " -> " + stored.epoch() + ")");
    }
  }

  // ------------------------------------------------------------------ nodes

  private final class SimNode {
    final NodeId id;
    int stores; // the engines this node has had: a wiped restart gets a new store id
    MemoryEngine engine;
    final java.nio.file.Path snapshotDir;
    boolean up;
    boolean isolated;
    int incarnation;
    Replicator replicator;
    ShardMap map = ShardMap.EMPTY;

    // This node's clock rate (SLOWEST_CLOCK to 1), from its own generator so that adding it left
    // the seeds' schedules as they were.
    final double clockRate;

    SimNode(NodeId id) {
      this.id = id;
      this.snapshotDir = files.resolve(id.value());
      this.clockRate = 1 - new Random(seed * 31 + id.value().hashCode()).nextDouble() * (1 - SLOWEST_CLOCK);
      this.engine = newEngine();
    }

    /** An empty engine with a store id and a wall clock of the schedule's own (so that the seed replays exactly). */
    MemoryEngine newEngine() {
      return new MemoryEngine(id.value() + "-store-" + ++stores, () -> clock / 1_000_000);
    }

    /** This node's clock: monotonic, at its own rate. */
    long nanos() {
      return (long) (clock * clockRate);
    }

    /** Reachable by ZooKeeper: its session lives. */
    boolean zk() {
      return up && !isolated;
    }

    void start() {
      up = true;
      int inc = ++incarnation;
      map = ShardMap.EMPTY;
      java.util.concurrent.Executor tasks = task -> later(id + " runs a task", () -> {
        if (alive(inc)) {
          task.run();
        }
      }, () -> {
        if (alive(inc)) {
          task.run(); // a task is never lost; it only runs late
        }
      });
      replicator = new Replicator(id, engine, transport(this, inc), mapUpdates(this, inc), tasks, tasks, snapshotDir, this::nanos, CONFIG);
      applyMap(stored); // a starting node reads the map before it serves
    }

    /**
     * Replaces the (stopped) node's engine by an empty one, and does what a node starting on it
     * does first ({@code StoreTrust}): forgets its replicas in the map, or refuses, and then the
     * old engine is put back (an operator restoring the directory).
     */
    void wipe() {
      java.util.Set<NodeId> others = new java.util.HashSet<>();
      nodes.stream().filter(m -> m != this && m.zk()).forEach(m -> others.add(m.id));
      io.shardwise.server.balance.Failover.Forgetting f = io.shardwise.server.balance.Failover.forget(stored, id, others);
      if (!f.stranded().isEmpty()) {
        note("WIPE " + id + " refused: it is the only in-sync replica of " + f.stranded() + "; its directory is put back");
        return;
      }
      engine = newEngine();
      stats.wipes++;
      ShardMap before = stored;
      ShardMapDelta.Builder delta = ShardMapDelta.on(stored);
      f.delta().ifPresent(d -> d.changes().forEach(delta::add));
      stored = stored.apply(delta.add(new ShardMapDelta.GrantStore(id, engine.storeId())).build());
      note("WIPE " + id + ": a new store; it forgets its replicas: " + f.delta().map(ShardMapDelta::changes).orElse(List.of())
          + " (map epoch " + before.epoch() + " -> " + stored.epoch() + ")");
    }

    boolean alive(int inc) {
      return up && incarnation == inc;
    }

    void crash() {
      up = false;
      isolated = false;
      replicator = null;
      map = ShardMap.EMPTY;
      for (SimClient c : clients) {
        c.crashed(this);
      }
    }

    void applyMap(ShardMap next) {
      if (next.epoch() <= map.epoch()) {
        return;
      }
      ShardMap previous = map;
      map = next;
      replicator.apply(previous, next);
    }
  }

  private Replicator.Transport transport(SimNode from, int inc) {
    return new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
        sendAppend(from, inc, to, batch, done);
      }

      @Override
      public void sendSnapshot(NodeId to, NodeId leader, Messages.SnapshotOffer offer, java.nio.file.Path file,
          java.util.function.BiConsumer<Messages.ShardReply, Throwable> done) {
        // The file is the sender's until the call returns: the receiver gets its own copy, as over the network.
        SimNode dest = node(to);
        java.nio.file.Path copy = file == null ? null : files.resolve("on-the-wire-" + (++filesSent) + ".sst");
        try {
          if (file != null) {
            java.nio.file.Files.copy(file, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
          }
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
        later(from.id + " -> " + to + ": snapshot of " + offer.shard().shardNumber() + "@" + offer.epoch() + " at " + offer.offset(), () -> {
          if (!from.alive(inc)) {
            deleteQuietly(copy);
            return;
          }
          if (!dest.up || dest.isolated || from.isolated) {
            deleteQuietly(copy);
            done.accept(null, new IllegalStateException(to + " unreachable"));
            return;
          }
          Messages.ShardReply reply = dest.replicator.onSnapshot(leader, offer, copy);
          deleteQuietly(copy);
          if (reply.outcome() == Messages.Outcome.OK) {
            stats.snapshots++;
          }
          later(to + " -> " + from.id + ": snapshot reply " + reply, () -> {
            if (from.alive(inc)) {
              done.accept(from.isolated || dest.isolated ? null : reply, from.isolated || dest.isolated ? new IllegalStateException("cut off") : null);
            }
          }, () -> {
            if (from.alive(inc)) {
              done.accept(null, new IllegalStateException("reply lost"));
            }
          });
        }, () -> {
          deleteQuietly(copy);
          if (from.alive(inc)) {
            done.accept(null, new IllegalStateException("request lost"));
          }
        });
      }
    };
  }

  private static void deleteQuietly(java.nio.file.Path file) {
    if (file != null) {
      try {
        java.nio.file.Files.deleteIfExists(file);
      } catch (java.io.IOException ignored) {
        // a temporary directory
      }
    }
  }

  private void sendAppend(SimNode from, int inc, NodeId to, AppendBatch batch, java.util.function.BiConsumer<AppendReply, Throwable> done) {
    SimNode dest = node(to);
    later(from.id + " -> " + to + ": append " + describe(batch), () -> {
      if (!from.alive(inc)) {
        return; // the sender died: nobody hears the reply
      }
      if (!dest.up || dest.isolated || from.isolated) {
        done.accept(null, new IllegalStateException(to + " unreachable"));
        return;
      }
      AppendReply reply = dest.replicator.onAppend(batch);
      later(to + " -> " + from.id + ": reply " + reply.shards(), () -> {
        if (from.alive(inc)) {
          done.accept(from.isolated || dest.isolated ? null : reply, from.isolated || dest.isolated ? new IllegalStateException("cut off") : null);
        }
      }, () -> {
        if (from.alive(inc)) {
          done.accept(null, new IllegalStateException("reply lost"));
        }
      });
    }, () -> {
      if (from.alive(inc)) {
        done.accept(null, new IllegalStateException("request lost"));
      }
    });
  }

  private static String describe(AppendBatch batch) {
    List<String> parts = new ArrayList<>();
    for (Messages.ShardAppend a : batch.shards()) {
      parts.add(a.shard().shardNumber() + "@" + a.epoch() + " prev " + a.prevOffset() + "/" + a.prevEpoch() + " +" + a.entries().size()
          + " commit " + a.commit());
    }
    return parts.toString();
  }

  private Replicator.MapUpdates mapUpdates(SimNode from, int inc) {
    return (change, done) -> later(from.id + " changes the map", () -> {
      if (!from.alive(inc)) {
        return;
      }
      if (from.isolated) {
        done.accept(null, new IllegalStateException("ZooKeeper unreachable"));
        return;
      }
      Optional<ShardMapDelta> delta = change.apply(stored);
      if (delta.isPresent()) {
        stored = stored.apply(delta.get());
        stats.inSyncChanges++;
        note(from.id + ": map stored at epoch " + stored.epoch() + " " + delta.get().changes());
      }
      ShardMap answer = stored;
      if (chance(0.1)) {
        note(from.id + ": the map change's reply was lost");
        done.accept(null, new IllegalStateException("connection loss"));
        return;
      }
      from.applyMap(answer);
      done.accept(answer, null);
    }, () -> {
      if (from.alive(inc)) {
        done.accept(null, new IllegalStateException("not sent"));
      }
    });
  }

  // ------------------------------------------------------------------ clients

  /** One operation a client has sent and not yet heard the end of. */
  private final class Pending {
    final String key;
    final Op.Kind kind;
    final String value;
    final long expected;
    final byte[] writeId;
    final long invoked;
    long sent;
    SimNode at;

    /** An append of {@link #value} to {@link #FEED}, not a register write. */
    boolean append;

    Pending(String key, Op.Kind kind, String value, long expected, byte[] writeId) {
      this.key = key;
      this.kind = kind;
      this.value = value;
      this.expected = expected;
      this.writeId = writeId;
      this.invoked = step;
    }
  }

  private final class SimClient {
    final int id;
    ShardMap map = ShardMap.EMPTY;
    Pending inFlight; // sent, no answer yet
    Pending unknown; // its outcome is unknown: retried under the same write id, or given up

    SimClient(int id) {
      this.id = id;
    }

    void crashed(SimNode n) {
      // Its answer will never come: a write's outcome is unknown (it may have been appended and replicated).
      if (inFlight != null && inFlight.at == n) {
        if (inFlight.kind == Op.Kind.GET) {
          inFlight = null;
        } else {
          ended(inFlight, Op.Outcome.UNKNOWN, 0, false);
        }
      }
    }

    /** Records how {@code p} ended; an unknown outcome is kept for a retry. */
    void ended(Pending p, Op.Outcome outcome, long version, boolean found) {
      if (inFlight == p) {
        inFlight = null;
      }
      if (outcome == Op.Outcome.UNKNOWN) {
        stats.writesUnknown++;
        unknown = p;
        note("client " + id + ": " + p.kind + " " + p.key + " unknown");
        return;
      }
      if (unknown == p) {
        unknown = null;
      }
      if (p.append) {
        if (outcome == Op.Outcome.OK) {
          stats.appendsOk++;
          appendsAcknowledged.put(p.value, new long[] {p.invoked, step});
        }
        note("client " + id + ": append " + p.value + " " + outcome);
        return;
      }
      Op op = switch (p.kind) {
        case PUT -> Op.put(id, p.value, p.invoked, step, outcome, version);
        case PUT_IF_VERSION -> Op.putIfVersion(id, p.value, p.expected, p.invoked, step, outcome, version);
        case DELETE -> Op.delete(id, p.invoked, step, outcome, found);
        case GET -> throw new IllegalStateException("reads end at once");
      };
      if (outcome == Op.Outcome.OK) {
        stats.writesOk++;
      } else {
        stats.writesFailed++;
      }
      history.computeIfAbsent(p.key, k -> new ArrayList<>()).add(op);
      note("client " + id + ": " + op);
    }

    /** Gives up on the unknown operation: it goes into the history as unknown. */
    void abandon() {
      Pending p = unknown;
      unknown = null;
      if (p.append) {
        return; // in appendsInvoked: it may be in the list or not, but at most once
      }
      Op op = switch (p.kind) {
        case PUT -> Op.put(id, p.value, p.invoked, step, Op.Outcome.UNKNOWN, 0);
        case PUT_IF_VERSION -> Op.putIfVersion(id, p.value, p.expected, p.invoked, step, Op.Outcome.UNKNOWN, 0);
        case DELETE -> Op.delete(id, p.invoked, step, Op.Outcome.UNKNOWN, false);
        case GET -> throw new IllegalStateException("reads end at once");
      };
      history.computeIfAbsent(p.key, k -> new ArrayList<>()).add(op);
    }
  }

  /** How long a client waits for an answer before it gives up (a write's outcome is then unknown). */
  private static final int CLIENT_TIMEOUT_EVENTS = 60;

  private void clientOp(SimClient c) {
    if (c.inFlight != null) {
      if (step - c.inFlight.sent > CLIENT_TIMEOUT_EVENTS) {
        Pending p = c.inFlight;
        note("client " + c.id + ": " + p.kind + " " + p.key + " timed out at " + p.at.id);
        if (p.kind == Op.Kind.GET) {
          c.inFlight = null; // a read that never answered changed nothing
        } else {
          ended(c, p, Op.Outcome.UNKNOWN, 0, false);
        }
      }
      return; // one operation at a time per client
    }
    if (chance(0.1)) {
      c.map = stored; // a periodic refresh
    }
    if (c.unknown != null) {
      if (chance(0.7)) {
        send(c, c.unknown); // the same write id: answered from its record if it was applied
      } else {
        c.abandon();
      }
      return;
    }
    if (withFeed && chance(0.3)) {
      if (chance(0.4)) {
        readFeed(c);
      } else {
        String element = "a" + (++writeCounter);
        Pending p = new Pending(FEED, Op.Kind.PUT, element, 0, ("c" + c.id + "-" + writeCounter).getBytes(StandardCharsets.UTF_8));
        p.append = true;
        appendsInvoked.add(element);
        send(c, p);
      }
      return;
    }
    String key = "k" + rnd.nextInt(KEYS);
    int kind = rnd.nextInt(100);
    if (kind < 20) {
      read(c, key);
      return;
    }
    if (kind < 30) {
      followerRead(c, key);
      return;
    }
    String value = "v" + (++writeCounter);
    byte[] writeId = ("c" + c.id + "-" + writeCounter).getBytes(StandardCharsets.UTF_8);
    Pending p = kind < 65 ? new Pending(key, Op.Kind.PUT, value, 0, writeId)
        : kind < 85 ? new Pending(key, Op.Kind.PUT_IF_VERSION, value, rnd.nextInt(4), writeId)
            : new Pending(key, Op.Kind.DELETE, null, 0, writeId);
    send(c, p);
  }

  private ShardRef refOf(ShardMap map, String key) {
    Table t = map.table("t").orElseThrow();
    return ShardRef.of(t, t.shardFor(Key.of(key).partitionKey()).id().number());
  }

  private void send(SimClient c, Pending p) {
    Table t = c.map.table("t").orElseThrow();
    SimNode target = node(t.shardFor(Key.of(p.key).partitionKey()).owner());
    if (!target.up) { // a partition cuts nodes from each other and from ZooKeeper, not from their clients
      note("client " + c.id + ": " + p.kind + " " + p.key + ": " + target.id + " unreachable");
      c.map = stored;
      if (c.unknown == null) {
        stats.writesFailed++; // never sent: nothing happened (not recorded: a definite failure)
      }
      return;
    }
    ShardRef ref = refOf(stored, p.key); // MOD: a key's shard number never changes
    byte[] element = p.append ? p.value.getBytes(StandardCharsets.UTF_8) : null;
    Mutation m = p.append
        ? Mutation.transform(ref, Key.of(p.key).encode(), v -> Lists.append(v, element, clock / 1_000, Lists.KEY, 1 << 20))
            .withRequestId(p.writeId)
        : new Mutation(ref, Key.of(p.key).encode(), p.value == null ? null : p.value.getBytes(StandardCharsets.UTF_8),
            p.kind == Op.Kind.PUT_IF_VERSION ? p.expected : Mutation.ANY).withRequestId(p.writeId);
    p.at = target;
    p.sent = step;
    c.inFlight = p;
    note("client " + c.id + ": sends " + p.kind + " " + p.key + (p.value == null ? "" : "=" + p.value) + " to " + target.id);
    CompletableFuture<long[]> f = target.replicator.write(ref, List.of(m));
    f.whenComplete((results, failure) -> {
      if (c.inFlight != p) {
        return; // already ended (its node crashed)
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
      if (cause == null) {
        long version = results[0];
        ended(c, p, Op.Outcome.OK, version, version > 0);
      } else if (cause instanceof VersionMismatchException vm) {
        ended(c, p, Op.Outcome.FAILED, vm.actual(), false);
      } else if (cause instanceof Replica.NotApplied) {
        note("client " + c.id + ": " + p.kind + " " + p.key + " refused: " + cause.getMessage());
        c.inFlight = null;
        c.map = stored;
        if (c.unknown != p) {
          stats.writesFailed++; // nothing was appended: it did not happen
        }
      } else {
        ended(c, p, Op.Outcome.UNKNOWN, 0, false);
      }
    });
  }

  private void ended(SimClient c, Pending p, Op.Outcome outcome, long version, boolean found) {
    c.ended(p, outcome, version, found);
  }

  /**
   * A linearizable read at the leader the client's map names: the node's read barrier first, then
   * its data (the value is taken when the barrier completes, which is inside the read's interval).
   * Clients reach a node cut off from the others: only the barrier keeps it from answering stale.
   */
  private void read(SimClient c, String key) {
    Table t = c.map.table("t").orElseThrow();
    SimNode n = node(t.shardFor(Key.of(key).partitionKey()).owner());
    ShardRef ref = refOf(stored, key);
    if (!n.up) {
      c.map = stored;
      return;
    }
    Pending p = new Pending(key, Op.Kind.GET, null, 0, null);
    p.at = n;
    p.sent = step;
    c.inFlight = p;
    int inc = n.incarnation;
    note("client " + c.id + ": reads " + key + " at " + n.id);
    java.util.concurrent.CompletableFuture<Void> barrier = n.replicator.readBarrier(ref);
    boolean atOnce = barrier.isDone();
    barrier.whenComplete((v, failure) -> {
      if (c.inFlight != p) {
        return; // given up on
      }
      c.inFlight = null;
      if (failure != null || !n.alive(inc)) {
        c.map = stored;
        note("client " + c.id + ": read " + key + " at " + n.id + " refused: " + (failure == null ? "crashed" : failure.getMessage()));
        return;
      }
      Versioned got = n.engine.get(ref, Key.of(key).encode());
      stats.reads++;
      stats.leaseReads += atOnce ? 1 : 0;
      Op op = Op.get(c.id, got == null ? null : new String(got.value(), StandardCharsets.UTF_8), got == null ? 0 : got.version(), p.invoked,
          step);
      history.computeIfAbsent(key, k -> new ArrayList<>()).add(op);
      note("client " + c.id + ": " + op + " at " + n.id);
    });
  }

  /**
   * A linearizable read of {@link #FEED} at its leader, checked at once: each element acknowledged
   * before the read began is in it, once, and nothing never appended (the order is checked against
   * the final list at the end).
   */
  private void readFeed(SimClient c) {
    Table t = c.map.table("t").orElseThrow();
    SimNode n = node(t.shardFor(Key.of(FEED).partitionKey()).owner());
    ShardRef ref = refOf(stored, FEED);
    if (!n.up) {
      c.map = stored;
      return;
    }
    Pending p = new Pending(FEED, Op.Kind.GET, null, 0, null);
    p.at = n;
    p.sent = step;
    c.inFlight = p;
    int inc = n.incarnation;
    n.replicator.readBarrier(ref).whenComplete((v, failure) -> {
      if (c.inFlight != p) {
        return;
      }
      c.inFlight = null;
      if (failure != null || !n.alive(inc)) {
        c.map = stored;
        return;
      }
      Versioned got = n.engine.get(ref, Key.of(FEED).encode());
      List<String> read = checkFeed(got, p.invoked, "a read at " + n.id + " (steps " + p.invoked + "-" + step + ")");
      feedReads.add(read);
      stats.feedReads++;
      note("client " + c.id + ": feed read at " + n.id + ": " + read.size() + " elements");
    });
  }

  /** The elements of a read of the feed, checked: no element twice, none never appended, every one acknowledged before {@code invoked}. */
  private List<String> checkFeed(Versioned got, long invoked, String what) {
    List<String> read = new ArrayList<>();
    if (got != null) {
      for (byte[] e : Lists.values(((Lists.Plain) Lists.decode(got.value())).elements())) {
        read.add(new String(e, StandardCharsets.UTF_8));
      }
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (String e : read) {
      if (!seen.add(e)) {
        throw new Violation(what + " holds " + e + " twice: an append was applied twice");
      }
      if (!appendsInvoked.contains(e)) {
        throw new Violation(what + " holds " + e + ", never appended");
      }
    }
    appendsAcknowledged.forEach((e, at) -> {
      if (at[1] < invoked && !seen.contains(e)) {
        throw new Violation(what + " lacks " + e + ", acknowledged at step " + at[1] + ": an acknowledged append was lost");
      }
    });
    return read;
  }

  /** How stale a follower read may be: ten ticks (the heartbeat is two). */
  private static final long FOLLOWER_STALENESS_NANOS = 10 * TICK_NANOS;

  /**
   * A bounded-staleness read at a replica the client's map names, chosen at random. If answered,
   * it is recorded as a read invoked when the clock read {@code now - bound}: the checker then
   * requires it to see every write acknowledged before that and no write never committed — exactly
   * the promise of a follower read.
   */
  private void followerRead(SimClient c, String key) {
    Table t = c.map.table("t").orElseThrow();
    List<NodeId> replicas = t.shardFor(Key.of(key).partitionKey()).replicas();
    SimNode n = node(replicas.get(rnd.nextInt(replicas.size())));
    if (!n.up) {
      return;
    }
    ShardRef ref = refOf(stored, key);
    java.util.Optional<java.util.Optional<Versioned>> read = n.replicator.readAsFollower(ref, FOLLOWER_STALENESS_NANOS,
        () -> java.util.Optional.ofNullable(n.engine.get(ref, Key.of(key).encode())));
    if (read.isEmpty()) {
      stats.followerReadsRefused++; // the leader would answer: a linearizable read, tested by read()
      return;
    }
    Versioned got = read.get().orElse(null);
    stats.followerReads++;
    Op op = Op.get(c.id, got == null ? null : new String(got.value(), StandardCharsets.UTF_8), got == null ? 0 : got.version(),
        firstStepAt(clock - (long) (FOLLOWER_STALENESS_NANOS / SLOWEST_CLOCK)), step); // the bound on the follower's clock
    history.computeIfAbsent(key, k -> new ArrayList<>()).add(op);
    note("client " + c.id + ": follower read " + op + " at " + n.id);
  }

  // ------------------------------------------------------------------ checks

  /**
   * What a replica applies is committed, and a committed entry is in the log of every replica the
   * stored map names in sync (any of them may lead next): so no replica's data ever holds an entry
   * that an in-sync replica's log lacks or has at another epoch. At the end, every in-sync replica
   * holds exactly the leader's data.
   */
  private void checkReplicas(boolean end) {
    Table t = stored.table("t").orElseThrow();
    for (ShardAssignment a : t.shards()) {
      ShardRef ref = ShardRef.of(t, a.id().number());
      List<NodeId> inSync = a.inSyncReplicas();
      SimNode leader = node(a.owner());
      for (SimNode n : nodes) {
        ReplicaStorage log = n.engine.replicaStorage();
        ReplicaStorage.LogState s = log.state(ref);
        for (NodeId holder : inSync) {
          SimNode m = node(holder);
          ReplicaStorage theirs = m.engine.replicaStorage();
          ReplicaStorage.LogState l = theirs.state(ref);
          if (l.lastOffset() < s.appliedOffset()) {
            throw new Violation(n.id + " applied " + ref + " up to " + s.appliedOffset() + " but the in-sync " + m.id + " holds only up to "
                + l.lastOffset() + ": an entry that was never committed reached a replica's data");
          }
          for (long o = Math.max(s.baseOffset(), l.baseOffset()) + 1; o <= s.appliedOffset(); o++) {
            long mine = log.epochOf(ref, o);
            long other = theirs.epochOf(ref, o);
            if (mine != -1 && other != -1 && mine != other) {
              throw new Violation(n.id + " applied entry " + o + " of " + ref + " at epoch " + mine + " but the in-sync " + m.id
                  + " holds it at epoch " + other + ": an uncommitted entry reached a replica's data");
            }
          }
        }
        ReplicaStorage.LogState l = leader.engine.replicaStorage().state(ref);
        if (end && inSync.contains(n.id)) {
          if (s.appliedOffset() != l.appliedOffset()) {
            throw new Violation("at the end " + n.id + " applied " + ref + " up to " + s.appliedOffset() + ", the leader " + leader.id + " up to "
                + l.appliedOffset());
          }
          for (int k = 0; k <= KEYS; k++) {
            String key = k == KEYS ? FEED : "k" + k;
            if (!refOf(stored, key).equals(ref)) {
              continue;
            }
            Versioned mine = n.engine.get(ref, Key.of(key).encode());
            Versioned theirs = leader.engine.get(ref, Key.of(key).encode());
            if (!same(mine, theirs)) {
              throw new Violation("at the end the in-sync " + n.id + " holds " + key + " = " + mine + ", the leader " + leader.id + " " + theirs);
            }
          }
        }
      }
    }
  }

  private static boolean same(Versioned a, Versioned b) {
    return a == null ? b == null : b != null && a.version() == b.version() && Arrays.equals(a.value(), b.value());
  }

  // ------------------------------------------------------------------ the end

  /** Everything heals and restarts; the cluster settles; every key is read at its leader; the histories are checked. */
  private void finish() {
    note("end: heal, restart, settle");
    for (SimNode n : nodes) {
      n.isolated = false;
      if (!n.up) {
        n.start();
      }
    }
    for (int round = 0; round < 400; round++) {
      nodes.forEach(n -> n.applyMap(stored));
      while (!pending.isEmpty()) {
        Event e = pending.remove(0);
        e.action().run();
      }
      advanceClock();
      nodes.forEach(n -> n.replicator.tick());
      controller();
      if (pending.isEmpty() && settled()) {
        break;
      }
    }
    if (!settled()) {
      throw new Violation("the cluster did not settle: " + describeAll());
    }
    for (SimClient c : clients) {
      if (c.inFlight != null && c.inFlight.kind == Op.Kind.GET) {
        c.inFlight = null;
      } else if (c.inFlight != null) {
        c.ended(c.inFlight, Op.Outcome.UNKNOWN, 0, false);
      }
      if (c.unknown != null) {
        c.abandon();
      }
    }
    SimClient reader = clients.get(0);
    for (int k = 0; k < KEYS; k++) {
      String key = "k" + k;
      long readsBefore = stats.reads;
      for (int attempt = 0; attempt < 3 && stats.reads == readsBefore; attempt++) {
        reader.map = stored;
        read(reader, key);
        for (int round = 0; round < 50 && reader.inFlight != null; round++) {
          while (!pending.isEmpty()) {
            pending.remove(0).action().run();
          }
          advanceClock();
          nodes.forEach(n -> n.replicator.tick());
        }
        reader.inFlight = null;
      }
      if (stats.reads == readsBefore) {
        throw new Violation("at the end, a read of " + key + " did not complete: " + describeAll());
      }
    }
    checkReplicas(true);
    if (withFeed) {
      Table t = stored.table("t").orElseThrow();
      SimNode leader = node(t.shardFor(Key.of(FEED).partitionKey()).owner());
      List<String> last = checkFeed(leader.engine.get(refOf(stored, FEED), Key.of(FEED).encode()), step + 1, "the final list");
      Map<String, Integer> position = new java.util.HashMap<>();
      for (int i = 0; i < last.size(); i++) {
        position.put(last.get(i), i);
      }
      for (List<String> read : feedReads) {
        for (int i = 0; i < read.size(); i++) {
          Integer at = position.get(read.get(i));
          if (at == null) {
            throw new Violation("a read of the feed held " + read.get(i) + ", which the final list lacks: a read saw an append that was lost");
          }
          if (i > 0 && position.get(read.get(i - 1)) > at) {
            throw new Violation("a read of the feed has " + read.get(i - 1) + " before " + read.get(i) + ", the final list after");
          }
        }
      }
    }
    Optional<LinearizabilityChecker.Violation> v = LinearizabilityChecker.check(history);
    if (v.isPresent()) {
      throw new Violation(v.get().toString());
    }
  }

  /** Every shard's leader (in the stored map) leads, is ready, and every in-sync follower has applied all it committed. */
  private boolean settled() {
    Table t = stored.table("t").orElseThrow();
    for (ShardAssignment a : t.shards()) {
      ShardRef ref = ShardRef.of(t, a.id().number());
      SimNode leader = node(a.owner());
      Optional<Replica> r = leader.replicator.replica(ref);
      if (r.isEmpty() || r.get().role() != Replica.Role.LEADER || !r.get().whenReady().isDone()) {
        return false;
      }
      long applied = leader.engine.replicaStorage().state(ref).appliedOffset();
      if (applied != leader.engine.replicaStorage().state(ref).lastOffset()) {
        return false;
      }
      for (NodeId f : a.inSync()) {
        if (node(f).engine.replicaStorage().state(ref).appliedOffset() != applied) {
          return false;
        }
      }
    }
    return true;
  }

  private String describeAll() {
    List<String> out = new ArrayList<>();
    out.add("map epoch " + stored.epoch() + " " + stored.table("t").orElseThrow().shards());
    for (SimNode n : nodes) {
      out.add(n.id + (n.up ? "" : " (down)") + ": " + n.replicator.describe());
    }
    return String.join("\n  ", out);
  }
}
