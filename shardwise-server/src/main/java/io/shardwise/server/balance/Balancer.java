package io.shardwise.server.balance;

import io.grpc.Context;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ScheduledAction;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.Retries;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The balancer: every node runs one, and one of them, elected through a Curator leader latch,
 * acts. Each tick the leader
 *
 * <ul>
 *   <li>runs {@link Failover} (new leaders for shards whose leader's node left) and {@link
 *       ReplicaRepair} (followers rebuilt for nodes absent past the grace period, leadership off
 *       draining nodes), whatever the tables' modes, unless paused;
 *   <li>drives the approved or running plan: starts waiting moves (at most {@code
 *       max_moves_per_node} per node, none while paused), records their progress in the plan,
 *       retries a failed move twice, cancels on request, and finishes the plan;
 *   <li>otherwise runs the earliest scheduled action whose time has come ({@link Schedule}: a
 *       presplit, or a plan made and approved then);
 *   <li>otherwise, every few ticks, looks for range and hashrange shards to split by size or load
 *       and neighbours to merge ({@link Resizer}): a plan of those resizes is run at once for
 *       tables in {@code auto} mode and proposed for tables in {@code suggest} mode;
 *   <li>otherwise, when the cluster changed (map epoch, live nodes, drains, absences), computes a
 *       new plan: in {@code suggest} mode it waits for approval; in {@code auto} mode it is
 *       approved at once unless it moves more than {@code auto_max_fraction} of the bytes or moves
 *       shards off an absent node; in {@code manual} mode nothing is proposed.
 * </ul>
 *
 * <p>The cascading-failure guard: a node's shards move only if an operator drains it or it has
 * been absent from ZooKeeper for the grace period. Nothing here looks at latency or load, so a
 * slow node keeps its data. A pending plan made at another map epoch is stale: it is replaced.
 *
 * <p>A move runs on its source ({@code MoveService.MoveShard}); the leader only asks and listens.
 * If the leader dies, the call is cancelled, the source abandons the move (unless it already cut
 * over), and the next leader finds the move marked as moving, reads the map to see whether it cut
 * over, and runs it again if not.
 */
public final class Balancer implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Balancer.class);
  /**
   * Attempts per move before it fails, unless {@code BalancerSettings.max_move_attempts} says otherwise. With {@link #retryDelayMillis} between them (0.5 s doubling
   * to 30 s, jittered) a move keeps trying for about two minutes: long enough for a restarted node
   * to come back and for reconnect backoffs to clear.
   */
  private static final long PROGRESS_EVERY_MILLIS = 1_000;
  /** Finished plans beyond the newest this many are deleted. */
  private static final int KEEP_PLANS = 100;

  private final NodeId self;
  private final Coordinator coordinator;
  private final Peers peers;
  private final RebalanceRecords records;
  private final Schedule schedule;
  private final LeaderLatch latch;
  private final ScheduledExecutorService ticker;
  private final ExecutorService movers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "shardwise-move");
    t.setDaemon(true);
    return t;
  });
  private final Map<String, Context.CancellableContext> inFlight = new ConcurrentHashMap<>();
  private final Map<NodeId, Long> absentSince = new HashMap<>();
  private final AtomicLong ticks = new AtomicLong();
  private volatile String lastFingerprint;
  private final Resizer resizer;
  private final Failover failover;
  private final ReplicaRepair repair;
  private final io.shardwise.server.index.IndexReadiness indexes;
  private final ReplicaMoves replicaMoves;
  private final long snapshotBytesPerSecond; // of the nodes' replication (each node's own; the same across a cluster started alike)

  private Balancer(NodeId self, Coordinator coordinator, Peers peers, Duration tick, MeterRegistry metrics, long snapshotBytesPerSecond,
      io.shardwise.server.index.IndexReadiness.Backfill globalBackfill) {
    this.self = self;
    this.snapshotBytesPerSecond = snapshotBytesPerSecond;
    this.coordinator = coordinator;
    this.peers = peers;
    this.records = new RebalanceRecords(coordinator);
    this.schedule = new Schedule(coordinator);
    this.failover = new Failover(coordinator);
    this.repair = new ReplicaRepair(coordinator);
    this.indexes = new io.shardwise.server.index.IndexReadiness(coordinator, peers, globalBackfill);
    io.shardwise.server.rpc.ShardSplits splits = new io.shardwise.server.rpc.ShardSplits(coordinator, peers);
    this.replicaMoves = new ReplicaMoves(coordinator, splits::handOver);
    this.resizer = new Resizer(coordinator, peers, tick.multipliedBy(5), metrics, new Resizer.ShardMoves() {
      @Override
      public MoveProgress move(String moveId, io.shardwise.core.map.Table table, ShardAssignment shard, NodeId to) {
        return moveNow(moveId, table, shard, to);
      }

      @Override
      public MoveProgress moveReplica(io.shardwise.core.map.Table table, ShardAssignment shard, NodeId from, NodeId to, boolean leadOnly) {
        return moveReplicaNow(table, shard, from, to, leadOnly);
      }
    });
    this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "shardwise-balancer-" + self);
      t.setDaemon(true);
      return t;
    });
    this.latch = coordinator.leaderLatch(RebalanceRecords.LEADER, self.value());
    // Curator's own account of a lost latch node is an ERROR line for an ordinary session loss (its
    // logger is off in the CLI's logging): leadership changes are reported here instead.
    latch.addListener(new org.apache.curator.framework.recipes.leader.LeaderLatchListener() {
      @Override
      public void isLeader() {
        LOG.info("balancer: {} is now the leader", self);
        // Look at once: the old leader's node may be the one that died, and its shards wait for
        // this failover (the next tick is up to a balancer tick away).
        tickSoon();
      }

      @Override
      public void notLeader() {
        LOG.info("balancer: {} is no longer the leader", self);
      }
    });
  }

  /**
   * @param snapshotBytesPerSecond the bandwidth at which a leader sends a new follower its snapshot
   *     ({@link io.shardwise.server.replication.ReplicationConfig#snapshotBytesPerSecond}; 0: unlimited):
   *     how long a replica move waits for its follower to catch up follows from it
   */
  public static Balancer start(NodeId self, Coordinator coordinator, Peers peers, Duration tick, MeterRegistry metrics,
      long snapshotBytesPerSecond, io.shardwise.server.index.IndexReadiness.Backfill globalBackfill) {
    Balancer b = new Balancer(self, coordinator, peers, tick, metrics, snapshotBytesPerSecond, globalBackfill);
    Gauge.builder("shardwise.balancer.moves.in.flight", b.inFlight, Map::size)
        .description("moves the balancer is driving (non-zero only on the leader)").register(metrics);
    b.ticker.scheduleWithFixedDelay(b::safeTick, tick.toMillis(), tick.toMillis(), TimeUnit.MILLISECONDS);
    return b;
  }

  public boolean isLeader() {
    return latch.hasLeadership();
  }

  /** Ticks completed as leader (for tests that wait for the balancer to have looked). */
  public long ticks() {
    return ticks.get();
  }

  /** The live nodes changed: the leader looks at once (a failover must not wait for the next tick). */
  public void nodesChanged() {
    tickSoon();
  }

  private void tickSoon() {
    try {
      ticker.execute(this::safeTick);
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      // the balancer is closing
    }
  }

  private void safeTick() {
    try {
      if (!latch.hasLeadership()) {
        stepDown();
        return;
      }
      tick();
      ticks.incrementAndGet();
    } catch (RuntimeException e) {
      LOG.warn("balancer on {}: {}", self, e.toString());
    }
  }

  /** Not the leader (any more): stop driving moves; the new leader picks them up. */
  private void stepDown() {
    if (!inFlight.isEmpty()) {
      inFlight.values().forEach(c -> c.cancel(null));
      inFlight.clear();
    }
    lastFingerprint = null;
    absentSince.clear();
  }

  private void tick() {
    try {
      failover.run(); // before anything else: a shard without a live leader serves nothing
    } catch (RuntimeException e) {
      LOG.warn("balancer: failover on {}: {}", self, e.toString());
    }
    BalancerSettings settings = records.settings();
    ShardMap map = coordinator.readMap().map();
    try {
      if (indexes.run(map) > 0) {
        map = coordinator.readMap().map();
      }
    } catch (RuntimeException e) {
      LOG.warn("balancer: index readiness on {}: {}", self, e.toString());
    }
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    long now = System.currentTimeMillis();
    Set<NodeId> owners = new TreeSet<>();
    map.tables().values().forEach(t -> t.shards().forEach(s -> owners.addAll(s.replicas())));
    absentSince.keySet().removeIf(n -> live.containsKey(n) || !owners.contains(n));
    Set<NodeId> absentInGrace = new TreeSet<>();
    Set<NodeId> absentPastGrace = new TreeSet<>();
    for (NodeId owner : owners) {
      if (!live.containsKey(owner)) {
        long since = absentSince.computeIfAbsent(owner, n -> now);
        (now - since >= settings.getAbsentGraceSeconds() * 1_000 ? absentPastGrace : absentInGrace).add(owner);
      }
    }
    List<PlanRecord> plans = records.plans();
    if (plans.size() > KEEP_PLANS) {
      records.prune(plans, KEEP_PLANS);
    }
    Optional<PlanRecord> active = plans.stream()
        .filter(p -> p.getState() == PlanRecord.State.APPROVED || p.getState() == PlanRecord.State.RUNNING).findFirst();
    if (!settings.getPaused()) {
      try {
        // Failover rebalancing, in every mode: replicas lost with absent nodes are rebuilt elsewhere.
        repair.run(absentPastGrace, records.drains(), settings.getMaxMovesPerNode(), replicaMovesUnderWay(active));
      } catch (RuntimeException e) {
        LOG.warn("balancer: replica repair on {}: {}", self, e.toString());
      }
    }
    if (active.isPresent()) {
      drive(active.get(), settings, map, live);
      return;
    }
    if (runScheduled(now)) {
      return; // it may have changed the map or made a plan: look again at the next tick
    }
    List<PlanRecord> pending = plans.stream().filter(p -> p.getState() == PlanRecord.State.PENDING).toList();
    for (PlanRecord p : pending) {
      if (p.getBaseEpoch() != map.epoch()) {
        markStale(p.getId(), "made at map epoch " + p.getBaseEpoch() + "; the map is at " + map.epoch());
      }
    }
    if (resize(settings, map, live, now, pending)) {
      return; // a plan of splits and merges to run: the moves are planned against the map it leaves
    }
    Set<String> balanced = new TreeSet<>();
    for (String table : map.tables().keySet()) {
      if (RebalanceRecords.modeOf(settings, table) != BalancerSettings.Mode.MANUAL) {
        balanced.add(table);
      }
    }
    if (balanced.isEmpty()) {
      return; // every table is manual: plans are made only on request
    }
    Set<NodeId> drains = records.drains();
    if (RingJoins.join(coordinator, new io.shardwise.server.rpc.ShardSplits(coordinator, peers), map, live.keySet(), drains,
        balanced::contains).epoch() != map.epoch()) {
      return; // new nodes are on the rings now: the next tick plans their arcs, with the new ranges' sizes
    }
    String fingerprint = map.epoch() + " " + live.keySet() + " " + drains + " " + absentInGrace + " " + absentPastGrace + " " + balanced;
    if (fingerprint.equals(lastFingerprint)) {
      return;
    }
    lastFingerprint = fingerprint;
    PlanRecord desired = PlanMaker.make(map, live, drains, absentInGrace, PlanMaker.sizes(peers, live), reason(live, drains, absentPastGrace),
        balanced::contains);
    for (PlanRecord p : pending) {
      if (p.getBaseEpoch() == map.epoch() && p.getResizesCount() == 0) {
        if (sameMoves(p, desired)) {
          return; // still the right plan: keep waiting for its approval
        }
        markStale(p.getId(), "the cluster changed; replaced by a new plan");
      }
    }
    if (desired.getMovesCount() == 0) {
      return;
    }
    boolean sourceAbsent = desired.getMovesList().stream().anyMatch(MoveRecord::getSourceAbsent);
    boolean auto = desired.getMovesList().stream()
        .allMatch(m -> RebalanceRecords.modeOf(settings, m.getTable()) == BalancerSettings.Mode.AUTO);
    boolean withinLimits = desired.getMovedFraction() <= settings.getAutoMaxFraction() && !sourceAbsent;
    PlanRecord.State state = auto && withinLimits ? PlanRecord.State.APPROVED : PlanRecord.State.PENDING;
    PlanRecord created = records.create(desired.toBuilder().setState(state).setNeedsApproval(auto && !withinLimits).build());
    LOG.info("balancer: plan {} ({} moves, {} bytes, {}): {}", created.getId(), created.getMovesCount(), created.getMovedBytes(),
        Rebalancing.describe(state), created.getReason());
  }

  /** The shards of the active plan's replica moves that have not ended: replica repair leaves them alone. */
  private static Set<ShardId> replicaMovesUnderWay(Optional<PlanRecord> active) {
    Set<ShardId> out = new TreeSet<>();
    active.ifPresent(p -> p.getMovesList().stream()
        .filter(m -> m.getReplica() && !m.getLeadership()
            && (m.getState() == MoveRecord.State.WAITING || m.getState() == MoveRecord.State.MOVING))
        .forEach(m -> out.add(new ShardId(m.getTable(), m.getNumber()))));
    return out;
  }

  /**
   * Runs the earliest scheduled action whose time has come ({@link Schedule}), one per tick: a
   * presplit of a table, or a plan made now and approved at once (it runs from the next tick).
   */
  private boolean runScheduled(long now) {
    Optional<ScheduledAction> due = schedule.due(now);
    if (due.isEmpty()) {
      return false;
    }
    ScheduledAction action = due.get();
    if (action.getState() == ScheduledAction.State.WAITING && !schedule.claim(action.getId())) {
      return false; // cancelled just now
    }
    String late = now - action.getAtMillis() > 60_000 ? " (" + (now - action.getAtMillis()) / 1000 + " s late: no leader was up at the time)"
        : "";
    try {
      String result;
      if (action.getKind() == ScheduledAction.Kind.PRESPLIT) {
        ShardMap after = new io.shardwise.server.rpc.ShardSplits(coordinator, peers).presplit(action.getTable(), action.getShards());
        result = "table " + action.getTable() + " has " + after.table(action.getTable()).map(t -> t.shards().size()).orElse(0)
            + " shards (map epoch " + after.epoch() + ")" + late;
      } else {
        PlanRecord plan = new Rebalancing(coordinator).propose(peers, Set.of(), true);
        if (plan.getMovesCount() == 0) {
          result = "the cluster was balanced: no plan" + late;
        } else {
          new Rebalancing(coordinator).approve(plan.getId());
          result = "plan " + plan.getId() + " made and approved: " + plan.getMovesCount() + " moves" + late;
        }
      }
      schedule.finish(action.getId(), ScheduledAction.State.DONE, result);
      LOG.info("balancer: scheduled action {} ({}): {}", action.getId(), action.getNote(), result);
    } catch (RuntimeException e) {
      String why = e instanceof io.grpc.StatusRuntimeException s ? s.getStatus().getDescription() : e.getMessage();
      schedule.finish(action.getId(), ScheduledAction.State.FAILED, String.valueOf(why) + late);
      LOG.info("balancer: scheduled action {} ({}) failed: {}", action.getId(), action.getNote(), why);
    }
    return true;
  }

  /**
   * Dynamic partitioning: the splits and merges the {@link Resizer}'s policies call for. Those of
   * {@code auto} tables become an approved plan (true: it runs from the next tick); those of {@code
   * suggest} tables a pending one, unless one with the same resizes already waits.
   */
  private boolean resize(BalancerSettings settings, ShardMap map, Map<NodeId, NodeInfo> live, long now, List<PlanRecord> pending) {
    List<ResizeRecord> wanted = resizer.look(settings, map, live, now);
    if (wanted.isEmpty()) {
      return false;
    }
    // Auto tables' resizes first (run now); the suggest tables' are proposed at a later look.
    List<ResizeRecord> auto = wanted.stream()
        .filter(r -> RebalanceRecords.modeOf(settings, r.getTable()) == BalancerSettings.Mode.AUTO).toList();
    List<ResizeRecord> resizes = auto.isEmpty() ? wanted : auto;
    if (auto.isEmpty()) {
      for (PlanRecord p : pending) {
        if (p.getBaseEpoch() == map.epoch() && p.getResizesCount() > 0 && p.getReason().startsWith(BALANCER_REASON)) {
          if (sameResizes(p.getResizesList(), resizes)) {
            return false; // still the right plan: keep waiting for its approval
          }
          markStale(p.getId(), "the shards' sizes or loads changed; replaced by a new plan");
        }
      }
    }
    PlanRecord.State state = auto.isEmpty() ? PlanRecord.State.PENDING : PlanRecord.State.APPROVED;
    PlanRecord created = records.create(PlanRecord.newBuilder().setBaseEpoch(map.epoch()).setState(state)
        .setReason(BALANCER_REASON + describe(resizes) + " by the tables' size and load policies")
        .setCreatedMillis(now).addAllResizes(resizes).build());
    LOG.info("balancer: plan {} ({} resizes, {}): {}", created.getId(), resizes.size(), Rebalancing.describe(state), created.getReason());
    return state == PlanRecord.State.APPROVED;
  }

  /** How the reason of every plan of resizes the balancer makes begins (an operator's plans are not replaced by the balancer's). */
  static final String BALANCER_REASON = "balancer: ";

  /** "2 splits and 1 merge", "1 key isolation": what a plan of resizes holds. */
  public static String describe(List<ResizeRecord> resizes) {
    long splits = resizes.stream().filter(r -> r.getKind() == ResizeRecord.Kind.SPLIT).count();
    long merges = resizes.stream().filter(r -> r.getKind() == ResizeRecord.Kind.MERGE).count();
    long isolations = resizes.stream().filter(r -> r.getKind() == ResizeRecord.Kind.ISOLATE).count();
    long salts = resizes.stream().filter(r -> r.getKind() == ResizeRecord.Kind.SALT).count();
    long unsalts = resizes.stream().filter(r -> r.getKind() == ResizeRecord.Kind.UNSALT).count();
    boolean keys = isolations + salts + unsalts > 0;
    List<String> parts = new ArrayList<>();
    if (splits > 0 || !keys) {
      parts.add(splits + " split" + (splits == 1 ? "" : "s"));
    }
    if (merges > 0 || !keys) {
      parts.add(merges + " merge" + (merges == 1 ? "" : "s"));
    }
    if (isolations > 0) {
      parts.add(isolations + " key isolation" + (isolations == 1 ? "" : "s"));
    }
    if (salts > 0) {
      parts.add(salts + " counter" + (salts == 1 ? "" : "s") + " to salt");
    }
    if (unsalts > 0) {
      parts.add(unsalts + " salted counter" + (unsalts == 1 ? "" : "s") + " to demote");
    }
    return String.join(" and ", parts);
  }

  private static boolean sameResizes(List<ResizeRecord> a, List<ResizeRecord> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      ResizeRecord x = a.get(i);
      ResizeRecord y = b.get(i);
      if (x.getKind() != y.getKind() || x.getTableId() != y.getTableId() || x.getNumber() != y.getNumber()
          || x.getRightNumber() != y.getRightNumber() || !x.getHotKey().equals(y.getHotKey())
          || !x.getIsolateTo().equals(y.getIsolateTo()) || !x.getUpperTo().equals(y.getUpperTo())) {
        return false;
      }
    }
    return true;
  }

  private static String reason(Map<NodeId, NodeInfo> live, Set<NodeId> drains, Set<NodeId> absentPastGrace) {
    StringBuilder b = new StringBuilder("balancer: live nodes ").append(live.keySet());
    if (!drains.isEmpty()) {
      b.append(", draining ").append(drains);
    }
    if (!absentPastGrace.isEmpty()) {
      b.append(", absent past the grace period ").append(absentPastGrace);
    }
    return b.toString();
  }

  private static boolean sameMoves(PlanRecord a, PlanRecord b) {
    if (a.getMovesCount() != b.getMovesCount()) {
      return false;
    }
    for (int i = 0; i < a.getMovesCount(); i++) {
      MoveRecord x = a.getMoves(i);
      MoveRecord y = b.getMoves(i);
      if (!x.getTable().equals(y.getTable()) || x.getNumber() != y.getNumber() || !x.getFrom().equals(y.getFrom())
          || !x.getTo().equals(y.getTo())) {
        return false;
      }
    }
    return true;
  }

  private void markStale(String id, String why) {
    records.update(id, p -> p.getState() == PlanRecord.State.PENDING
        ? p.toBuilder().setState(PlanRecord.State.STALE).setError(why).setFinishedMillis(System.currentTimeMillis()).build()
        : p);
  }

  // ------------------------------------------------------------------ running a plan

  private void drive(PlanRecord plan, BalancerSettings settings, ShardMap map, Map<NodeId, NodeInfo> live) {
    String id = plan.getId();
    if (plan.getState() == PlanRecord.State.APPROVED) {
      plan = records.update(id, p -> p.getState() == PlanRecord.State.APPROVED
          ? p.toBuilder().setState(PlanRecord.State.RUNNING).setStartedMillis(System.currentTimeMillis()).build()
          : p);
      LOG.info("balancer: running plan {} ({} moves)", id, plan.getMovesCount());
    }
    if (plan.getResizesCount() > 0) {
      driveResizes(plan, settings, map);
      return;
    }
    if (plan.getCancelRequested()) {
      inFlight.forEach((key, c) -> {
        if (key.startsWith(id + "/")) {
          c.cancel(null);
        }
      });
      plan = records.update(id, p -> {
        PlanRecord.Builder b = p.toBuilder();
        b.getMovesBuilderList().stream().filter(m -> m.getState() == MoveRecord.State.WAITING)
            .forEach(m -> m.setState(MoveRecord.State.CANCELLED));
        return b.build();
      });
    }
    // Moves marked as moving that no thread of ours drives: a previous leader started them.
    for (int i = 0; i < plan.getMovesCount(); i++) {
      MoveRecord m = plan.getMoves(i);
      if (m.getState() == MoveRecord.State.MOVING && !inFlight.containsKey(key(id, i))) {
        boolean cutOver = landed(map, m);
        int index = i;
        plan = records.update(id, p -> withMove(p, index, p.getMoves(index).toBuilder()
            .setState(cutOver ? MoveRecord.State.DONE : MoveRecord.State.WAITING)));
      }
    }
    if (!plan.getCancelRequested() && !settings.getPaused()) {
      Map<String, Integer> busy = new TreeMap<>();
      for (int i = 0; i < plan.getMovesCount(); i++) {
        if (plan.getMoves(i).getState() == MoveRecord.State.MOVING && !plan.getMoves(i).getLeadership()) {
          busy.merge(plan.getMoves(i).getFrom(), 1, Integer::sum);
          busy.merge(plan.getMoves(i).getTo(), 1, Integer::sum);
        }
      }
      for (int i = 0; i < plan.getMovesCount(); i++) {
        MoveRecord m = plan.getMoves(i);
        if (m.getLeadership()) {
          startLeadership(plan, i, map, settings, live); // cheap: not counted against the nodes' moves
          continue;
        }
        if (m.getState() != MoveRecord.State.WAITING || m.getRetryAfterMillis() > System.currentTimeMillis()
            || busy.getOrDefault(m.getFrom(), 0) >= settings.getMaxMovesPerNode()
            || busy.getOrDefault(m.getTo(), 0) >= settings.getMaxMovesPerNode()) {
          continue;
        }
        busy.merge(m.getFrom(), 1, Integer::sum);
        busy.merge(m.getTo(), 1, Integer::sum);
        start(id, i, settings, live);
      }
      plan = records.plan(id).orElseThrow();
    }
    boolean allFinished = plan.getMovesList().stream().allMatch(m -> m.getState() == MoveRecord.State.DONE
        || m.getState() == MoveRecord.State.FAILED || m.getState() == MoveRecord.State.CANCELLED);
    if (allFinished && inFlight.keySet().stream().noneMatch(k -> k.startsWith(id + "/"))) {
      finish(id);
    }
  }

  /**
   * Runs a plan's splits and merges in order, each against the map as the one before left it,
   * recording each as it ends. Paused: none starts; cancelled: those not run are cancelled.
   */
  private void driveResizes(PlanRecord plan, BalancerSettings settings, ShardMap map) {
    String id = plan.getId();
    for (int i = 0; i < plan.getResizesCount(); i++) {
      if (plan.getResizes(i).getState() != ResizeRecord.State.WAITING) {
        continue;
      }
      if (settings.getPaused() && !plan.getCancelRequested()) {
        return;
      }
      int index = i;
      ResizeRecord ended = plan.getCancelRequested()
          ? plan.getResizes(i).toBuilder().setState(ResizeRecord.State.CANCELLED).build()
          : resizer.run(plan.getResizes(i), map);
      plan = records.update(id, p -> p.toBuilder().setResizes(index, ended).build());
      map = coordinator.readMapSynced().map();
    }
    finish(id);
  }

  private void finish(String id) {
    PlanRecord done = records.update(id, p -> {
      long failed = p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.FAILED).count()
          + p.getResizesList().stream().filter(r -> r.getState() == ResizeRecord.State.FAILED).count();
      long cancelled = p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.CANCELLED).count()
          + p.getResizesList().stream().filter(r -> r.getState() == ResizeRecord.State.CANCELLED).count();
      PlanRecord.Builder b = p.toBuilder().setFinishedMillis(System.currentTimeMillis());
      for (MoveRecord m : p.getMovesList()) {
        if (m.getState() == MoveRecord.State.DONE) {
          b.setReportMovedKeys(b.getReportMovedKeys() + m.getProgress().getKeys())
              .setReportMovedBytes(b.getReportMovedBytes() + m.getProgress().getTotalBytes())
              .setReportLongestPauseMicros(Math.max(b.getReportLongestPauseMicros(), m.getProgress().getPauseMicros()));
        }
      }
      if (failed > 0) {
        b.setState(PlanRecord.State.FAILED).setError(p.getResizesCount() > 0 ? failed + " of " + p.getResizesCount() + " splits and merges failed"
            : failed + " of " + p.getMovesCount() + " moves failed");
      } else if (cancelled > 0 || p.getCancelRequested()) {
        b.setState(PlanRecord.State.CANCELLED);
      } else {
        b.setState(PlanRecord.State.DONE);
      }
      return b.build();
    });
    LOG.info("balancer: plan {} {}", id, Rebalancing.describe(done.getState()));
    if (done.getState() == PlanRecord.State.FAILED) {
      // Nothing in the cluster's shape may have changed, yet it is still unbalanced: plan again
      // (auto mode runs it, suggest mode proposes it) instead of waiting for a change that may never come.
      lastFingerprint = null;
    }
  }

  private static String key(String planId, int index) {
    return planId + "/" + index;
  }

  private static PlanRecord withMove(PlanRecord p, int index, MoveRecord.Builder move) {
    return p.toBuilder().setMoves(index, move).build();
  }

  private static Optional<NodeId> ownerOf(ShardMap map, MoveRecord m) {
    return map.shard(m.getTableId(), m.getNumber()).map(ShardAssignment::owner);
  }

  /** Whether the map shows the move done: the new owner, or for a replicated shard the replica (or lead) on its new node. */
  private static boolean landed(ShardMap map, MoveRecord m) {
    return m.getReplica() ? ReplicaMoves.landed(map, m) : ownerOf(map, m).map(o -> o.equals(NodeId.of(m.getTo()))).orElse(false);
  }

  /**
   * A lead-only move starts once its new leader is an in-sync follower — at once if it already was,
   * or once a replica move of the same plan has built it there. If no such move is left to build
   * it, the lead stays where it is (cancelled, with the reason).
   */
  private void startLeadership(PlanRecord plan, int index, ShardMap map, BalancerSettings settings, Map<NodeId, NodeInfo> live) {
    MoveRecord m = plan.getMoves(index);
    if (m.getState() != MoveRecord.State.WAITING || m.getRetryAfterMillis() > System.currentTimeMillis()) {
      return;
    }
    if (ReplicaMoves.leadReady(map, m)) {
      start(plan.getId(), index, settings, live);
      return;
    }
    boolean coming = plan.getMovesList().stream().anyMatch(o -> !o.getLeadership() && o.getTableId() == m.getTableId()
        && o.getNumber() == m.getNumber() && o.getTo().equals(m.getTo())
        && (o.getState() == MoveRecord.State.WAITING || o.getState() == MoveRecord.State.MOVING));
    if (!coming) {
      records.update(plan.getId(), p -> withMove(p, index, p.getMoves(index).toBuilder().setState(MoveRecord.State.CANCELLED)
          .setError(m.getTo() + " is not an in-sync follower of the shard, and no move of this plan makes it one")));
    }
  }


  private void start(String planId, int index, BalancerSettings settings, Map<NodeId, NodeInfo> live) {
    PlanRecord plan = records.update(planId, p -> withMove(p, index, p.getMoves(index).toBuilder()
        .setState(MoveRecord.State.MOVING).setAttempts(p.getMoves(index).getAttempts() + 1).clearError()));
    MoveRecord move = plan.getMoves(index);
    Context.CancellableContext context = Context.current().withCancellation();
    inFlight.put(key(planId, index), context);
    NodeInfo source = live.get(NodeId.of(move.getFrom()));
    movers.execute(() -> {
      try {
        MoveProgress last;
        if (move.getSourceAbsent()) {
          if (!plan.getDataLossAccepted()) {
            throw new IllegalStateException("plan " + planId + " was not approved with --accept-data-loss; shard " + move.getTable() + "/"
                + move.getNumber() + " of absent " + move.getFrom() + " is not given away");
          }
          reassign(move);
          last = MoveProgress.newBuilder().setPhase(MoveProgress.Phase.DONE).build();
        } else if (move.getReplica()) {
          last = replicaMoves.run(move, inSyncWithin(move, snapshotBytesPerSecond), context::isCancelled);
        } else if (source == null) {
          throw new IllegalStateException("the source " + move.getFrom() + " is not live");
        } else {
          Context previous = context.attach(); // cancelling the context cancels the call to the source
          try {
            last = runMove(planId, index, move, source, settings);
          } finally {
            context.detach(previous);
          }
        }
        // Done only when the map shows the new owner, whatever the source reported.
        if (!landed(coordinator.readMapSynced().map(), move)) {
          throw new IllegalStateException("the move ended but the map does not give shard " + move.getTable() + "/" + move.getNumber()
              + " to " + move.getTo());
        }
        records.update(planId, p -> withMove(p, index, p.getMoves(index).toBuilder().setState(MoveRecord.State.DONE).setProgress(last)));
      } catch (RuntimeException e) {
        failed(planId, index, move, e);
      } finally {
        inFlight.remove(key(planId, index));
        context.cancel(null);
        tickSoon(); // start the next move (or finish the plan) now, not at the next tick
      }
    });
  }

  /**
   * Asks the source to move the shard and records its progress in the plan at most once a second
   * (every write to ZooKeeper is a synced transaction; a table of 1024 small slots moves hundreds
   * of shards). Returns the last report, which the caller stores with the move's end.
   */
  private MoveProgress runMove(String planId, int index, MoveRecord move, NodeInfo source, BalancerSettings settings) {
    MoveShardRequest request = moveRequest(planId + "-" + index + "-" + move.getAttempts(), move.getTable(), move.getTableId(),
        move.getNumber(), move.getShardEpoch(), move.getTo(), settings);
    Iterator<MoveProgress> progress = MoveServiceGrpc.newBlockingStub(peers.channel(source.getAddress())).moveShard(request);
    long lastWrite = System.currentTimeMillis();
    MoveProgress last = MoveProgress.getDefaultInstance();
    while (progress.hasNext()) {
      MoveProgress p = progress.next();
      last = p;
      long now = System.currentTimeMillis();
      if (now - lastWrite >= PROGRESS_EVERY_MILLIS && p.getPhase() != MoveProgress.Phase.DONE) {
        records.update(planId, r -> withMove(r, index, r.getMoves(index).toBuilder().setProgress(p)));
        lastWrite = now;
      }
    }
    return last;
  }

  private static MoveShardRequest moveRequest(String moveId, String table, long tableId, long number, long shardEpoch, String to,
      BalancerSettings settings) {
    return MoveShardRequest.newBuilder().setMoveId(moveId).setTable(table).setTableId(tableId).setNumber(number).setTo(to)
        .setShardEpoch(shardEpoch).setBandwidthBytesPerSecond(settings.getBandwidthBytesPerSecond()).build();
  }

  /** How long a merge's move (of a shard under a quarter of its table's split size) may take before it is given up. */
  private static final Duration MERGE_MOVE_DEADLINE = Duration.ofMinutes(10);

  /**
   * A merge's move ({@link Resizer.ShardMoves}): run now, on the ticking thread, and waited for.
   * The shard is small and quiet by the merge policy, so this takes seconds; no other plan runs
   * meanwhile. A leader that stops here leaves the move to finish or abandon on its source, and the
   * next leader finds the shards on one node or moves again.
   */
  private MoveProgress moveNow(String moveId, io.shardwise.core.map.Table table, ShardAssignment shard, NodeId to) {
    if (table.replication().replicated()) {
      // The replica of the shard's leader moves to `to` and the lead goes with it; if `to` is a
      // follower already, only the lead passes (once it is in sync).
      return moveReplicaNow(table, shard, shard.owner(), to, shard.isReplica(to));
    }
    NodeInfo source = coordinator.liveNodesNow().get(shard.owner());
    if (source == null) {
      throw new IllegalStateException("the source " + shard.owner() + " is not live");
    }
    MoveShardRequest request = moveRequest(moveId, table.name(), table.id(), shard.id().number(), shard.epoch(), to.value(),
        records.settings());
    Iterator<MoveProgress> progress = MoveServiceGrpc.newBlockingStub(peers.channel(source.getAddress()))
        .withDeadlineAfter(MERGE_MOVE_DEADLINE.toMillis(), TimeUnit.MILLISECONDS).moveShard(request);
    MoveProgress last = MoveProgress.getDefaultInstance();
    while (progress.hasNext()) {
      last = progress.next();
    }
    return last;
  }

  /**
   * A merge's replica move ({@link Resizer.ShardMoves#moveReplica}): run now, on the ticking thread.
   * A lead-only move first waits (as long as a new follower may take to catch up) for {@code to} to
   * be in sync: it may have joined the shard a moment ago.
   */
  private MoveProgress moveReplicaNow(io.shardwise.core.map.Table table, ShardAssignment shard, NodeId from, NodeId to, boolean leadOnly) {
    MoveRecord move = MoveRecord.newBuilder().setTable(table.name()).setTableId(table.id()).setNumber(shard.id().number())
        .setFrom(from.value()).setTo(to.value()).setReplica(true).setLeadership(leadOnly).setShardEpoch(shard.epoch()).build();
    Duration within = inSyncWithin(move, snapshotBytesPerSecond);
    if (leadOnly && !Retries.poll(within, Duration.ofMillis(100), () -> ReplicaMoves.leadReady(coordinator.readMap().map(), move))) {
      throw new IllegalStateException("shard " + shard.id() + ": " + to + " did not join its in-sync set within " + within.toSeconds() + " s");
    }
    return replicaMoves.run(move, within, () -> false);
  }

  /** The source is gone for good: give its shard to the destination without data (there is no replica to copy). */
  private void reassign(MoveRecord move) {
    coordinator.updateMap(map -> {
      Optional<NodeId> owner = ownerOf(map, move);
      if (owner.isEmpty() || !owner.get().equals(NodeId.of(move.getFrom()))) {
        throw new IllegalStateException("shard " + move.getTable() + "/" + move.getNumber() + " no longer belongs to " + move.getFrom());
      }
      if (coordinator.liveNodesNow().containsKey(owner.get())) {
        throw new IllegalStateException(move.getFrom() + " came back; its shards are not reassigned");
      }
      ShardAssignment s = map.shard(move.getTableId(), move.getNumber()).orElseThrow();
      return Optional.of(ShardMapDelta.on(map).moveShard(s.id(), s.owner(), NodeId.of(move.getTo())).build());
    });
  }

  /** Backoff before attempt {@code attempts + 1}: 0.5 s doubling to 30 s, with ±25% jitter so moves do not retry in step. */
  static long retryDelayMillis(int attempts) {
    long base = Math.min(30_000, 500L << Math.max(0, Math.min(attempts - 1, 10)));
    return base * 3 / 4 + java.util.concurrent.ThreadLocalRandom.current().nextLong(base / 2 + 1);
  }

  /**
   * How long a replica move waits for its new follower to catch up: a minute, plus twice the time
   * the shard's bytes take at the snapshot bandwidth (the leader sends the follower's snapshot at
   * that rate, not at the move bandwidth of shards of one replica).
   */
  static Duration inSyncWithin(MoveRecord move, long snapshotBytesPerSecond) {
    long copySeconds = snapshotBytesPerSecond <= 0 ? 0 : 2 * move.getBytes() / snapshotBytesPerSecond;
    return Duration.ofSeconds(60 + copySeconds);
  }

  private void failed(String planId, int index, MoveRecord move, RuntimeException e) {
    boolean cutOver = landed(coordinator.readMapSynced().map(), move);
    int maxAttempts = records.settings().getMaxMoveAttempts();
    PlanRecord after = records.update(planId, p -> {
      MoveRecord.Builder m = p.getMoves(index).toBuilder();
      if (cutOver) {
        m.setState(MoveRecord.State.DONE); // the source cut over, then the answer was lost
      } else if (p.getCancelRequested()) {
        m.setState(MoveRecord.State.CANCELLED).setError(String.valueOf(e.getMessage()));
      } else {
        m.setState(m.getAttempts() >= maxAttempts ? MoveRecord.State.FAILED : MoveRecord.State.WAITING)
            .setError(String.valueOf(e.getMessage()))
            .setRetryAfterMillis(System.currentTimeMillis() + retryDelayMillis(m.getAttempts()));
      }
      return withMove(p, index, m);
    });
    LOG.info("balancer: move {}/{} of plan {} (attempt {}): {} -> {}", move.getTable(), move.getNumber(), planId, move.getAttempts(),
        e.getMessage(), Rebalancing.describe(after.getState()) + "/" + after.getMoves(index).getState());
  }

  @Override
  public void close() {
    ticker.shutdownNow();
    indexes.close();
    inFlight.values().forEach(c -> c.cancel(null));
    movers.shutdownNow();
    try {
      latch.close();
    } catch (IOException | IllegalStateException e) {
      // the session ends with the node anyway, which ends the leadership
    }
  }
}
