package io.shardwise.server.coordination;

import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.proto.v1.NodeInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * Everything a Shardwise process keeps in ZooKeeper, through Curator:
 *
 * <pre>
 *   /shardwise/map-root       the shard map's root: its epoch and the chunks of every table;
 *                             every change is a compare-and-set on the root's version
 *   /shardwise/map-chunks/... the map's immutable chunks (see MapChunks)
 *   /shardwise/nodes/{id}     one ephemeral znode per live node (NodeInfo: address, labels)
 *   /shardwise/routers/{id}   one ephemeral znode per live router (NodeInfo)
 *   /shardwise/cluster-id     the cluster's identity, made once (UTF-8)
 *   /shardwise/members/{id}   every node that ever joined (persistent, empty)
 *   /shardwise/balancer/...   the balancer's settings, leader election, plans and drains
 *                             (see RebalanceRecords)
 * </pre>
 *
 * <p>The map is a small root naming immutable chunks of at most 1024 shards each ({@link
 * MapChunks}): a change of any number of shards is still one atomic CAS (of the root), writes only
 * the chunks it changes, and no znode nears ZooKeeper's 1 MiB limit however many shards there are.
 *
 * <p>Thread-safe. Close it to end the session (which removes this process's ephemeral znodes).
 */
public final class Coordinator implements MapStore, AutoCloseable {

  public static final String ROOT = "/shardwise";
  public static final String NODES_PATH = ROOT + "/nodes";
  public static final String ROUTERS_PATH = ROOT + "/routers";
  public static final String CLUSTER_ID_PATH = ROOT + "/cluster-id";
  public static final String MEMBERS_PATH = ROOT + "/members";
  /** The last table dropped under each name, as it was, for {@code table undrop}. */
  public static final String DROPPED_PATH = ROOT + "/dropped";

  private static final int MAX_CAS_ATTEMPTS = 50;

  private final CuratorFramework client;
  private final CuratorCache nodesCache;
  private final CuratorCache routersCache;
  private final MapChunks map;
  private CuratorCache mapCache;
  private PersistentNode registration;

  private Coordinator(CuratorFramework client) {
    this.client = client;
    this.map = new MapChunks(client);
    this.nodesCache = CuratorCache.build(client, NODES_PATH);
    this.routersCache = CuratorCache.build(client, ROUTERS_PATH);
  }

  /**
   * Connects to {@code connectString} and waits up to {@code timeout} for the session.
   *
   * @throws CoordinationException naming the address when ZooKeeper cannot be reached
   */
  public static Coordinator connect(String connectString, Duration sessionTimeout, Duration timeout) {
    CuratorFramework client =
        CuratorFrameworkFactory.builder()
            .connectString(connectString)
            .sessionTimeoutMs((int) sessionTimeout.toMillis())
            .connectionTimeoutMs((int) Math.min(timeout.toMillis(), sessionTimeout.toMillis()))
            .retryPolicy(new ExponentialBackoffRetry(100, 10, 2_000))
            .build();
    client.start();
    try {
      if (!client.blockUntilConnected((int) timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        client.close();
        throw new CoordinationException("cannot reach ZooKeeper at " + connectString + " within " + timeout.toSeconds() + " s");
      }
      Coordinator c = new Coordinator(client);
      c.nodesCache.start();
      c.routersCache.start();
      return c;
    } catch (InterruptedException e) {
      client.close();
      Thread.currentThread().interrupt();
      throw new CoordinationException("interrupted while connecting to ZooKeeper at " + connectString, e);
    }
  }

  /** The stored map and the root's znode version it was read at ({@code -1}: no map stored yet). */
  public record StoredMap(ShardMap map, int version) {}

  public StoredMap readMap() {
    return map.read();
  }

  /** The cluster id stored in ZooKeeper, or empty if this ZooKeeper holds no cluster yet. */
  public Optional<String> clusterId() {
    return read(CLUSTER_ID_PATH).map(r -> new String(r.data(), java.nio.charset.StandardCharsets.UTF_8));
  }

  /** Stores {@code proposed} as the cluster id unless one exists; returns the id stored now. */
  public String createClusterIdIfAbsent(String proposed) {
    byte[] stored = update(CLUSTER_ID_PATH, current -> current == null ? proposed.getBytes(java.nio.charset.StandardCharsets.UTF_8) : null);
    return new String(stored, java.nio.charset.StandardCharsets.UTF_8);
  }

  /** True if a node with this id has joined this cluster before. */
  public boolean isMember(NodeId node) {
    return read(MEMBERS_PATH + "/" + node.value()).isPresent();
  }

  /** Records that {@code node} has joined (idempotent). */
  public void addMember(NodeId node) {
    ensure(MEMBERS_PATH + "/" + node.value());
  }

  /** True if a shard map has ever been stored here. */
  public boolean hasMap() {
    return map.exists();
  }

  /**
   * Reads the map after a ZooKeeper {@code sync}, so the answer is at least as new as every
   * change any client had stored when this was called: for deciding an outcome (did my cutover
   * happen?), never for the request path.
   */
  public StoredMap readMapSynced() {
    try {
      client.sync().forPath(MapChunks.ROOT_PATH);
    } catch (Exception e) {
      throw new CoordinationException("cannot sync with ZooKeeper: " + e.getMessage(), e);
    }
    return readMap();
  }

  @Override
  public ShardMap syncedMap() {
    return readMapSynced().map();
  }

  /**
   * Changes the map: reads it, asks {@code plan} for a delta (empty: nothing to do), applies it,
   * and stores the result with a compare-and-set on the znode version. A writer that loses the
   * race re-reads and plans again, so {@code plan} may run more than once and must not have side
   * effects.
   *
   * @return the stored map after the change (or the current map if {@code plan} had nothing)
   * @throws IllegalArgumentException if the plan does not fit the map (from {@link ShardMap#apply})
   */
  @Override
  public ShardMap updateMap(Function<ShardMap, Optional<ShardMapDelta>> plan) {
    return map.update(plan);
  }

  /** Deletes map chunks left by a writer that stopped between writing them and its CAS; returns how many. */
  public int sweepMapChunks() {
    return map.sweep();
  }

  /**
   * Calls {@code listener} with the current map, then with every new map, in the order they were
   * stored. Maps with an epoch not above the last one passed are skipped. A change reads only the
   * chunks it wrote.
   */
  public synchronized void watchMap(Consumer<ShardMap> listener) {
    if (mapCache != null) {
      throw new IllegalStateException("the map is already watched");
    }
    MapSequencer sequencer = new MapSequencer(listener);
    sequencer.offer(readMap().map()); // migrates a format-1 map before the watch starts
    mapCache = CuratorCache.build(client, MapChunks.ROOT_PATH, CuratorCache.Options.SINGLE_NODE_CACHE);
    mapCache.listenable().addListener(
        CuratorCacheListener.builder().forCreatesAndChanges((before, after) -> sequencer.offer(map.decode(after.getData()))).build());
    mapCache.start();
  }

  /** Passes maps on in strictly rising epoch order. */
  private static final class MapSequencer {
    private final Consumer<ShardMap> listener;
    private long last = -1;

    MapSequencer(Consumer<ShardMap> listener) {
      this.listener = listener;
    }

    synchronized void offer(ShardMap map) {
      if (map.epoch() > last) {
        last = map.epoch();
        listener.accept(map);
      }
    }
  }

  /** True while the client is connected to a ZooKeeper server. */
  public boolean isConnected() {
    return client.getZookeeperClient().isConnected();
  }

  /** Calls {@code listener} on every change of the ZooKeeper connection state. */
  public void watchConnection(Consumer<ConnectionState> listener) {
    client.getConnectionStateListenable().addListener((c, state) -> listener.accept(state));
  }

  /**
   * Registers this process under {@code /shardwise/nodes/{id}} (or routers) as an ephemeral znode
   * that Curator re-creates after a session expires, and waits until it exists.
   *
   * <p>A znode of this id that belongs to another session may be the ghost of this very process
   * killed a moment ago (its session lives on until ZooKeeper expires it): registration waits up
   * to {@code ghostWait} for it to go before refusing.
   *
   * @throws CoordinationException if another live process keeps this id registered
   */
  public synchronized void register(boolean router, NodeInfo info, Duration timeout, Duration ghostWait) {
    String path = (router ? ROUTERS_PATH : NODES_PATH) + "/" + info.getId();
    try {
      long deadline = System.nanoTime() + ghostWait.toNanos();
      Stat existing;
      while ((existing = client.checkExists().forPath(path)) != null
          && existing.getEphemeralOwner() != client.getZookeeperClient().getZooKeeper().getSessionId()) {
        if (System.nanoTime() >= deadline) {
          throw new CoordinationException("a live " + (router ? "router" : "node") + " already uses the id " + info.getId()
              + " (its registration outlived " + ghostWait.toSeconds() + " s)");
        }
        java.util.concurrent.CountDownLatch gone = new java.util.concurrent.CountDownLatch(1);
        if (client.checkExists().usingWatcher((org.apache.zookeeper.Watcher) e -> gone.countDown()).forPath(path) != null) {
          gone.await(Math.max(1, Math.min(500, (deadline - System.nanoTime()) / 1_000_000)), TimeUnit.MILLISECONDS);
        }
      }
      registration = new PersistentNode(client, CreateMode.EPHEMERAL, false, path, info.toByteArray());
      registration.start();
      if (!registration.waitForInitialCreate(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new CoordinationException("could not register " + path + " within " + timeout.toSeconds() + " s");
      }
    } catch (CoordinationException e) {
      throw e;
    } catch (Exception e) {
      throw new CoordinationException("cannot register " + path + ": " + e.getMessage(), e);
    }
  }

  /** Calls {@code listener} whenever a node registers, changes or goes (on Curator's event thread; keep it short). */
  public void onLiveNodesChange(Runnable listener) {
    nodesCache.listenable().addListener(CuratorCacheListener.builder().forAll((type, before, after) -> listener.run()).build());
  }

  /** Live nodes by id, from a cache kept current by ZooKeeper watches. */
  public Map<NodeId, NodeInfo> liveNodes() {
    return live(nodesCache, NODES_PATH);
  }

  /** Live routers by id. */
  public Map<NodeId, NodeInfo> liveRouters() {
    return live(routersCache, ROUTERS_PATH);
  }

  /** Live nodes read directly from ZooKeeper (not the cache): for decisions right after a start. */
  public Map<NodeId, NodeInfo> liveNodesNow() {
    return liveNow(NODES_PATH);
  }

  /** Live routers read directly from ZooKeeper. */
  public Map<NodeId, NodeInfo> liveRoutersNow() {
    return liveNow(ROUTERS_PATH);
  }

  private Map<NodeId, NodeInfo> liveNow(String parent) {
    Map<NodeId, NodeInfo> out = new TreeMap<>();
    try {
      if (client.checkExists().forPath(parent) == null) {
        return out;
      }
      for (String child : client.getChildren().forPath(parent)) {
        try {
          out.put(NodeId.of(child), NodeInfo.parseFrom(client.getData().forPath(parent + "/" + child)));
        } catch (KeeperException.NoNodeException gone) {
          // left between the listing and the read
        }
      }
      return out;
    } catch (Exception e) {
      throw new CoordinationException("cannot list " + parent + ": " + e.getMessage(), e);
    }
  }

  private static Map<NodeId, NodeInfo> live(CuratorCache cache, String parent) {
    Map<NodeId, NodeInfo> out = new TreeMap<>();
    cache.stream()
        .filter(d -> d.getPath().startsWith(parent + "/"))
        .forEach(d -> parse(d).ifPresent(info -> out.put(NodeId.of(info.getId()), info)));
    return out;
  }

  private static Optional<NodeInfo> parse(ChildData data) {
    try {
      return Optional.of(NodeInfo.parseFrom(data.getData()));
    } catch (InvalidProtocolBufferException e) {
      return Optional.empty();
    }
  }

  // ------------------------------------------------------------------ small records

  /** A znode's data and version. */
  public record Record(byte[] data, int version) {}

  /** The data of {@code path}, or empty if it does not exist. */
  public Optional<Record> read(String path) {
    try {
      Stat stat = new Stat();
      byte[] data = client.getData().storingStatIn(stat).forPath(path);
      return Optional.of(new Record(data, stat.getVersion()));
    } catch (KeeperException.NoNodeException e) {
      return Optional.empty();
    } catch (Exception e) {
      throw new CoordinationException("cannot read " + path + ": " + e.getMessage(), e);
    }
  }

  /**
   * Changes {@code path} with a compare-and-set: {@code change} gets the current data ({@code
   * null} if absent) and returns the new data, or {@code null} to leave it as it is; a lost race
   * re-reads and asks again, so {@code change} must not have side effects. Returns the data stored
   * now.
   */
  public byte[] update(String path, UnaryOperator<byte[]> change) {
    for (int attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
      Optional<Record> current = read(path);
      byte[] next = change.apply(current.map(Record::data).orElse(null));
      if (next == null) {
        return current.map(Record::data).orElse(null);
      }
      try {
        if (current.isEmpty()) {
          client.create().creatingParentsIfNeeded().forPath(path, next);
        } else {
          client.setData().withVersion(current.get().version()).forPath(path, next);
        }
        return next;
      } catch (KeeperException.BadVersionException | KeeperException.NodeExistsException lostTheRace) {
        // re-read and change again
      } catch (Exception e) {
        throw new CoordinationException("cannot write " + path + ": " + e.getMessage(), e);
      }
    }
    throw new CoordinationException(path + " changed under " + MAX_CAS_ATTEMPTS + " attempts in a row; try again");
  }

  // ------------------------------------------------------------------ records of any size

  /** A record this large or smaller is one znode; a larger one is split into parts of this size. */
  static final int RECORD_PART_BYTES = 512 * 1024;
  private static final byte[] PARTS_MAGIC = "SWPARTS1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  /**
   * Stores {@code data} at {@code path}, however large (a dropped table of 100,000 shards is 2 MB;
   * a znode holds 1 MiB). Up to {@link #RECORD_PART_BYTES} it is the znode's data, as {@link #update}
   * would store it; above, it goes to sibling znodes {@code path.part-{nonce}-{i}} first and
   * {@code path} then names them, so a reader sees the old record or the new one whole. Parts of
   * the record it replaces are deleted.
   */
  public void writeRecord(String path, byte[] data) {
    byte[] stored = data;
    List<String> parts = new ArrayList<>();
    if (data.length > RECORD_PART_BYTES) {
      String nonce = Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
      for (int from = 0, i = 0; from < data.length; from += RECORD_PART_BYTES, i++) {
        String part = path + ".part-" + nonce + "-" + i;
        try {
          client.create().creatingParentsIfNeeded().forPath(part, java.util.Arrays.copyOfRange(data, from, Math.min(data.length, from + RECORD_PART_BYTES)));
        } catch (Exception e) {
          parts.forEach(this::delete);
          throw new CoordinationException("cannot write " + part + ": " + e.getMessage(), e);
        }
        parts.add(part);
      }
      java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(PARTS_MAGIC.length + 4 + nonce.length());
      header.put(PARTS_MAGIC).putInt(parts.size()).put(nonce.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      stored = header.array();
    }
    byte[] headerNow = stored;
    byte[][] replaced = new byte[1][];
    update(path, old -> {
      replaced[0] = old;
      return headerNow;
    });
    partsOf(path, replaced[0]).forEach(this::delete);
  }

  /** The record at {@code path} ({@link #writeRecord}), or empty if there is none. */
  public Optional<byte[]> readRecord(String path) {
    Optional<Record> head = read(path);
    if (head.isEmpty()) {
      return Optional.empty();
    }
    List<String> parts = partsOf(path, head.get().data());
    if (parts.isEmpty()) {
      return Optional.of(head.get().data());
    }
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (String part : parts) {
      byte[] bytes = read(part).orElseThrow(() -> new CoordinationException("record " + path + " lost its part " + part)).data();
      out.write(bytes, 0, bytes.length);
    }
    return Optional.of(out.toByteArray());
  }

  /** Deletes the record at {@code path} and its parts. */
  public void deleteRecord(String path) {
    Optional<Record> head = read(path);
    delete(path);
    head.ifPresent(h -> partsOf(path, h.data()).forEach(this::delete));
  }

  /** The part znodes a stored record's data names (none for a record stored whole). */
  private static List<String> partsOf(String path, byte[] stored) {
    if (stored == null || stored.length < PARTS_MAGIC.length + 4
        || !java.util.Arrays.equals(stored, 0, PARTS_MAGIC.length, PARTS_MAGIC, 0, PARTS_MAGIC.length)) {
      return List.of();
    }
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(stored, PARTS_MAGIC.length, stored.length - PARTS_MAGIC.length);
    int count = b.getInt();
    String nonce = new String(stored, PARTS_MAGIC.length + 4, stored.length - PARTS_MAGIC.length - 4, java.nio.charset.StandardCharsets.US_ASCII);
    List<String> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(path + ".part-" + nonce + "-" + i);
    }
    return out;
  }

  /** Creates {@code prefix + sequence number} with {@code data}; returns the new znode's name. */
  public String createSequential(String prefix, byte[] data) {
    try {
      String path = client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(prefix, data);
      return path.substring(path.lastIndexOf('/') + 1);
    } catch (Exception e) {
      throw new CoordinationException("cannot create " + prefix + "…: " + e.getMessage(), e);
    }
  }

  /** Creates {@code path} (persistent, empty); false if it exists already (someone else created it). */
  public boolean createIfAbsent(String path) {
    try {
      client.create().creatingParentsIfNeeded().forPath(path, new byte[0]);
      return true;
    } catch (KeeperException.NodeExistsException e) {
      return false;
    } catch (Exception e) {
      throw new CoordinationException("cannot create " + path + ": " + e.getMessage(), e);
    }
  }

  /** Creates {@code path} (persistent, empty) unless it exists. */
  public void ensure(String path) {
    try {
      client.create().orSetData().creatingParentsIfNeeded().forPath(path, new byte[0]);
    } catch (Exception e) {
      throw new CoordinationException("cannot create " + path + ": " + e.getMessage(), e);
    }
  }

  /** Deletes {@code path} if it exists. */
  public void delete(String path) {
    try {
      client.delete().quietly().forPath(path);
    } catch (Exception e) {
      throw new CoordinationException("cannot delete " + path + ": " + e.getMessage(), e);
    }
  }

  /** The children of {@code path} (none if it does not exist), sorted. */
  public List<String> children(String path) {
    try {
      List<String> out = new ArrayList<>(client.getChildren().forPath(path));
      Collections.sort(out);
      return out;
    } catch (KeeperException.NoNodeException e) {
      return List.of();
    } catch (Exception e) {
      throw new CoordinationException("cannot list " + path + ": " + e.getMessage(), e);
    }
  }

  /** A leader latch on {@code path} for this process, started; close it to step down. */
  public LeaderLatch leaderLatch(String path, String id) {
    var latch = new LeaderLatch(client, path, id);
    try {
      latch.start();
    } catch (Exception e) {
      throw new CoordinationException("cannot join the election at " + path + ": " + e.getMessage(), e);
    }
    return latch;
  }

  @Override
  public synchronized void close() {
    try {
      // Unregister at once when ZooKeeper answers; when it does not, a delete would retry for
      // seconds (a node told to stop would hang), and the session's end removes the ephemeral znode.
      if (registration != null && isConnected()) {
        registration.close();
      }
    } catch (java.io.IOException e) {
      // the session ends below anyway, which removes the ephemeral znode
    }
    if (mapCache != null) {
      mapCache.close();
    }
    map.close();
    nodesCache.close();
    routersCache.close();
    client.close();
  }
}
