package io.shardwise.server.coordination;

import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.proto.MapCodec;
import io.shardwise.proto.v1.MapRootProto;
import io.shardwise.proto.v1.TableMapProto;
import io.shardwise.proto.v1.TableRootProto;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shard map in ZooKeeper as a small root znode that names immutable chunks, so that a change
 * costs what it changes:
 *
 * <pre>
 *   /shardwise/map-root            MapRootProto: format, map epoch, and per table the names of its
 *                                  header chunk, layout chunks and shard chunks, in order
 *   /shardwise/map-chunks/{name}   one chunk (TableMapProto), written once and never changed;
 *                                  {name} is t{table id}-e{epoch it was written for}-{sequence}
 * </pre>
 *
 * <p><b>A change</b> writes the chunks that differ from the current map as new znodes (a move
 * rewrites one chunk of {@link MapCodec#PART_ENTRIES} shards; a table that did not change keeps
 * its chunks), then stores the new root with a compare-and-set on its version. The root is the
 * only thing a change overwrites, so the CAS alone makes the change atomic however many chunks it
 * wrote, and no request nears ZooKeeper's 1 MiB limit (a transaction would: it is one packet).
 * After the CAS the chunks the old root named and the new one does not are deleted; a writer that
 * loses the race deletes what it wrote and plans again. Deleting happens on a thread of its own,
 * never in the caller's wait.
 *
 * <p><b>A read</b> reads the root, then the chunks it names that this process has not read before
 * (chunks never change, so they are cached by name), and rebuilds only the tables whose chunks
 * changed, reusing an unchanged layout. A chunk that is gone means the root moved on meanwhile: the
 * read starts again from the new root.
 *
 * <p><b>Leftovers</b>: a writer that dies between writing chunks and its CAS leaves chunks no root
 * names; {@link #sweep} deletes unnamed chunks written for an epoch the root has reached (a writer
 * still racing writes for a later one, and its CAS will fail anyway).
 *
 * <p><b>Format 1</b>, the whole map in one znode at {@code /shardwise/map}, is migrated on first
 * contact: its map is written in chunks, the root created, and the old znode deleted. Processes of a
 * version that reads format 1 must all be stopped first: they would not see the new root.
 *
 * <p>Thread-safe.
 */
final class MapChunks {

  static final String ROOT_PATH = Coordinator.ROOT + "/map-root";
  static final String CHUNKS_PATH = Coordinator.ROOT + "/map-chunks";
  /** Where format 1 kept the whole map in one znode. */
  static final String LEGACY_PATH = Coordinator.ROOT + "/map";
  static final int FORMAT = 2;

  private static final Logger log = LoggerFactory.getLogger(MapChunks.class);
  private static final int MAX_ATTEMPTS = 50;
  private static final int SWEEP_EVERY = 64;

  /** A chunk as stored and as parsed; a shard chunk also as the shards it holds, decoded once (a chunk belongs to one table). */
  private static final class Chunk {
    final byte[] bytes;
    final TableMapProto proto;
    private volatile List<ShardAssignment> shards;

    Chunk(byte[] bytes, TableMapProto proto) {
      this.bytes = bytes;
      this.proto = proto;
    }

    List<ShardAssignment> shards(String table) {
      List<ShardAssignment> out = shards;
      if (out == null) {
        out = MapCodec.shards(table, proto.getShardsList());
        shards = out;
      }
      return out;
    }
  }

  /** A table as last rebuilt, and the chunk names it was rebuilt from. */
  private record Rebuilt(TableRootProto ref, Table table) {}

  /** Thrown inside a read when a chunk the root names is gone: the root moved on. */
  private static final class ChunkGone extends Exception {
    private static final long serialVersionUID = 1L;

    ChunkGone(String name) {
      super(name, null, false, false);
    }
  }

  private final CuratorFramework client;
  /** Deletes superseded and lost chunks, and sweeps, off the callers' path. */
  private final ExecutorService background;
  private final Map<String, Chunk> chunks = new ConcurrentHashMap<>();
  private MapRootProto lastRoot;
  private ShardMap lastMap;
  private Map<String, Rebuilt> lastTables = Map.of();
  private int updates;

  MapChunks(CuratorFramework client) {
    this.client = client;
    this.background = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "shardwise-map-cleanup");
      t.setDaemon(true);
      return t;
    });
  }

  /** Stops the clean-up thread (chunks it had not deleted yet are left to a later sweep). */
  void close() {
    background.shutdownNow();
  }

  /** The stored map and the root's znode version ({@code -1}: no map stored yet). */
  Coordinator.StoredMap read() {
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      Stat stat = new Stat();
      byte[] data = getData(ROOT_PATH, stat);
      if (data == null) {
        if (migrateLegacy()) {
          continue;
        }
        return new Coordinator.StoredMap(ShardMap.EMPTY, -1);
      }
      try {
        return new Coordinator.StoredMap(assemble(parseRoot(data)), stat.getVersion());
      } catch (ChunkGone gone) {
        // the root moved on between reading it and its chunks: read the new one
      }
    }
    throw new CoordinationException("the shard map changed under " + MAX_ATTEMPTS + " reads in a row; try again", null);
  }

  /** The map a root's bytes name (as a watch delivers them), reading the new root if it moved on. */
  ShardMap decode(byte[] rootBytes) {
    try {
      return assemble(parseRoot(rootBytes));
    } catch (ChunkGone gone) {
      return read().map();
    }
  }

  /** True if a map is stored, in either format. */
  boolean exists() {
    try {
      return client.checkExists().forPath(ROOT_PATH) != null || client.checkExists().forPath(LEGACY_PATH) != null;
    } catch (Exception e) {
      throw new CoordinationException("cannot read the shard map: " + e.getMessage(), e);
    }
  }

  /** See {@link MapStore#updateMap}. */
  ShardMap update(Function<ShardMap, Optional<ShardMapDelta>> plan) {
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      Stat stat = new Stat();
      byte[] data = getData(ROOT_PATH, stat);
      if (data == null && migrateLegacy()) {
        continue;
      }
      MapRootProto root = data == null ? MapRootProto.newBuilder().setFormat(FORMAT).build() : parseRoot(data);
      ShardMap current;
      try {
        current = data == null ? ShardMap.EMPTY : assemble(root);
      } catch (ChunkGone gone) {
        continue;
      }
      Optional<ShardMapDelta> delta = plan.apply(current);
      if (delta.isEmpty()) {
        return current;
      }
      ShardMap next = current.apply(delta.get());
      List<String> written = new ArrayList<>();
      MapRootProto nextRoot = writeChunks(root, current, next, written);
      try {
        if (data == null) {
          client.create().creatingParentsIfNeeded().forPath(ROOT_PATH, nextRoot.toByteArray());
        } else {
          client.setData().withVersion(stat.getVersion()).forPath(ROOT_PATH, nextRoot.toByteArray());
        }
      } catch (KeeperException.BadVersionException | KeeperException.NodeExistsException lostTheRace) {
        background.execute(() -> deleteChunks(written));
        continue;
      } catch (Exception e) {
        // The outcome is unknown: the chunks stay (the root may name them); a sweep removes them if not.
        throw new CoordinationException("cannot store the shard map: " + e.getMessage(), e);
      }
      // Clean-up is not the caller's wait: a cutover calls this with its shard's writes paused.
      List<String> superseded = superseded(root, nextRoot);
      boolean sweep = countUpdate() % SWEEP_EVERY == 1; // the first update of this process, then every SWEEP_EVERY
      background.execute(() -> {
        deleteChunks(superseded);
        if (sweep) {
          try {
            sweep();
          } catch (RuntimeException e) {
            log.warn("could not sweep shard map chunks (a later sweep will): {}", e.getMessage());
          }
        }
      });
      return next;
    }
    throw new CoordinationException("the shard map changed under " + MAX_ATTEMPTS + " attempts in a row; try again", null);
  }

  private synchronized int countUpdate() {
    return ++updates;
  }

  /**
   * Deletes chunks that no root names and that were written for an epoch the root has reached:
   * leftovers of writers that died between their chunks and their CAS.
   *
   * @return how many it deleted
   */
  int sweep() {
    byte[] data = getData(ROOT_PATH, new Stat());
    if (data == null) {
      return 0;
    }
    MapRootProto root = parseRoot(data);
    Set<String> named = names(root);
    List<String> leftovers = new ArrayList<>();
    try {
      for (String child : client.getChildren().forPath(CHUNKS_PATH)) {
        if (!named.contains(child) && writtenFor(child) <= root.getEpoch()) {
          leftovers.add(child);
        }
      }
    } catch (KeeperException.NoNodeException e) {
      return 0;
    } catch (Exception e) {
      throw new CoordinationException("cannot list " + CHUNKS_PATH + ": " + e.getMessage(), e);
    }
    deleteChunks(leftovers);
    if (!leftovers.isEmpty()) {
      log.info("deleted {} shard map chunks that no map names (left by a writer that stopped mid-change)", leftovers.size());
    }
    return leftovers.size();
  }

  // ------------------------------------------------------------------ reading

  private synchronized ShardMap assemble(MapRootProto root) throws ChunkGone {
    if (root.getFormat() != FORMAT) {
      throw new CoordinationException("the shard map in ZooKeeper has format " + root.getFormat() + "; this version reads format "
          + FORMAT + " (upgrade this process)", null);
    }
    if (root.equals(lastRoot)) {
      return lastMap;
    }
    List<Table> tables = new ArrayList<>();
    Map<String, Rebuilt> rebuilt = new HashMap<>();
    for (TableRootProto ref : root.getTablesList()) {
      Rebuilt before = lastTables.get(ref.getName());
      Table table;
      if (before != null && before.ref().equals(ref)) {
        table = before.table();
      } else {
        // Only what changed is decoded: a move changes one shard chunk, so the layout, the spec
        // and the shards of the other chunks are the objects the last map had.
        TableMapProto header = chunk(ref.getHeaderChunk()).proto;
        boolean sameHeader = before != null && before.ref().getHeaderChunk().equals(ref.getHeaderChunk());
        ShardLayout layout = sameHeader && before.ref().getLayoutChunksList().equals(ref.getLayoutChunksList())
            ? before.table().layout()
            : MapCodec.layout(header, protos(ref.getLayoutChunksList()));
        List<ShardAssignment> shards = new ArrayList<>(header.getShardCount());
        for (String name : ref.getShardChunksList()) {
          shards.addAll(chunk(name).shards(header.getName()));
        }
        table = ShardMap.table(header.getName(), header.getId(), sameHeader ? before.table().spec() : MapCodec.fromProto(header.getSpec()),
            layout, shards, header.getNextShardNumber(), MapCodec.replication(header), MapCodec.replicationChangedAt(header),
            MapCodec.format(header), MapCodec.indexes(header), MapCodec.indexesChangedAt(header));
      }
      tables.add(table);
      rebuilt.put(ref.getName(), new Rebuilt(ref, table));
    }
    Map<io.shardwise.core.map.NodeId, String> stores = new HashMap<>();
    root.getNodeStoresMap().forEach((node, store) -> stores.put(io.shardwise.core.map.NodeId.of(node), store));
    ShardMap map = ShardMap.restore(root.getEpoch(), tables, stores);
    if (lastMap == null || map.epoch() >= lastMap.epoch()) {
      lastRoot = root;
      lastMap = map;
      lastTables = rebuilt;
      chunks.keySet().retainAll(names(root)); // chunks never change, but unnamed ones are never read again
    }
    return map;
  }

  private List<TableMapProto> protos(List<String> names) throws ChunkGone {
    List<TableMapProto> out = new ArrayList<>(names.size());
    for (String name : names) {
      out.add(chunk(name).proto);
    }
    return out;
  }

  private Chunk chunk(String name) throws ChunkGone {
    Chunk cached = chunks.get(name);
    if (cached != null) {
      return cached;
    }
    byte[] bytes = getData(CHUNKS_PATH + "/" + name, null);
    if (bytes == null) {
      throw new ChunkGone(name);
    }
    try {
      Chunk c = new Chunk(bytes, TableMapProto.parseFrom(bytes));
      chunks.put(name, c);
      return c;
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException("shard map chunk " + name + " is not a TableMapProto: " + e.getMessage(), e);
    }
  }

  // ------------------------------------------------------------------ writing

  /**
   * Writes the chunks of {@code next} that {@code current} (stored as {@code root}) lacks; returns
   * the root naming them. A table that is the same object as before keeps its chunks; otherwise its
   * header and layout chunks are kept if its spec and layout are the same objects (a move), and a
   * shard chunk is kept if it holds the very same shard objects, or the same bytes; the rest are
   * written.
   */
  private MapRootProto writeChunks(MapRootProto root, ShardMap current, ShardMap next, List<String> written) {
    Map<String, TableRootProto> refs = new HashMap<>();
    root.getTablesList().forEach(r -> refs.put(r.getName(), r));
    MapRootProto.Builder out = MapRootProto.newBuilder().setFormat(FORMAT).setEpoch(next.epoch());
    next.stores().forEach((node, store) -> out.putNodeStores(node.value(), store));
    for (Table table : next.tables().values()) {
      TableRootProto ref = refs.get(table.name());
      Table before = current.tables().get(table.name());
      if (ref != null && before == table) {
        out.addTables(ref); // unchanged: the same chunks
        continue;
      }
      boolean sameTable = ref != null && before != null && ref.getId() == table.id() && before.id() == table.id();
      TableRootProto.Builder r = TableRootProto.newBuilder().setName(table.name()).setId(table.id());
      if (sameTable && before.spec() == table.spec() && before.layout() == table.layout() && before.nextShardNumber() == table.nextShardNumber()
          && before.replicationChangedAt() == table.replicationChangedAt() && before.indexesChangedAt() == table.indexesChangedAt()) {
        r.setHeaderChunk(ref.getHeaderChunk()).addAllLayoutChunks(ref.getLayoutChunksList());
      } else {
        r.setHeaderChunk(reuseOrWrite(sameTable ? List.of(ref.getHeaderChunk()) : List.of(), 0, MapCodec.header(table), table, next, written));
        List<TableMapProto> layout = MapCodec.layoutParts(table);
        for (int i = 0; i < layout.size(); i++) {
          r.addLayoutChunks(reuseOrWrite(sameTable ? ref.getLayoutChunksList() : List.of(), i, layout.get(i), table, next, written));
        }
      }
      List<String> oldShards = sameTable ? ref.getShardChunksList() : List.of();
      for (int part = 0; part < MapCodec.shardParts(table); part++) {
        r.addShardChunks(sameTable && part < oldShards.size() && samePart(before, table, part)
            ? oldShards.get(part)
            : reuseOrWrite(oldShards, part, MapCodec.shardPart(table, part), table, next, written));
      }
      out.addTables(r);
    }
    return out.build();
  }

  /** True if shard part {@code part} of both tables holds the very same assignment objects. */
  private static boolean samePart(Table before, Table after, int part) {
    int from = part * MapCodec.PART_ENTRIES;
    int to = Math.min(after.shards().size(), from + MapCodec.PART_ENTRIES);
    if (before.shards().size() < to) {
      return false;
    }
    for (int i = from; i < to; i++) {
      if (before.shards().get(i) != after.shards().get(i)) {
        return false;
      }
    }
    return true;
  }

  /** The name of chunk {@code index} of {@code before} if its bytes are {@code part}'s, else a new chunk's. */
  private String reuseOrWrite(List<String> before, int index, TableMapProto part, Table table, ShardMap next, List<String> written) {
    byte[] bytes = part.toByteArray();
    if (index < before.size()) {
      Chunk old = chunks.get(before.get(index));
      if (old != null && Arrays.equals(old.bytes, bytes)) {
        return before.get(index);
      }
    }
    try {
      String path = client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
          .forPath(CHUNKS_PATH + "/t" + table.id() + "-e" + next.epoch() + "-", bytes);
      String name = path.substring(path.lastIndexOf('/') + 1);
      chunks.put(name, new Chunk(bytes, part));
      written.add(name);
      return name;
    } catch (Exception e) {
      deleteChunks(written);
      throw new CoordinationException("cannot write a shard map chunk: " + e.getMessage(), e);
    }
  }

  private static List<String> superseded(MapRootProto before, MapRootProto after) {
    Set<String> kept = names(after);
    List<String> out = new ArrayList<>();
    for (String name : names(before)) {
      if (!kept.contains(name)) {
        out.add(name);
      }
    }
    return out;
  }

  private void deleteChunks(List<String> names) {
    for (String name : names) {
      try {
        client.delete().quietly().forPath(CHUNKS_PATH + "/" + name);
      } catch (Exception e) {
        log.warn("could not delete shard map chunk {} (a later sweep will): {}", name, e.getMessage());
      }
    }
  }

  // ------------------------------------------------------------------ format 1

  /** Rewrites a format-1 map as a root and chunks; true if there was one (migrated by this call or another process). */
  private boolean migrateLegacy() {
    byte[] legacy = getData(LEGACY_PATH, null);
    if (legacy == null) {
      return false;
    }
    ShardMap map = MapCodec.fromBytes(legacy);
    List<String> written = new ArrayList<>();
    MapRootProto root = writeChunks(MapRootProto.getDefaultInstance(), ShardMap.EMPTY, map, written);
    try {
      client.create().creatingParentsIfNeeded().forPath(ROOT_PATH, root.toByteArray());
      log.info("migrated the shard map (epoch {}, {} tables) from one znode at {} to {} and {} chunks", map.epoch(), map.tables().size(),
          LEGACY_PATH, ROOT_PATH, written.size());
    } catch (KeeperException.NodeExistsException anotherProcessDidIt) {
      deleteChunks(written);
    } catch (Exception e) {
      throw new CoordinationException("cannot migrate the shard map: " + e.getMessage(), e);
    }
    try {
      client.delete().quietly().forPath(LEGACY_PATH);
    } catch (Exception e) {
      throw new CoordinationException("cannot delete the migrated shard map at " + LEGACY_PATH + ": " + e.getMessage(), e);
    }
    return true;
  }

  // ------------------------------------------------------------------ helpers

  /** Every chunk {@code root} names. */
  static Set<String> names(MapRootProto root) {
    Set<String> out = new HashSet<>();
    for (TableRootProto t : root.getTablesList()) {
      out.add(t.getHeaderChunk());
      out.addAll(t.getLayoutChunksList());
      out.addAll(t.getShardChunksList());
    }
    return out;
  }

  /** The epoch a chunk was written for, from its name ({@code Long.MAX_VALUE} for a name not ours: never swept). */
  static long writtenFor(String chunkName) {
    int e = chunkName.indexOf("-e");
    int end = e < 0 ? -1 : chunkName.indexOf('-', e + 2);
    try {
      return end < 0 ? Long.MAX_VALUE : Long.parseLong(chunkName.substring(e + 2, end));
    } catch (NumberFormatException notOurs) {
      return Long.MAX_VALUE;
    }
  }

  private static MapRootProto parseRoot(byte[] data) {
    try {
      return MapRootProto.parseFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException("the shard map root at " + ROOT_PATH + " is not a MapRootProto: " + e.getMessage(), e);
    }
  }

  /** The data of {@code path}, or {@code null} if it does not exist. */
  private byte[] getData(String path, Stat stat) {
    try {
      return stat == null ? client.getData().forPath(path) : client.getData().storingStatIn(stat).forPath(path);
    } catch (KeeperException.NoNodeException e) {
      return null;
    } catch (Exception e) {
      throw new CoordinationException("cannot read " + path + ": " + e.getMessage(), e);
    }
  }
}
