package io.shardwise.server.node;

import io.grpc.Server;
import io.micrometer.core.instrument.MeterRegistry;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.balance.Balancer;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.move.MoveServiceImpl;
import io.shardwise.server.rpc.AdminServiceImpl;
import io.shardwise.server.rpc.AppliedMap;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.DataServiceImpl;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.rpc.TableAdmin;
import io.shardwise.server.shard.LocalShards;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardTraffic;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.ShardTrash;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.state.ConnectionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running node: its shards in RocksDB, its place in ZooKeeper, and the data and admin API on one
 * gRPC port.
 *
 * <p>Start order: open the store, connect to ZooKeeper, read and apply the map, listen, register
 * (only then do others route to it). A node that loses its ZooKeeper session stops accepting writes
 * (design rule 2) until it has reconnected and re-read the map. Close it to stop: unregister, stop
 * listening, close the store.
 */
public final class ShardwiseNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ShardwiseNode.class);
  /**
   * How long a shard remembers the answer to a write id: far longer than any client retries one
   * write (its attempts span seconds), short enough that the records stay a small part of a shard.
   */
  static final Duration REQUEST_RECORD_HORIZON = Duration.ofMinutes(10);
  private static final String ID_FILE = "node-id";

  private final NodeId id;
  private final ShardStore store;
  private final LocalShards shards;
  private final NodeTrash trash;
  private final Coordinator coordinator;
  private final AppliedMap map = new AppliedMap();
  private final AtomicBoolean writable = new AtomicBoolean(false);
  private final AtomicBoolean closed = new AtomicBoolean(false);
  private final Peers peers;
  private final ScheduledExecutorService cleaner;
  private final io.micrometer.prometheusmetrics.PrometheusMeterRegistry metrics =
      new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
  private MetricsEndpoint metricsEndpoint;
  private final io.shardwise.server.hot.ShardHeat heat = new io.shardwise.server.hot.ShardHeat();
  private io.shardwise.server.index.IndexBuilds indexBuilds;
  private Duration dropGrace = Duration.ofSeconds(30);
  private String clusterId;
  private MoveServiceImpl moves;
  private io.shardwise.server.replication.Replicator replicator;
  private final ScheduledExecutorService replication;
  private final java.util.concurrent.ExecutorService replicaSnapshots;
  private Balancer balancer;
  private DataServiceImpl data;
  private Server server;
  private io.shardwise.server.replication.GrpcReplication.Service replicationService;
  private String address;

  private ShardwiseNode(NodeId id, ShardStore store, Coordinator coordinator, Peers peers) {
    this.id = id;
    this.store = store;
    this.shards = new LocalShards(store);
    this.trash = new NodeTrash(id, store, shards, map::current, coordinator, peers);
    this.coordinator = coordinator;
    this.peers = peers;
    this.cleaner = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "shardwise-cleaner-" + id);
      t.setDaemon(true);
      return t;
    });
    // Sends replication messages, ticks heartbeats and stores in-sync changes: never on a request's thread.
    this.replication = Executors.newScheduledThreadPool(2, r -> {
      Thread t = new Thread(r, "shardwise-replication-" + id);
      t.setDaemon(true);
      return t;
    });
    // Exports and sends snapshots to followers that fell behind the log: as long as a shard takes to copy.
    this.replicaSnapshots = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "shardwise-replica-snapshots-" + id);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Starts a node.
   *
   * @throws IllegalStateException naming the problem: ZooKeeper unreachable, port in use, data
   *     directory held by another process, id already live
   */
  public static ShardwiseNode start(NodeConfig config) {
    Optional<String> known = config.id() != null ? Optional.of(config.id()) : storedId(config.dataDir());
    if (config.powerLossOnCrash() && !config.syncWrites()) {
      throw new IllegalArgumentException("power loss on crash (--power-loss-on-crash) needs sync writes (--sync-writes): a node that fsyncs no write may lose acknowledged"
          + " writes to a power loss by design, so there is nothing to test");
    }
    ShardStore store = ShardStore.open(config.dataDir().resolve("rocksdb"), config.syncWrites(), config.powerLossOnCrash());
    Coordinator coordinator;
    NodeId id;
    try {
      coordinator = Coordinator.connect(config.zk(), config.sessionTimeout(), Duration.ofSeconds(20));
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
    try {
      if (known.isEmpty() && (!store.isEmpty() || !store.trash().entries().isEmpty())) {
        // Claiming a name would make the directory look like a member that joined before (rule 6).
        throw new IllegalStateException("data directory " + config.dataDir() + " holds data but no node id; start it with --id and the id"
            + " it had (and --adopt-cluster if it must join a cluster it was never part of)");
      }
      id = known.map(NodeId::of).orElseGet(() -> claimNextId(coordinator, config.dataDir()));
    } catch (RuntimeException e) {
      coordinator.close();
      store.close();
      throw e;
    }
    ShardwiseNode node = new ShardwiseNode(id, store, coordinator, new Peers(config.limits().maxMessageBytes()));
    try {
      node.run(config);
      return node;
    } catch (RuntimeException e) {
      node.close();
      throw e;
    }
  }

  private void run(NodeConfig config) {
    LOG.info("node starting: {}", config);
    clusterId = ClusterIdentity.establish(coordinator, config.zk(), config.dataDir(), id, !store.isEmpty()
        || !store.trash().entries().isEmpty(), config.adoptCluster());
    StoreTrust.establish(coordinator, id, store.identity()); // before anything serves, or the map counts on data it lost
    migrateLayout();
    indexBuilds = new io.shardwise.server.index.IndexBuilds(store, id.value());
    ClusterContext ctx = new ClusterContext(id, map, coordinator, peers, store, shards, config.limits(), writable::get, metrics,
        config.hooks(), heat);
    TableAdmin tables = new TableAdmin(ctx);
    heat.sampling(config.hotKeySampling());
    io.micrometer.core.instrument.Gauge.builder("shardwise.hot.keys", heat, h -> h.hotKeys(io.shardwise.server.balance.Isolation.HOT_KEY_SHARE))
        .description("partition keys taking at least half of their shard's sampled requests (guaranteed), over the shards this node serves")
        .register(metrics);
    io.shardwise.server.replication.ReplicationConfig replicationConfig = config.replication();
    replicator = new io.shardwise.server.replication.Replicator(id, store,
        io.shardwise.server.replication.GrpcReplication.transport(ctx::addressOf, peers::channel, replicationConfig.snapshotBytesPerSecond(),
            config.writesOnNetworkThreads()),
        this::updateMapAsync, replication, replicaSnapshots, config.dataDir().resolve("replica-snapshots"), System::nanoTime,
        replicationConfig);
    String barriers = "shardwise.replication.read.barriers";
    String barriersHelp = "Leader reads of replicated shards: passed at once (a read lease, or no follower in sync) or after a round to the followers";
    io.micrometer.core.instrument.FunctionCounter.builder(barriers, replicator, r -> r.readBarriers().atOnce()).tag("passed", "at_once")
        .description(barriersHelp).register(metrics);
    io.micrometer.core.instrument.FunctionCounter.builder(barriers, replicator, r -> r.readBarriers().afterRound()).tag("passed", "after_round")
        .description(barriersHelp).register(metrics);
    io.micrometer.core.instrument.FunctionCounter.builder("shardwise.replication.messages", replicator, r -> r.sent().messages())
        .description("Append messages this node sent its followers as a leader (one in flight per follower node; heartbeats included)")
        .register(metrics);
    io.micrometer.core.instrument.FunctionCounter.builder("shardwise.replication.entries", replicator, r -> r.sent().entries())
        .description("Log entries in those messages: entries per message is how deep the batching is").register(metrics);
    shards.replicateWith(new io.shardwise.server.replication.NodeReplication(replicator, replicationConfig, () -> map.current().epoch(),
        DataServiceImpl::mayBlock));
    coordinator.watchConnection(this::onConnectionChange);
    coordinator.onLiveNodesChange(peers::resetConnectBackoff); // a restarted peer is reachable at once
    dropGrace = config.dropGrace();
    moves = new MoveServiceImpl(ctx, config.dataDir().resolve("moves"), this::onMap, config.moveListener());
    coordinator.watchMap(this::onMap);
    trashForeignShards();
    Duration trashGrace = config.trashGrace();
    long purgeEvery = Math.max(100, Math.min(Duration.ofMinutes(1).toMillis(), trashGrace.toMillis() / 10));
    cleaner.scheduleWithFixedDelay(() -> purgeTrash(trashGrace), purgeEvery, purgeEvery, TimeUnit.MILLISECONDS);
    cleaner.scheduleWithFixedDelay(this::purgeRequestRecords, 1, 1, TimeUnit.MINUTES);
    cleaner.scheduleAtFixedRate(this::tickRates, 1, 1, TimeUnit.SECONDS);
    cleaner.scheduleWithFixedDelay(() -> indexBuilds.backfill(map.current()), 5, 5, TimeUnit.SECONDS); // one cut short, again
    long heartbeat = replicationConfig.heartbeat().toMillis();
    replication.scheduleWithFixedDelay(this::tickReplication, heartbeat, heartbeat, TimeUnit.MILLISECONDS);
    Duration tombstoneGrace = config.tombstoneGrace();
    if (tombstoneGrace.compareTo(trashGrace) < 0) {
      LOG.warn("node {}: tombstone grace {} is shorter than trash grace {}: restoring a trash entry may bring back keys deleted "
          + "since it was trashed", id, tombstoneGrace, trashGrace);
    }
    long tombstonesEvery = Math.max(100, Math.min(Duration.ofHours(1).toMillis(), tombstoneGrace.toMillis() / 10));
    cleaner.scheduleWithFixedDelay(() -> purgeTombstones(tombstoneGrace), tombstonesEvery, tombstonesEvery, TimeUnit.MILLISECONDS);
    writable.set(true);
    data = new DataServiceImpl(ctx, tables, config.txnTimeout());
    indexBuilds.attach(data.indexFence(), data.globalIndexes(), data.asyncIndexes());
    data.asyncIndexes().start();
    io.micrometer.core.instrument.Gauge.builder("shardwise.index.lag", data.asyncIndexes(), io.shardwise.server.index.AsyncIndexes::lagSeconds)
        .baseUnit("seconds").description("age of the oldest write not yet shown by an async global index, over the shards this node leads")
        .register(metrics);
    cleaner.scheduleWithFixedDelay(this::purgeTxnRecords, 1, 1, TimeUnit.MINUTES);
    replicationService = io.shardwise.server.replication.GrpcReplication.service(replicator, this::replicatedShard,
        config.dataDir().resolve("replica-snapshots"));
    server = GrpcServers.start(config.host(), config.port(), config.limits().maxMessageBytes(), config.interceptors(),
        DataServiceImpl.callExecutors(config.writesOnNetworkThreads(), !config.interceptors().isEmpty() || config.hooks() != RequestHooks.NONE),
        data, new AdminServiceImpl(ctx, tables, trash, indexBuilds), moves,
        replicationService);
    address = config.host() + ":" + server.getPort();
    NodeInfo.Builder info = NodeInfo.newBuilder().setId(id.value()).setAddress(address).putAllLabels(config.labels());
    // A restart right after a kill -9 finds its old session's znode: wait out the session, not fail.
    coordinator.register(false, info.build(), Duration.ofSeconds(20), config.sessionTimeout().multipliedBy(2));
    balancer = Balancer.start(id, coordinator, peers, config.balancerTick(), metrics, config.replication().snapshotBytesPerSecond(),
        data.globalIndexes()::backfill);
    coordinator.onLiveNodesChange(balancer::nodesChanged); // a leader's node gone: its shards fail over at once
    if (config.metricsPort() >= 0) {
      metricsEndpoint = MetricsEndpoint.start(config.host(), config.metricsPort(), metrics);
      LOG.info("node {}: Prometheus metrics on {}", id, metricsEndpoint.url());
    }
    LOG.info("node {} serving on {} (map epoch {})", id, address, map.current().epoch());
  }

  /**
   * Brings a data directory written by an older build to the current layout before anything is
   * served: range and hashrange shards in placement order ({@link ShardStore#migrate}), by the
   * tables of the stored map.
   */
  private void migrateLayout() {
    if (store.layoutVersion() == ShardStore.LAYOUT_VERSION) {
      return;
    }
    ShardMap stored = coordinator.readMap().map();
    long started = System.nanoTime();
    ShardStore.Migration m = store.migrate(tableId -> stored.tableById(tableId).orElse(null));
    LOG.info("node {}: data directory migrated from layout version {} to {}: {} shards of range and hashrange tables ({} stored keys)"
        + " rewritten in placement order in {} ms", id, m.fromVersion(), ShardStore.LAYOUT_VERSION, m.shards(), m.keys(),
        (System.nanoTime() - started) / 1_000_000);
  }

  /** Fences writes while the session is in doubt; lifts the fence only after re-reading the map. */
  private void onConnectionChange(ConnectionState state) {
    if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
      writable.set(false);
      LOG.warn("node {}: ZooKeeper connection {}; writes fenced", id, state);
    } else if (state == ConnectionState.RECONNECTED) {
      try {
        onMap(coordinator.readMap().map());
        writable.set(true);
        LOG.info("node {}: reconnected and re-read the map (epoch {}); writes resumed", id, map.current().epoch());
      } catch (RuntimeException e) {
        LOG.warn("node {}: reconnected but could not re-read the map; writes stay fenced: {}", id, e.getMessage());
      }
    }
  }

  /**
   * Applies a newer map. The local shards change first — shards this node now owns serve, shards
   * it lost are handed off (each waits for its requests in flight) — and only then is the map the
   * one requests are routed by, so no request routed by the new map meets a shard in its old state.
   * Data of tables that are gone goes to the trash at once; shards that moved away go there after
   * the drop grace (requests already reading them finish first).
   */
  private synchronized void onMap(ShardMap next) {
    ShardMap previous = map.current();
    if (next.epoch() <= previous.epoch()) {
      return;
    }
    // The store keeps the new map's indexes before any request is routed by it: every write from
    // then on maintains them (and the rows written before are backfilled below).
    indexBuilds.define(next);
    LocalShards.MapChanges changes;
    List<ShardRef> replicasRemoved = List.of();
    synchronized (store.trash()) {
      trash.restoreUndropped(previous, next);
      changes = shards.apply(previous, next, id);
      if (replicator != null) {
        replicasRemoved = replicator.apply(previous, next); // leads, follows or lets go of replicas before requests route by the new map
      }
      for (ShardRef shard : changes.stoppedReplicating()) {
        // Its table went back to one replica, and its replica here no longer leads: its writes take
        // the direct path from now on, and its log is of no use any more.
        shards.stopReplicating(shard);
        store.replicaStorage().forget(shard);
      }
      map.advance(next);
    }
    for (ShardRef shard : replicasRemoved) {
      if (next.tableById(shard.tableId()).map(t -> t.positionOf(shard.shardNumber()) < 0).orElse(false)) {
        // Split or merged: the shards that replaced it start logs of their own over its data (kept
        // where it is if this node is one of their replicas); its own log is of no use any more.
        cleaner.execute(() -> forgetCutLog(shard));
      }
      // A follower removed here (rebuilt elsewhere, the factor lowered, the table dropped): its copy
      // goes to the trash after the drop grace, unless the node is a replica of that range again by then.
      cleaner.schedule(() -> trash.put(shard, ShardTrash.Kind.MOVED_AWAY, "no longer a replica here (map epoch " + map.current().epoch() + ")",
          () -> keepsNothingOf(shard)), dropGrace.toMillis(), TimeUnit.MILLISECONDS);
    }
    changes.owned().forEach(moves::arrived);
    indexBuilds.backfill(next);
    registerShardMeters(previous, next);
    for (ShardRef shard : changes.droppedTables()) {
      cleaner.execute(() -> trash.put(shard, ShardTrash.Kind.TABLE_DROPPED, "its table was dropped at map epoch " + next.epoch(),
          () -> map.current().tables().values().stream().noneMatch(t -> t.id() == shard.tableId()))); // not if undropped meanwhile
    }
    changes.lost().forEach(heat::forget);
    changes.droppedTables().forEach(heat::forget);
    for (ShardRef shard : changes.lost()) {
      cleaner.schedule(() -> dropIfForeign(shard), dropGrace.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** The replicated shard a leader's message names, as this node's map has it; {@code null} if the map has no such shard. */
  private ShardRef replicatedShard(long tableId, long number) {
    return map.current().tableById(tableId).filter(t -> t.positionOf(number) >= 0).map(t -> ShardRef.of(t, number)).orElse(null);
  }

  /** A leader's change of a shard's in-sync set: stored by compare-and-set off the caller's thread, then applied here. */
  private void updateMapAsync(java.util.function.Function<ShardMap, Optional<io.shardwise.core.map.ShardMapDelta>> change,
      java.util.function.BiConsumer<ShardMap, Throwable> done) {
    try {
      replication.execute(() -> {
        ShardMap stored;
        try {
          stored = coordinator.updateMap(change);
        } catch (RuntimeException e) {
          done.accept(null, e);
          return;
        }
        onMap(stored);
        done.accept(stored, null);
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      done.accept(null, closing);
    }
  }

  private void tickReplication() {
    try {
      if (writable.get()) { // a node cut off from ZooKeeper neither heartbeats nor changes in-sync sets
        replicator.tick();
      }
    } catch (RuntimeException e) {
      LOG.warn("node {}: replication tick failed: {}", id, e.toString());
    }
  }

  /**
   * {@code shardwise.shard.reads} and {@code .writes} (keys served, as counters) for every shard this
   * node owns, tagged with the table's name and id and the shard's number: registering is
   * idempotent, and a shard that moves away keeps its meter (its count stops rising). Only shards
   * that changed since {@code previous} can be new here, so a map change costs what it changed.
   */
  private void registerShardMeters(ShardMap previous, ShardMap next) {
    ShardTraffic traffic = store.traffic();
    for (Table t : next.tables().values()) {
      if (t.unchangedSince(previous)) {
        continue;
      }
      for (var a : t.shards()) {
        if (!a.owner().equals(id) || a.epoch() <= previous.epoch()) {
          continue;
        }
        ShardRef ref = ShardRef.of(t, a.id().number());
        io.micrometer.core.instrument.Tags tags = io.micrometer.core.instrument.Tags.of("table", t.name(), "table_id",
            Long.toString(t.id()), "shard", Long.toString(a.id().number()));
        if (metrics.find("shardwise.shard.reads").tags(tags).functionCounter() != null) {
          continue; // it led the shard before (a replica that leads again, a shard that moved back)
        }
        io.micrometer.core.instrument.FunctionCounter.builder("shardwise.shard.reads", traffic, x -> x.counts(ref).reads())
            .baseUnit("keys").description("keys read from the shard on this node since it started").tags(tags).register(metrics);
        io.micrometer.core.instrument.FunctionCounter.builder("shardwise.shard.writes", traffic, x -> x.counts(ref).writes())
            .baseUnit("keys").description("keys written to the shard on this node since it started").tags(tags).register(metrics);
        if (t.replication().replicated()) {
          io.micrometer.core.instrument.Gauge.builder("shardwise.replication.lag", replicator, r -> r.lagEntries(ref))
              .baseUnit("entries").description("entries of the shard's log its furthest-behind follower lacks (0 unless this node leads it)")
              .tags(tags).register(metrics);
        }
      }
    }
  }

  /** Once a second: each owned shard's requests in the second that passed, for {@code shardwise hotspots}. */
  private void tickRates() {
    try {
      java.util.Map<ShardRef, ShardTraffic.Counts> counts = new java.util.HashMap<>();
      for (ShardRef ref : shards.all().keySet()) { // the shards this node holds
        counts.put(ref, store.traffic().counts(ref));
      }
      heat.rates().tick(counts);
    } catch (RuntimeException e) {
      LOG.warn("node {}: recording request rates failed: {}", id, e.toString());
    }
  }

  /**
   * Moves a shard's old copy to the trash unless this node owns the shard (again) or is receiving it.
   * A shard that a split or a merge replaced is not a copy of its own: its keys are those of the
   * shards that now cover its span, and only the ones this node neither owns nor is receiving go.
   */
  private void dropIfForeign(ShardRef shard) {
    ShardMap now = map.current();
    Table table = now.tableById(shard.tableId()).orElse(null);
    if (table != null && table.positionOf(shard.shardNumber()) < 0 && shard.layout() != ShardRef.Layout.BUCKET) {
      for (var s : table.shards()) {
        ShardRef covering = ShardRef.of(table, s.id().number());
        if (covering.overlaps(shard)) {
          trash.put(covering, ShardTrash.Kind.MOVED_AWAY, "moved to another node after shard " + shard.shardNumber()
              + " was split or merged (map epoch " + now.epoch() + ")", () -> keepsNothingOf(covering));
        }
      }
      shards.forget(shard);
      return;
    }
    trash.put(shard, ShardTrash.Kind.MOVED_AWAY, "moved to another node (map epoch " + now.epoch() + ")", () -> keepsNothingOf(shard));
  }

  /** The log of a replicated shard that a split or merge replaced, unless its range goes to the trash (with the log) instead. */
  private void forgetCutLog(ShardRef shard) {
    try {
      if (!keepsNothingOf(shard)) {
        store.replicaStorage().forget(shard);
      }
    } catch (RuntimeException e) {
      LOG.warn("node {}: could not remove the log of split or merged shard {}: {}", id, shard, e.getMessage());
    }
  }

  /**
   * True if no part of {@code range} is this node's to keep: no shard of the map it applies that
   * overlaps the range names this node as a replica, and no move into this node is receiving one.
   * Checked by range, not by shard id: between the decision to drop a stale copy and the drop, the
   * shard it was may have been split or merged, and a part of it given back to this node.
   */
  private boolean keepsNothingOf(ShardRef range) {
    Table table = map.current().tableById(range.tableId()).orElse(null);
    if (table != null) {
      for (var s : table.shards()) {
        if (s.isReplica(id) && ShardRef.of(table, s.id().number()).overlaps(range)) {
          return false;
        }
      }
    }
    return !moves.receivingInto(range);
  }

  /**
   * At start: copies of shards this node does not own (left by moves that finished or died while
   * it was down, or by a reassignment while it was away) go to the trash — never deleted, since
   * the cluster identity has been checked but the map may still be wrong about what they hold.
   */
  private void trashForeignShards() {
    ShardMap current = map.current();
    for (ShardRef shard : store.storedShards(tableId -> current.tableById(tableId).orElse(null))) {
      if (!map.current().holds(id, shard.tableId(), shard.shardNumber())) {
        trash.put(shard, ShardTrash.Kind.FOREIGN_AT_START, "not this node's in the map at epoch " + map.current().epoch() + " when it started",
            () -> keepsNothingOf(shard));
      }
    }
  }

  /** Transaction records are kept as long as write ids: a retry under the same token within that horizon answers the first outcome. */
  private void purgeTxnRecords() {
    try {
      int purged = purgeTxnRecords(System.currentTimeMillis() - REQUEST_RECORD_HORIZON.toMillis());
      if (purged > 0) {
        LOG.info("node {}: purged {} transaction records decided more than {} ago", id, purged, REQUEST_RECORD_HORIZON);
      }
    } catch (RuntimeException e) {
      LOG.warn("node {}: purging transaction records failed: {}", id, e.getMessage());
    }
  }

  /** Purges the records of transactions decided before {@code cutoff} in the shards led here; returns how many. Package-private for tests. */
  int purgeTxnRecords(long cutoff) {
    return data.purgeTxnRecords(cutoff);
  }

  private void purgeRequestRecords() {
    purgeRequestRecords(System.currentTimeMillis() - REQUEST_RECORD_HORIZON.toMillis());
  }

  /** How many write-id records a replicated shard's leader removes in one log entry. */
  private static final int RECORDS_PER_PURGE_ENTRY = 1_024;

  /**
   * Removes write-id records written before {@code cutoff}: a shard of one replica's directly, a
   * replicated shard's (led here) through its log, so every replica removes the same ones.
   * Package-private for tests.
   */
  void purgeRequestRecords(long cutoff) {
    for (var shard : shards.all().values()) {
      try {
        if (shard.state() != io.shardwise.server.shard.LocalShard.State.SERVING) {
          continue;
        }
        if (shard.replicated()) {
          int removed;
          do {
            removed = replicator.purgeRecords(shard.ref(), cutoff, RECORDS_PER_PURGE_ENTRY).get(30, TimeUnit.SECONDS);
          } while (removed == RECORDS_PER_PURGE_ENTRY && !store.isClosed());
        } else {
          shards.maintainUnreplicated(shard.ref(), () -> store.purgeRequestRecords(shard.ref(), cutoff));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        LOG.warn("node {}: purging the write ids of shard {} through its log failed: {}", id,
            map().shardName(shard.ref().tableId(), shard.ref().shardNumber()), e.toString());
      } catch (RuntimeException e) {
        LOG.warn("node {}: purging the write ids of shard {} failed: {}", id, map().shardName(shard.ref().tableId(), shard.ref().shardNumber()),
            e.getMessage());
      }
    }
  }

  /**
   * Tombstones older than {@code grace}, shard by shard, a batch at a time, each batch inside the
   * shard's fence and never while a move copies the shard (it is simply tried again next time); a
   * replicated shard's by its leader, through its log ({@link #purgeThroughTheLog}). Package-private
   * for tests.
   */
  void purgeTombstones(Duration grace) {
    long cutoff = System.currentTimeMillis() - grace.toMillis();
    long purged = 0;
    for (ShardRef shard : List.copyOf(shards.all().keySet())) {
      if (shards.replicated(shard)) {
        try {
          purged += purgeThroughTheLog(shard, cutoff); // every replica removes the same ones
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (Exception e) {
          LOG.warn("node {}: purging the tombstones of shard {} through its log failed: {}", id,
              map().shardName(shard.tableId(), shard.shardNumber()), e.toString());
        }
        continue;
      }
      byte[] from = new byte[0];
      try {
        while (from != null && !store.isClosed()) {
          byte[] start = from;
          Optional<ShardStore.TombstonePurge> batch = shards.maintainUnreplicated(shard, () -> store.purgeTombstones(shard, cutoff, start));
          if (batch.isEmpty()) {
            break;
          }
          purged += batch.get().purged();
          from = batch.get().next();
        }
      } catch (RuntimeException e) {
        LOG.warn("node {}: purging the tombstones of shard {} failed: {}", id, map().shardName(shard.tableId(), shard.shardNumber()), e.getMessage());
      }
    }
    if (purged > 0) {
      LOG.info("node {}: purged {} tombstones older than {}", id, purged, grace);
    }
  }

  /**
   * The tombstones older than {@code cutoff} of a replicated shard this node leads, a batch at a
   * time: the table's version floor in the map is raised to the highest version of the batch first
   * (one compare-and-set, applied here before the purge is appended), then the leader appends their
   * removal ({@link io.shardwise.server.replication.Replicator#purgeTombstones}). Returns how many.
   */
  private int purgeThroughTheLog(ShardRef shard, long cutoff) throws Exception {
    int purged = 0;
    while (!store.isClosed()) {
      List<io.shardwise.server.storage.ShardEngine.StoredValue> found = replicator.tombstonesToPurge(shard, cutoff,
          ShardStore.TOMBSTONE_PURGE_BATCH);
      if (found.isEmpty()) {
        return purged;
      }
      long highest = 0;
      for (var t : found) {
        highest = Math.max(highest, store.versionOf(t.stored()));
      }
      long floor = highest;
      Table table = map.current().tableById(shard.tableId()).orElse(null);
      if (table == null) {
        return purged;
      }
      if (table.replication().versionFloor() < floor) {
        onMap(coordinator.updateMap(m -> m.tableById(shard.tableId()).filter(t -> t.replication().versionFloor() < floor)
            .map(t -> io.shardwise.core.map.ShardMapDelta.on(m).add(new io.shardwise.core.map.ShardMapDelta.RaiseVersionFloor(t.name(), floor))
                .build())));
      }
      int removed = replicator.purgeTombstones(shard, found).get(30, TimeUnit.SECONDS);
      purged += removed;
      if (removed == 0 || found.size() < ShardStore.TOMBSTONE_PURGE_BATCH) {
        return purged;
      }
    }
    return purged;
  }

  private void purgeTrash(Duration grace) {
    try {
      for (var e : store.trash().purgeExpired(grace, System.currentTimeMillis())) {
        LOG.info("node {}: purged trash entry {} (shard {}, {} keys, {} bytes) after {}", id, e.id(),
            map().shardName(e.shard().tableId(), e.shard().shardNumber()), e.liveKeys(), e.bytes(),
            grace);
      }
    } catch (RuntimeException e) {
      LOG.warn("node {}: purging the trash failed: {}", id, e.getMessage());
    }
  }

  /** The id kept in the data directory ({@code node-id}), if it has one. */
  private static Optional<String> storedId(Path dataDir) {
    Path file = dataDir.resolve(ID_FILE);
    try {
      return Files.exists(file) ? Optional.of(Files.readString(file, StandardCharsets.UTF_8).strip()) : Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the node id in " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * A node started without {@code --id} on a new data directory takes the first {@code nN} no node
   * of this cluster has had, claimed in ZooKeeper (a member znode created only if absent, so two
   * nodes starting at once never take the same one), and keeps it in its data directory.
   */
  private static NodeId claimNextId(Coordinator coordinator, Path dataDir) {
    java.util.Set<String> taken = new java.util.HashSet<>(coordinator.children(Coordinator.MEMBERS_PATH));
    for (int n = 1; ; n++) {
      String candidate = "n" + n;
      if (!taken.contains(candidate) && coordinator.createIfAbsent(Coordinator.MEMBERS_PATH + "/" + candidate)) {
        Path file = dataDir.resolve(ID_FILE);
        try {
          Files.createDirectories(dataDir);
          Files.writeString(file, candidate + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
          throw new UncheckedIOException("cannot write the node id to " + file + ": " + e.getMessage(), e);
        }
        return NodeId.of(candidate);
      }
    }
  }

  public NodeId id() {
    return id;
  }

  /** The cluster this node belongs to (kept in its data directory). */
  public String clusterId() {
    return clusterId;
  }

  /** {@code host:port} of the data and admin API. */
  public String address() {
    return address;
  }

  public ShardMap map() {
    return map.current();
  }

  /** This node's storage, for tests and tools that check where keys live. */
  public ShardStore store() {
    return store;
  }

  /** This node's meters: moves, pauses, catch-up lag, the balancer's moves in flight. */
  public MeterRegistry metrics() {
    return metrics;
  }

  /** Where this node serves Prometheus text, if it was started with a metrics port. */
  public Optional<String> metricsUrl() {
    return Optional.ofNullable(metricsEndpoint).map(MetricsEndpoint::url);
  }

  /** This node's replicas of replicated shards (for tests and tools that look at them). */
  public io.shardwise.server.replication.Replicator replicator() {
    return replicator;
  }

  /** This node's balancer (it acts only while this node leads). */
  public Balancer balancer() {
    return balancer;
  }

  public boolean writable() {
    return writable.get();
  }

  /** Stops the node; closing it again does nothing. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    writable.set(false);
    if (balancer != null) {
      balancer.close();
    }
    cleaner.shutdownNow();
    replication.shutdownNow();
    replicaSnapshots.shutdownNow();
    if (metricsEndpoint != null) {
      metricsEndpoint.close();
    }
    coordinator.close(); // unregisters first, so nobody routes here while we stop
    if (server != null) {
      replicationService.closeStreams(); // open append streams would hold a graceful stop for its whole wait
      GrpcServers.stop(server);
    }
    if (data != null && data.asyncIndexes() != null) {
      data.asyncIndexes().close();
    }
    peers.close();
    if (indexBuilds != null) {
      indexBuilds.close();
    }
    store.close();
  }
}
