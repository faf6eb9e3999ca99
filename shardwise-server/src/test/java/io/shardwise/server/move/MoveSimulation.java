package io.shardwise.server.move;

import io.grpc.Status;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.MapStore;
import io.shardwise.server.rpc.AppliedMap;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.shard.LocalShards;
import io.shardwise.server.shard.ShardFencedException;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.storage.Versioned;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * One seeded schedule of the move protocol, run in one thread: the real {@link ShardMover}, {@link
 * MoveDestination} and {@link LocalShards} fences, on {@link ShardStore}s (RocksDB) or on {@link
 * MemoryEngine}s, with the map kept in memory ({@link MapStore}) and the node-to-node calls made
 * directly ({@link MoveTarget}). The
 * seed decides everything: which client writes or reads which key through which (possibly stale)
 * map, when a move starts and between which of its calls other events run, which requests and
 * replies are lost, and when a node crashes (its process state is gone, its store stays: kill -9)
 * and restarts.
 *
 * <p>Invariants are checked as events happen and after every event:
 *
 * <ul>
 *   <li>every shard epoch has one owner in all the maps ever stored, and a shard's epoch only rises;
 *   <li>a read or a write is served only by the shard's owner in the stored map, at that instant;
 *   <li>every answer equals the model's (the model applies every write the store applied, whether
 *       its reply reached the client or not): a linearizable register per key;
 *   <li>a repeated write id answers its first result and writes nothing;
 *   <li>every key's value on its owner's store equals the model: nothing acknowledged is lost;
 *   <li>at the end, with every node up and every map delivered, every shard is served by its owner.
 * </ul>
 *
 * A broken invariant throws {@link Violation} with the seed and the last events.
 */
final class MoveSimulation {

  /** A broken invariant. */
  static final class Violation extends AssertionError {
    private static final long serialVersionUID = 1L;

    Violation(String message) {
      super(message);
    }
  }

  /** The crash of the process the code runs in: unwinds it like kill -9 stops it (no catch of RuntimeException sees it). */
  static final class Crash extends Error {
    private static final long serialVersionUID = 1L;

    Crash(String message) {
      super(message, null, false, false);
    }
  }

  /** What a campaign of schedules did, summed. */
  static final class Stats {
    long events;
    long reads;
    long writesAcknowledged;
    long writesFenced;
    long repliesLost;
    long requestsLost;
    long retries;
    long movesStarted;
    long movesCutOver;
    long movesAbandoned;
    long movesCrashed;
    long cutoversLostReply;
    long crashes;

    void add(Stats o) {
      events += o.events;
      reads += o.reads;
      writesAcknowledged += o.writesAcknowledged;
      writesFenced += o.writesFenced;
      repliesLost += o.repliesLost;
      requestsLost += o.requestsLost;
      retries += o.retries;
      movesStarted += o.movesStarted;
      movesCutOver += o.movesCutOver;
      movesAbandoned += o.movesAbandoned;
      movesCrashed += o.movesCrashed;
      cutoversLostReply += o.cutoversLostReply;
      crashes += o.crashes;
    }

    @Override
    public String toString() {
      return events + " events, " + reads + " reads, " + writesAcknowledged + " writes acknowledged, " + writesFenced
          + " requests fenced, " + requestsLost + " requests and " + repliesLost + " replies lost, " + retries + " retried writes, "
          + movesStarted + " moves (" + movesCutOver + " cut over, " + movesAbandoned + " abandoned, " + movesCrashed
          + " stopped by a crash; " + cutoversLostReply + " cutover replies lost), " + crashes + " crashes";
    }
  }

  private static final int SHARDS = 4;
  private static final int KEYS = 10;
  private static final String[] KEY_NAMES = java.util.stream.IntStream.range(0, KEYS).mapToObj(k -> "k" + k).toArray(String[]::new);
  private static final byte[][] ENCODED_KEYS = java.util.Arrays.stream(KEY_NAMES).map(k -> Key.of(k).encode()).toArray(byte[][]::new);
  private static final int CLIENTS = 3;
  private static final int EVENTS = 120;
  private static final int MAX_NESTED_MOVES = 2;
  private static final int TRACE = 60;
  /** The schedule's one table: its id, and the map's first epoch. */
  static final long TABLE_ID = 1;

  private final long seed;
  private final Random rnd;
  private final Stats stats = new Stats();
  private final ArrayDeque<String> trace = new ArrayDeque<>();
  private final List<SimNode> nodes = new ArrayList<>();
  private final List<SimClient> clients = new ArrayList<>();
  private final Map<String, Model> model = new TreeMap<>();
  private final Map<String, NodeId> ownerAtEpoch = new HashMap<>();
  private final Map<Long, Long> shardEpoch = new HashMap<>();
  private final Map<String, ShardRef> refs = new HashMap<>(); // see refOf
  /** Meters that record nothing (a composite over no registry): the simulation reads none, and a timer's percentiles cost more than a seed. */
  private final MoveMetrics metrics = new MoveMetrics(new CompositeMeterRegistry());
  private final String table = "t";
  private final long tableId = TABLE_ID;
  private long digest = 1125899906842597L;
  private ShardMap stored;
  private int budget = EVENTS;
  private int movesRunning;
  private long writeCounter;
  private long moveCounter;
  private long clock;

  /**
   * @param stores one engine per node, holding nothing of table {@link #TABLE_ID} yet
   * @param workDirs one move directory per node
   */
  MoveSimulation(long seed, List<? extends ShardEngine> stores, List<Path> workDirs) {
    this.seed = seed;
    this.rnd = new Random(seed);
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, SHARDS, stores.size(), KeySample.empty()).layout();
    List<ShardAssignment> shards = new ArrayList<>();
    for (int i = 0; i < SHARDS; i++) {
      shards.add(new ShardAssignment(new ShardId(table, i), NodeId.of("n" + (1 + rnd.nextInt(stores.size()))), tableId));
    }
    stored = ShardMap.restore(tableId, List.of(ShardMap.table(table, tableId, spec, layout, shards)));
    recordStored(stored);
    for (int i = 0; i < stores.size(); i++) {
      nodes.add(new SimNode(NodeId.of("n" + (i + 1)), stores.get(i), workDirs.get(i)));
    }
    nodes.forEach(SimNode::start);
    for (int i = 0; i < CLIENTS; i++) {
      clients.add(new SimClient(i, stored));
    }
  }

  /** Runs the schedule; returns what it did, or throws {@link Violation}. */
  Stats run() {
    try {
      while (budget > 0) {
        step();
      }
      finish();
    } catch (Violation v) {
      throw new Violation("seed " + seed + ": " + v.getMessage() + "\nlast events:\n  " + String.join("\n  ", trace)
          + "\nreplay: mvn -pl shardwise-server test -Dtest=MoveSimulationTest -Dshardwise.sim.seed=" + seed);
    }
    return stats;
  }

  /** The last events, oldest first. */
  List<String> trace() {
    return List.copyOf(trace);
  }

  /** A hash of every event of the schedule, in order: two engines that behave alike give one digest per seed. */
  long digest() {
    return digest;
  }

  // ------------------------------------------------------------------ the scheduler

  /** Runs one event, if the budget allows; invariants are checked after it. */
  private void step() {
    if (budget <= 0) {
      return;
    }
    budget--;
    stats.events++;
    int r = rnd.nextInt(100);
    if (r < 55) {
      clientOp(clients.get(rnd.nextInt(clients.size())));
    } else if (r < 72) {
      SimNode n = nodes.get(rnd.nextInt(nodes.size()));
      if (n.up) {
        note(n.id + " applies the map at epoch " + stored.epoch() + " (watch)");
        n.applyMap(n.incarnation, stored);
      }
    } else if (r < 86) {
      startMove();
    } else if (r < 90) {
      SimNode n = nodes.get(rnd.nextInt(nodes.size()));
      if (n.up) {
        note("CRASH " + n.id);
        stats.crashes++;
        n.crash();
      }
    } else {
      SimNode n = nodes.get(rnd.nextInt(nodes.size()));
      if (!n.up) {
        n.start();
        note("restart " + n.id + " (incarnation " + n.incarnation + "), map epoch " + n.map.current().epoch());
      }
    }
    checkStores();
  }

  /** Where a protocol call lets the rest of the world move: zero to two other events. */
  private void yieldPoint() {
    for (int n = rnd.nextInt(3); n > 0; n--) {
      step();
    }
  }

  private boolean chance(double p) {
    return rnd.nextDouble() < p;
  }

  private void note(String event) {
    digest = 31 * digest + event.hashCode();
    if (trace.size() == TRACE) {
      trace.removeFirst();
    }
    trace.addLast(event);
  }

  private void finish() {
    for (SimNode n : nodes) {
      if (!n.up) {
        n.start();
      }
      n.applyMap(n.incarnation, stored);
    }
    note("end: every node up at map epoch " + stored.epoch());
    for (SimClient c : clients) {
      c.map = stored;
      if (c.pending != null) {
        retry(c);
      }
    }
    checkStores();
    for (int k = 0; k < KEYS; k++) {
      String name = "k" + k;
      SimNode owner = node(stored.table(table).orElseThrow().shardFor(Key.of(name).partitionKey()).owner());
      try {
        read(owner, name);
      } catch (ShardFencedException e) {
        throw new Violation("at the end, " + owner.id + " owns the shard of " + name + " but does not serve it: " + e.getMessage());
      }
    }
  }

  // ------------------------------------------------------------------ the map

  private void recordStored(ShardMap map) {
    for (ShardAssignment s : map.table(table).orElseThrow().shards()) {
      NodeId was = ownerAtEpoch.putIfAbsent(s.id().number() + "@" + s.epoch(), s.owner());
      if (was != null && !was.equals(s.owner())) {
        throw new Violation("shard " + s.id() + " has two owners at epoch " + s.epoch() + ": " + was + " and " + s.owner());
      }
      Long before = shardEpoch.put(s.id().number(), s.epoch());
      if (before != null && before > s.epoch()) {
        throw new Violation("shard " + s.id() + " went back from epoch " + before + " to " + s.epoch());
      }
    }
  }

  private ShardAssignment ownerInStoredMap(ShardRef ref) {
    return stored.shard(ref.tableId(), ref.shardNumber()).orElseThrow();
  }

  /** The map in memory, as one node's process reaches it: every call is a yield point and may lose its reply. */
  private MapStore mapStoreFor(SimNode node, int incarnation) {
    return new MapStore() {
      @Override
      public ShardMap updateMap(Function<ShardMap, Optional<ShardMapDelta>> plan) {
        yieldPoint();
        node.checkAlive(incarnation);
        if (chance(0.08)) {
          note(node.id + ": map change lost on the way (not stored)");
          throw new CoordinationException("connection loss");
        }
        Optional<ShardMapDelta> delta = plan.apply(stored);
        if (delta.isEmpty()) {
          return stored;
        }
        stored = stored.apply(delta.get());
        recordStored(stored);
        note(node.id + ": map stored at epoch " + stored.epoch() + " " + delta.get().changes());
        if (chance(0.12)) {
          stats.cutoversLostReply++;
          if (chance(0.5)) {
            note(node.id + ": the reply was lost; a retry runs the change again on the new map");
            plan.apply(stored); // Curator's retry: BadVersion, then the plan re-runs and refuses
          }
          note(node.id + ": the map change's reply was lost");
          yieldPoint();
          throw new CoordinationException("connection loss after the change was applied");
        }
        ShardMap answer = stored;
        yieldPoint();
        node.checkAlive(incarnation);
        return answer;
      }

      @Override
      public ShardMap syncedMap() {
        yieldPoint();
        node.checkAlive(incarnation);
        if (chance(0.2)) {
          note(node.id + ": the map could not be read (unreachable)");
          throw new CoordinationException("ZooKeeper unreachable");
        }
        return stored;
      }
    };
  }

  // ------------------------------------------------------------------ moves

  private void startMove() {
    if (movesRunning >= MAX_NESTED_MOVES) {
      return;
    }
    // The plan is made on the stored map or on a node's stale one; the move runs on the planned owner.
    SimNode planner = nodes.get(rnd.nextInt(nodes.size()));
    ShardMap planned = chance(0.7) || !planner.up ? stored : planner.map.current();
    ShardAssignment s = planned.table(table).orElseThrow().shards().get(rnd.nextInt(SHARDS));
    SimNode source = node(s.owner());
    SimNode to = nodes.get(rnd.nextInt(nodes.size()));
    if (!source.up || to == source) {
      return;
    }
    ShardRef ref = ShardRef.of(planned.table(table).orElseThrow(), s.id().number());
    if (!source.outgoing.add(ref)) {
      return; // MoveServiceImpl refuses a second move of a shard already moving from this node
    }
    String moveId = "m" + (++moveCounter);
    MoveShardRequest request = MoveShardRequest.newBuilder().setMoveId(moveId).setTable(table).setTableId(tableId)
        .setNumber(s.id().number()).setTo(to.id.value()).setShardEpoch(s.epoch()).build();
    int incarnation = source.incarnation;
    note("move " + moveId + ": " + s.id() + "@" + s.epoch() + " " + source.id + " -> " + to.id);
    stats.movesStarted++;
    movesRunning++;
    try {
      new ShardMover(source.moveNode, targetsFor(source, incarnation), source.cutovers, request, ref, metrics).run(progress -> {});
      stats.movesCutOver++;
      note("move " + moveId + " cut over");
    } catch (Crash c) {
      stats.movesCrashed++;
      note("move " + moveId + " stopped: " + c.getMessage());
    } catch (RuntimeException e) {
      stats.movesAbandoned++;
      note("move " + moveId + " abandoned: " + e.getMessage());
    } finally {
      movesRunning--;
      if (source.up && source.incarnation == incarnation) {
        source.outgoing.remove(ref);
      }
    }
  }

  /** Direct calls to the destination's {@link MoveDestination}, each a yield point that may lose its request or its reply. */
  private MoveTarget.Factory targetsFor(SimNode source, int incarnation) {
    return (request, shard) -> {
      SimNode dest = node(NodeId.of(request.getTo()));
      if (!dest.up) {
        throw Status.FAILED_PRECONDITION.withDescription("destination " + dest.id + " is not live").asRuntimeException();
      }
      String moveId = request.getMoveId();
      return new MoveTarget() {
        @Override
        public void sendSnapshot(Path file, java.util.function.LongConsumer sent) {
          call("snapshot", () -> {
            Path received = null;
            try {
              if (file != null) {
                sent.accept(Files.size(file));
                received = dest.workDir.resolve("in-" + tableId + "-" + moveId + ".sst");
                Files.copy(file, received);
              }
              dest.destination.begin(moveId, shard);
              try {
                dest.destination.ingest(moveId, shard, received, file == null ? 0 : Files.size(file));
              } catch (RuntimeException e) {
                dest.destination.abort(moveId, shard);
                throw Status.INTERNAL.withDescription("ingesting failed: " + e.getMessage()).asRuntimeException();
              }
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            } finally {
              MoveServiceImpl.deleteQuietly(received);
            }
          });
        }

        @Override
        public void applyChanges(List<ShardEngine.StoredValue> values) {
          call("catch-up of " + values.size() + " keys", () -> dest.destination.applyChanges(moveId, shard, values));
        }

        @Override
        public void dropCopy(long plannedEpoch) {
          call("drop copy", () -> dest.destination.dropCopy(moveId, shard));
        }

        private void call(String what, Runnable action) {
          yieldPoint();
          source.checkAlive(incarnation);
          if (!dest.up) {
            throw Status.UNAVAILABLE.withDescription(dest.id + " is down").asRuntimeException();
          }
          if (chance(0.04)) {
            note(moveId + " " + what + " -> " + dest.id + ": request lost");
            throw Status.UNAVAILABLE.withDescription("request lost").asRuntimeException();
          }
          action.run();
          note(moveId + " " + what + " -> " + dest.id + ": done");
          if (chance(0.04)) {
            note(moveId + " " + what + " -> " + dest.id + ": reply lost");
            throw Status.UNAVAILABLE.withDescription("reply lost").asRuntimeException();
          }
          yieldPoint();
          source.checkAlive(incarnation);
        }
      };
    };
  }

  // ------------------------------------------------------------------ clients

  /** One write as a client sends it, with its write id; {@code applied} once a store has applied it. */
  private static final class Write {
    final String key;
    final byte[] value; // null: delete
    final long expected;
    final byte[] id;
    Long applied; // the first result, once applied

    Write(String key, byte[] value, long expected, byte[] id) {
      this.key = key;
      this.value = value;
      this.expected = expected;
      this.id = id;
    }

    @Override
    public String toString() {
      return (value == null ? "delete " : expected == Mutation.ANY ? "put " : "put-if-version " + expected + " ") + key
          + (value == null ? "" : "=" + new String(value, StandardCharsets.UTF_8)) + " (write id " + new String(id, StandardCharsets.UTF_8) + ")";
    }
  }

  private final class SimClient {
    final int id;
    ShardMap map;
    Write pending; // a write whose outcome the client does not know
    long seq;

    SimClient(int id, ShardMap map) {
      this.id = id;
      this.map = map;
    }
  }

  /** A key's value as every store write so far has left it. */
  private static final class Model {
    long stored; // the version last written, tombstones included
    byte[] value; // null: deleted

    long live() {
      return value == null ? 0 : stored;
    }
  }

  private void clientOp(SimClient c) {
    if (c.pending != null && chance(0.5)) {
      retry(c);
      return;
    }
    String key = KEY_NAMES[rnd.nextInt(KEYS)];
    int kind = rnd.nextInt(100);
    if (kind < 35) {
      SimNode n = route(c, key);
      if (n == null) {
        return;
      }
      try {
        read(n, key);
      } catch (ShardFencedException e) {
        fenced(c, n, "get " + key, e);
      }
      return;
    }
    Model m = model.get(key);
    long live = m == null ? 0 : m.live();
    byte[] value = ("v" + (++writeCounter)).getBytes(StandardCharsets.UTF_8);
    byte[] id = ("c" + c.id + "-" + (++c.seq)).getBytes(StandardCharsets.UTF_8);
    Write w = kind < 70 ? new Write(key, value, Mutation.ANY, id)
        : kind < 85 ? new Write(key, value, chance(0.7) ? live : live + 1, id)
            : new Write(key, null, Mutation.ANY, id);
    send(c, w);
  }

  private void retry(SimClient c) {
    Write w = c.pending;
    stats.retries++;
    note("client " + c.id + " retries " + w);
    send(c, w);
  }

  /** Routes by the client's map; null if the node it names is down (the client refreshes its map). */
  private SimNode route(SimClient c, String key) {
    ShardAssignment a = c.map.table(table).orElseThrow().shardFor(Key.of(key).partitionKey());
    SimNode n = node(a.owner());
    if (!n.up) {
      refresh(c);
      return null;
    }
    return n;
  }

  /** A key's shard in the stored map: computed once per key, as MOD placement never changes a key's shard number. */
  private ShardRef refOf(String key) {
    return refs.computeIfAbsent(key, k -> {
      var t = stored.table(table).orElseThrow();
      return ShardRef.of(t, t.shardFor(Key.of(k).partitionKey()).id().number());
    });
  }

  private void refresh(SimClient c) {
    SimNode from = nodes.get(rnd.nextInt(nodes.size()));
    c.map = from.up && chance(0.5) ? from.map.current() : stored; // a node's map may be stale
  }

  private void fenced(SimClient c, SimNode n, String what, ShardFencedException e) {
    stats.writesFenced++;
    note("client " + c.id + ": " + what + " refused by " + n.id + " (" + e.getMessage() + ")");
    refresh(c);
  }

  private void read(SimNode n, String key) {
    ShardRef ref = refOf(key);
    Versioned got = n.shards.get(ref, Key.of(key).encode());
    servedByOwner(n, ref, "get " + key);
    stats.reads++;
    Model m = model.get(key);
    boolean expectLive = m != null && m.value != null;
    if (expectLive != (got != null) || (got != null && (got.version() != m.stored || !Arrays.equals(got.value(), m.value)))) {
      throw new Violation(n.id + " answered get " + key + " with " + describe(got) + " but the last write left " + describe(m));
    }
  }

  private void send(SimClient c, Write w) {
    SimNode n = route(c, w.key);
    if (n == null) {
      return;
    }
    ShardRef ref = refOf(w.key);
    if (chance(0.05)) {
      stats.requestsLost++;
      note("client " + c.id + ": " + w + " to " + n.id + ": request lost");
      c.pending = w;
      return;
    }
    long result;
    Model before = copy(model.get(w.key));
    try {
      result = n.shards.apply(List.of(new Mutation(ref, Key.of(w.key).encode(), w.value, w.expected).withRequestId(w.id)))[0];
    } catch (ShardFencedException e) {
      fenced(c, n, w.toString(), e);
      c.pending = w;
      return;
    } catch (VersionMismatchException e) {
      servedByOwner(n, ref, w.toString());
      if (w.applied != null) {
        throw new Violation(n.id + " answered a repeat of " + w + " with a version mismatch; its first attempt was applied at " + w.applied);
      }
      long live = before == null ? 0 : before.live();
      if (w.expected == live || e.actual() != live) {
        throw new Violation(n.id + " refused " + w + " with " + e.getMessage() + " but the last write left " + describe(before));
      }
      note("client " + c.id + ": " + w + " on " + n.id + ": version mismatch");
      c.pending = null;
      return;
    }
    servedByOwner(n, ref, w.toString());
    if (w.applied != null) {
      if (result != w.applied) {
        throw new Violation(n.id + " answered a repeat of " + w + " with " + result + "; the first attempt answered " + w.applied);
      }
      note("client " + c.id + ": " + w + " on " + n.id + ": repeat answered " + result);
    } else {
      applyToModel(n, w, before, result);
      w.applied = result;
      note("client " + c.id + ": " + w + " on " + n.id + ": " + result);
    }
    if (chance(0.1)) {
      stats.repliesLost++;
      note("client " + c.id + ": the reply to " + w + " was lost");
      c.pending = w;
    } else {
      stats.writesAcknowledged++;
      c.pending = null;
    }
  }

  private void applyToModel(SimNode n, Write w, Model before, long result) {
    long live = before == null ? 0 : before.live();
    long storedVersion = before == null ? 0 : before.stored;
    if (w.expected != Mutation.ANY && w.expected != live) {
      throw new Violation(n.id + " applied " + w + " but the last write left " + describe(before));
    }
    if (w.value == null && live == 0) {
      if (result != 0) {
        throw new Violation(n.id + " deleted the absent key of " + w + " at version " + result);
      }
      return;
    }
    if (result != storedVersion + 1) {
      throw new Violation(n.id + " applied " + w + " at version " + result + " but the last write left " + describe(before));
    }
    Model m = model.computeIfAbsent(w.key, k -> new Model());
    m.stored = result;
    m.value = w.value;
  }

  private void servedByOwner(SimNode n, ShardRef ref, String what) {
    ShardAssignment owner = ownerInStoredMap(ref);
    if (!owner.owner().equals(n.id)) {
      throw new Violation(n.id + " served " + what + " but the stored map (epoch " + stored.epoch() + ") gives shard " + owner.id()
          + " to " + owner.owner());
    }
  }

  /** Every key on its owner's store (whether the owner is up or not: the store outlives the process) equals the model. */
  private void checkStores() {
    for (int k = 0; k < KEYS; k++) {
      String key = KEY_NAMES[k];
      ShardRef ref = refOf(key);
      SimNode owner = node(ownerInStoredMap(ref).owner());
      Versioned got = owner.store.get(ref, ENCODED_KEYS[k]);
      Model m = model.get(key);
      boolean expectLive = m != null && m.value != null;
      if (expectLive != (got != null) || (got != null && (got.version() != m.stored || !Arrays.equals(got.value(), m.value)))) {
        throw new Violation("the owner " + owner.id + " of " + key + " holds " + describe(got) + " but the last write left "
            + describe(m) + ": a write was lost");
      }
    }
  }

  private static Model copy(Model m) {
    if (m == null) {
      return null;
    }
    Model c = new Model();
    c.stored = m.stored;
    c.value = m.value;
    return c;
  }

  private static String describe(Versioned v) {
    return v == null ? "nothing" : new String(v.value(), StandardCharsets.UTF_8) + "@" + v.version();
  }

  private static String describe(Model m) {
    return m == null ? "nothing" : m.value == null ? "a tombstone@" + m.stored : new String(m.value, StandardCharsets.UTF_8) + "@" + m.stored;
  }

  // ------------------------------------------------------------------ nodes

  private SimNode node(NodeId id) {
    for (SimNode n : nodes) {
      if (n.id.equals(id)) {
        return n;
      }
    }
    throw new IllegalArgumentException("no node " + id);
  }

  /** One node: its store lives across crashes; everything else is its process's and dies with it. */
  private final class SimNode {
    final NodeId id;
    final ShardEngine store;
    final Path workDir;
    boolean up;
    int incarnation;
    LocalShards shards;
    AppliedMap map;
    MoveDestination destination;
    MoveNode moveNode;
    Cutovers cutovers;
    Set<ShardRef> outgoing;

    SimNode(NodeId id, ShardEngine store, Path workDir) {
      this.id = id;
      this.store = store;
      this.workDir = workDir;
    }

    void start() {
      int inc = ++incarnation;
      up = true;
      shards = new LocalShards(store);
      map = new AppliedMap();
      outgoing = new HashSet<>();
      moveNode = new MoveNode(id, map, shards, store, mapStoreFor(this, inc), next -> applyMap(inc, next), () -> true, RequestHooks.NONE,
          millis -> {
            clock += millis;
            yieldPoint();
            checkAlive(inc);
          }, workDir);
      destination = new MoveDestination(moveNode);
      cutovers = new Cutovers(moveNode.maps(), metrics);
      applyMap(inc, stored); // a starting node reads the map before it serves
    }

    void crash() {
      up = false;
      shards = null;
      map = null;
      destination = null;
      moveNode = null;
      cutovers = null;
      outgoing = null;
    }

    /** Throws {@link Crash} if the process {@code inc} of this node is gone. */
    void checkAlive(int inc) {
      if (!up || incarnation != inc) {
        throw new Crash(id + " (incarnation " + inc + ") crashed");
      }
    }

    /** What {@code ShardwiseNode.onMap} does: local shards first, then the map requests are routed by. */
    void applyMap(int inc, ShardMap next) {
      checkAlive(inc);
      ShardMap previous = map.current();
      if (next.epoch() <= previous.epoch()) {
        return;
      }
      LocalShards.MapChanges changes = shards.apply(previous, next, id);
      changes.owned().forEach(destination::arrived);
      map.advance(next);
    }
  }
}
