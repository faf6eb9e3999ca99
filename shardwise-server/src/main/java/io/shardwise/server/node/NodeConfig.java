package io.shardwise.server.node;

import io.grpc.ServerInterceptor;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.RequestHooks;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * How to run a node: an immutable value. {@link #of} gives the defaults; each {@code withX}
 * returns a copy with one setting changed and validates it at once.
 *
 * <ul>
 *   <li>{@code id}: the node id, or {@code null} to use the one kept in the data directory (on
 *       first start: the first {@code nN} this cluster has not had, claimed in ZooKeeper)
 *   <li>{@code dataDir}: where the node keeps its RocksDB data, its id and its cluster id
 *   <li>{@code host}, {@code port}: the address to listen on and advertise; port 0 lets the OS choose
 *   <li>{@code zk}: ZooKeeper connect string ({@code host:port,host:port})
 *   <li>{@code labels}: free-form labels (zone, region, capacity) advertised in ZooKeeper
 *   <li>{@code syncWrites}: fsync the write-ahead log on every write
 *   <li>{@code powerLossOnCrash}: a fault-test aid, with {@code syncWrites} only: writes that skip
 *       the fsync stay in the process, so that {@code kill -9} loses them as a power loss would
 *   <li>{@code dropGrace}: how long a shard that moved away stays readable in place before it goes to
 *       the trash (30 s)
 *   <li>{@code trashGrace}: how long trashed copies are kept before they are purged (24 h)
 *   <li>{@code tombstoneGrace}: how long a deleted key's tombstone is kept before it is purged (24 h;
 *       versions stay unique after the purge, through the shard's version floor). At least the
 *       trash grace, so that restoring a trash entry never brings back a key deleted since
 *   <li>{@code metricsPort}: serve Prometheus text on {@code http://host:metricsPort/metrics}; -1
 *       (the default) serves none, 0 lets the OS choose
 *   <li>{@code hotKeySampling}: sample one request in 16 into each shard's hot-key sketch (on by
 *       default; off only to measure what it costs — hotspots, isolation and salting then see no keys)
 *   <li>{@code adoptCluster}: let a data directory that holds data but no cluster id join the
 *       cluster ZooKeeper names (data this node does not own goes to the trash, never deleted)
 * </ul>
 */
public final class NodeConfig {

  private String id;
  private Path dataDir;
  private String host = "127.0.0.1";
  private int port;
  private String zk;
  private Map<String, String> labels = Map.of();
  private Limits limits = Limits.DEFAULT;
  private boolean syncWrites;
  private boolean powerLossOnCrash;
  private Duration sessionTimeout = Duration.ofSeconds(10);
  private Duration dropGrace = Duration.ofSeconds(30);
  private Duration trashGrace = Duration.ofHours(24);
  private Duration tombstoneGrace = Duration.ofHours(24);
  private Duration balancerTick = Duration.ofSeconds(1);
  private Duration txnTimeout = Duration.ofSeconds(5);
  private boolean adoptCluster;
  private int metricsPort = -1;
  private boolean hotKeySampling = true;
  private Consumer<MoveProgress> moveListener = p -> {};
  private List<ServerInterceptor> interceptors = List.of();
  private RequestHooks hooks = RequestHooks.NONE;
  private io.shardwise.server.replication.ReplicationConfig replication = io.shardwise.server.replication.ReplicationConfig.DEFAULT;

  private NodeConfig() {}

  /** Defaults for everything but where to keep data and which ZooKeeper to use. */
  public static NodeConfig of(Path dataDir, String zk) {
    NodeConfig c = new NodeConfig();
    c.dataDir = Objects.requireNonNull(dataDir, "dataDir");
    c.zk = Objects.requireNonNull(zk, "zk");
    return c;
  }

  private NodeConfig copy(Consumer<NodeConfig> change) {
    NodeConfig c = new NodeConfig();
    c.id = id;
    c.dataDir = dataDir;
    c.host = host;
    c.port = port;
    c.zk = zk;
    c.labels = labels;
    c.limits = limits;
    c.syncWrites = syncWrites;
    c.powerLossOnCrash = powerLossOnCrash;
    c.sessionTimeout = sessionTimeout;
    c.dropGrace = dropGrace;
    c.trashGrace = trashGrace;
    c.tombstoneGrace = tombstoneGrace;
    c.balancerTick = balancerTick;
    c.txnTimeout = txnTimeout;
    c.adoptCluster = adoptCluster;
    c.metricsPort = metricsPort;
    c.hotKeySampling = hotKeySampling;
    c.moveListener = moveListener;
    c.interceptors = interceptors;
    c.hooks = hooks;
    c.replication = replication;
    change.accept(c);
    return c;
  }

  public NodeConfig withId(String newId) {
    return copy(c -> c.id = newId);
  }

  public NodeConfig withHost(String newHost) {
    return copy(c -> c.host = Objects.requireNonNull(newHost, "host"));
  }

  public NodeConfig withPort(int newPort) {
    if (newPort < 0 || newPort > 65_535) {
      throw new IllegalArgumentException("port must be in [0, 65535], not " + newPort);
    }
    return copy(c -> c.port = newPort);
  }

  public NodeConfig withLimits(Limits newLimits) {
    return copy(c -> c.limits = Objects.requireNonNull(newLimits, "limits"));
  }

  public NodeConfig withSyncWrites(boolean sync) {
    return copy(c -> c.syncWrites = sync);
  }

  /**
   * Writes that skip the fsync stay in the process until a synced write takes them out ({@link
   * io.shardwise.server.storage.ShardStore#open(Path, boolean, boolean)}): {@code kill -9} of the
   * node then loses them as a power loss would. For fault tests; needs {@link #withSyncWrites} (a
   * node that fsyncs nothing may lose acknowledged writes to a power loss, by design).
   */
  public NodeConfig withPowerLossOnCrash(boolean lose) {
    return copy(c -> c.powerLossOnCrash = lose);
  }

  /** The ZooKeeper session timeout: how long a node may be cut off before its registration expires. */
  public NodeConfig withSessionTimeout(Duration timeout) {
    return copy(c -> c.sessionTimeout = positive("session timeout", timeout));
  }

  /** How long a node keeps a shard that moved away in place (not served) before it goes to the trash. */
  public NodeConfig withDropGrace(Duration newGrace) {
    return copy(c -> c.dropGrace = notNegative("drop grace", newGrace));
  }

  /** How long trashed copies (shards moved away, foreign data, dropped tables) are kept before they are purged. */
  public NodeConfig withTrashGrace(Duration newGrace) {
    return copy(c -> c.trashGrace = notNegative("trash grace", newGrace));
  }

  /** How often the balancer (on the node that leads it) looks at the cluster. */
  public NodeConfig withBalancerTick(Duration newTick) {
    return copy(c -> c.balancerTick = positive("balancer tick", newTick));
  }

  /** Lets a data directory with data but no cluster id join the cluster ZooKeeper holds (see the class comment). */
  public NodeConfig withAdoptCluster(boolean adopt) {
    return copy(c -> c.adoptCluster = adopt);
  }

  /**
   * Called by this node, as a move's source, with every progress report, on the moving thread
   * (before the balancer hears of it): for logs and for tests that act at a given phase.
   */
  public NodeConfig withMoveListener(Consumer<MoveProgress> listener) {
    return copy(c -> c.moveListener = Objects.requireNonNull(listener, "listener"));
  }

  /** Adds a gRPC interceptor in front of every service of the node (auth, metrics, fault injection). */
  public NodeConfig withInterceptor(ServerInterceptor interceptor) {
    List<ServerInterceptor> more = new ArrayList<>(interceptors);
    more.add(Objects.requireNonNull(interceptor, "interceptor"));
    return copy(c -> c.interceptors = List.copyOf(more));
  }

  public NodeConfig withLabels(Map<String, String> newLabels) {
    return copy(c -> c.labels = Map.copyOf(newLabels));
  }

  /** Points on the request path where a test parks or fails a request (none by default). */
  public NodeConfig withHooks(RequestHooks newHooks) {
    return copy(c -> c.hooks = Objects.requireNonNull(newHooks, "hooks"));
  }

  private static Duration positive(String what, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, not " + d);
    }
    return d;
  }

  private static Duration notNegative(String what, Duration d) {
    if (d == null || d.isNegative()) {
      throw new IllegalArgumentException(what + " must not be negative, not " + d);
    }
    return d;
  }

  public String id() {
    return id;
  }

  public Path dataDir() {
    return dataDir;
  }

  public String host() {
    return host;
  }

  public int port() {
    return port;
  }

  public String zk() {
    return zk;
  }

  public Map<String, String> labels() {
    return labels;
  }

  public Limits limits() {
    return limits;
  }

  public boolean syncWrites() {
    return syncWrites;
  }

  /**
   * True if a write here costs no fsync ({@code syncWrites} off), so that the hot data calls and
   * both ends of replication (a follower's appends, a leader's answers) run on the network thread
   * that read them: nothing there waits for a disk. The one rule both the node's call executors
   * and its replication transport follow.
   */
  public boolean writesOnNetworkThreads() {
    return !syncWrites;
  }

  public boolean powerLossOnCrash() {
    return powerLossOnCrash;
  }

  public Duration sessionTimeout() {
    return sessionTimeout;
  }

  public Duration dropGrace() {
    return dropGrace;
  }

  public NodeConfig withTombstoneGrace(Duration newGrace) {
    return copy(c -> c.tombstoneGrace = notNegative("tombstone grace", newGrace));
  }

  public Duration tombstoneGrace() {
    return tombstoneGrace;
  }

  public Duration trashGrace() {
    return trashGrace;
  }

  public Duration balancerTick() {
    return balancerTick;
  }

  public boolean adoptCluster() {
    return adoptCluster;
  }

  /** Serve Prometheus text on this port of the node's host (0: one the OS chooses; -1: none). */
  public NodeConfig withMetricsPort(int newPort) {
    if (newPort < -1 || newPort > 65_535) {
      throw new IllegalArgumentException("metrics port must be in [0, 65535] (or -1 for none), not " + newPort);
    }
    return copy(c -> c.metricsPort = newPort);
  }

  /** The Prometheus port; -1: none. */
  public int metricsPort() {
    return metricsPort;
  }

  /** Whether requests are sampled into each shard's hot-key sketch (see the class comment). */
  public NodeConfig withHotKeySampling(boolean on) {
    return copy(c -> c.hotKeySampling = on);
  }

  public boolean hotKeySampling() {
    return hotKeySampling;
  }

  public Consumer<MoveProgress> moveListener() {
    return moveListener;
  }

  public List<ServerInterceptor> interceptors() {
    return interceptors;
  }

  public RequestHooks hooks() {
    return hooks;
  }

  /** The replication protocol's settings (lag max, heartbeat, write timeout); validated by {@link io.shardwise.server.replication.ReplicationConfig}. */
  public NodeConfig withReplication(io.shardwise.server.replication.ReplicationConfig newReplication) {
    return copy(c -> c.replication = Objects.requireNonNull(newReplication, "replication"));
  }

  public io.shardwise.server.replication.ReplicationConfig replication() {
    return replication;
  }

  /**
   * How long a transaction coordinated here may stay undecided: past it, whoever meets one of its
   * intents may abort it (so a dead coordinator holds its keys about this long at most).
   */
  public NodeConfig withTxnTimeout(Duration timeout) {
    return copy(c -> c.txnTimeout = positive("transaction timeout", timeout));
  }

  public Duration txnTimeout() {
    return txnTimeout;
  }

  /** The effective settings, one line, for the node's start log. */
  @Override
  public String toString() {
    return "id=" + (id == null ? "(from data dir)" : id) + " data-dir=" + dataDir + " listen=" + host + ":" + port + " zk=" + zk
        + " labels=" + labels + " sync-writes=" + syncWrites + (powerLossOnCrash ? " power-loss-on-crash=true" : "") + " session-timeout=" + sessionTimeout + " drop-grace=" + dropGrace
        + " trash-grace=" + trashGrace + " tombstone-grace=" + tombstoneGrace + " balancer-tick=" + balancerTick + " txn-timeout=" + txnTimeout + " adopt-cluster=" + adoptCluster
        + " metrics-port=" + (metricsPort < 0 ? "none" : Integer.toString(metricsPort)) + " hot-key-sampling=" + (hotKeySampling ? "on" : "off")
        + " replication.lag-max=" + replication.lagMax()
        + " replication.heartbeat=" + replication.heartbeat() + " replication.write-timeout=" + replication.writeTimeout()
        + " replication.log-retain-entries=" + replication.logRetainEntries() + " replication.snapshot-bytes-per-second="
        + replication.snapshotBytesPerSecond() + " replication.read-lease=" + (replication.readLease().isZero() ? "off" : replication.readLease())
        + " " + limits;
  }
}
