package io.shardwise.server.storage;

import io.shardwise.core.doc.IndexDef;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.WriteBatch;

/**
 * The entries of document tables' local secondary indexes in this store, and which indexes it
 * maintains. Entries live in a column family of their own ({@value #COLUMN_FAMILY_NAME}), ordered
 * by value:
 *
 * <pre>
 *   [table id: 8][index id: 8][value (IndexValues)][row's store key]   → empty
 * </pre>
 *
 * so one seek finds a value, and within a value the rows lie in store-key order: a shard's rows
 * are one stretch of them, whatever splits, merges and moves did. An entry is <b>derived</b> from
 * its row, here, by whoever writes the row: every write of a row's stored value (a node's own
 * write, a replica applying its leader's log, a move copying values, a restore) writes the changes
 * of the row's entries in the same RocksDB batch, computed from the value it replaces. So entries
 * are exact for every row written while the store knew the index; the rows written before are
 * indexed by a backfill ({@link ShardStore#backfillIndexes}).
 *
 * <p>Which indexes a table has is set from the map ({@link ShardStore#defineIndexes}) and kept in
 * the store's meta column family, so a store that opens maintains them before it knows the map.
 * Together with "a backfill holds each row's lock while it indexes it", this is what makes the
 * entries exact once a backfill ends: every write of a row either happens before the store knows
 * the index (and the backfill, which starts after, sees the row it left) or after (and maintains
 * the entries itself) — a definition changes only while every row lock is held.
 */
final class LocalIndexes {

  static final String COLUMN_FAMILY_NAME = "indexes";
  static final byte[] COLUMN_FAMILY = COLUMN_FAMILY_NAME.getBytes(StandardCharsets.UTF_8);
  private static final byte[] DEFS = "index-defs:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] BUILT = "index-built:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EMPTY = new byte[0];

  /**
   * The local indexes the store maintains for one table, and whether its rows' writes leave pending
   * markers (the table has an asynchronous global index).
   *
   * @param prefixLength the bytes before a key in the table's stored keys ({@link ShardRef#prefixLength})
   */
  record TableIndexes(long tableId, int prefixLength, List<IndexDef> indexes, List<List<String>> paths, boolean pending) {

    TableIndexes(long tableId, int prefixLength, List<IndexDef> indexes, boolean pending) {
      this(tableId, prefixLength, List.copyOf(indexes), indexes.stream().map(IndexDef::path).toList(), pending);
    }

    int position(long indexId) {
      for (int i = 0; i < indexes.size(); i++) {
        if (indexes.get(i).id() == indexId) {
          return i;
        }
      }
      return -1;
    }
  }

  private final RocksDB db;
  private final java.util.concurrent.atomic.AtomicLong markersWritten = new java.util.concurrent.atomic.AtomicLong();
  private final ColumnFamilyHandle column;
  private final ColumnFamilyHandle meta;
  private final org.rocksdb.WriteOptions writeOptions;
  /** Table id → its indexes; replaced whole (copy on write) under every row lock. */
  private volatile Map<Long, TableIndexes> tables;

  /** @param writeOptions the store's own (an fsync per write on a {@code --sync-writes} node), for the marks this writes */
  LocalIndexes(RocksDB db, ColumnFamilyHandle column, ColumnFamilyHandle meta, org.rocksdb.WriteOptions writeOptions) {
    this.db = db;
    this.column = column;
    this.meta = meta;
    this.writeOptions = writeOptions;
    this.tables = load();
  }

  ColumnFamilyHandle column() {
    return column;
  }

  private Map<Long, TableIndexes> load() {
    Map<Long, TableIndexes> out = new HashMap<>();
    try (Slice upper = new Slice(io.shardwise.core.doc.IndexValues.successor(DEFS));
        org.rocksdb.ReadOptions read = new org.rocksdb.ReadOptions().setIterateUpperBound(upper);
        RocksIterator it = db.newIterator(meta, read)) {
      for (it.seek(DEFS); it.isValid(); it.next()) {
        TableIndexes t = decode(it.value());
        out.put(t.tableId(), t);
      }
      it.status();
    } catch (RocksDBException e) {
      throw new StorageException("reading the index definitions failed: " + e.getMessage(), e);
    }
    return Map.copyOf(out);
  }

  /** The indexes kept for table {@code tableId}, or null. */
  TableIndexes of(long tableId) {
    return tables.get(tableId);
  }

  Map<Long, TableIndexes> all() {
    return tables;
  }

  /**
   * Sets the indexes of table {@code tableId} (none and no markers: forgets the table), in {@code
   * batch}; the caller writes the batch and then calls {@link #defined}, holding every row lock
   * throughout. Returns the ids of the indexes no longer kept, whose entries the batch also removes
   * (and the pending entries, when the table leaves no more markers: the markers left in its shards
   * are the store's own keys that nothing reads; if the table gets an asynchronous index again, a
   * row's next write extends its old marker, which the reconcile then clears).
   */
  List<Long> define(WriteBatch batch, long tableId, int prefixLength, List<IndexDef> indexes, boolean pending) throws RocksDBException {
    TableIndexes before = tables.get(tableId);
    List<Long> dropped = new ArrayList<>();
    if (before != null) {
      for (IndexDef old : before.indexes()) {
        if (indexes.stream().noneMatch(i -> i.id() == old.id())) {
          dropped.add(old.id());
          batch.deleteRange(column, prefix(tableId, old.id()), io.shardwise.core.doc.IndexValues.successor(prefix(tableId, old.id())));
          batch.delete(meta, builtKey(tableId, old.id()));
        }
      }
    }
    if (before != null && before.pending() && !pending) {
      batch.deleteRange(column, prefix(tableId, PENDING), io.shardwise.core.doc.IndexValues.successor(prefix(tableId, PENDING)));
    }
    if (indexes.isEmpty() && !pending) {
      batch.delete(meta, defsKey(tableId));
    } else {
      batch.put(meta, defsKey(tableId), encode(new TableIndexes(tableId, prefixLength, indexes, pending)));
    }
    return dropped;
  }

  /** Makes a definition written by {@link #define} the one writes follow. */
  void defined(long tableId, int prefixLength, List<IndexDef> indexes, boolean pending) {
    Map<Long, TableIndexes> next = new HashMap<>(tables);
    if (indexes.isEmpty() && !pending) {
      next.remove(tableId);
    } else {
      next.put(tableId, new TableIndexes(tableId, prefixLength, indexes, pending));
    }
    tables = Map.copyOf(next);
  }

  /** Whether a backfill of index {@code indexId} of table {@code tableId} has ended in this store. */
  boolean built(long tableId, long indexId) {
    try {
      return db.get(meta, builtKey(tableId, indexId)) != null;
    } catch (RocksDBException e) {
      throw new StorageException("read failed: " + e.getMessage(), e);
    }
  }

  void markBuilt(long tableId, long indexId) throws RocksDBException {
    db.put(meta, writeOptions, builtKey(tableId, indexId), EMPTY);
  }

  /**
   * Adds to {@code batch} what writing {@code effects} (store keys and their new stored values, in
   * order) does to index entries: for each row of an indexed table, its old entries go and its new
   * ones come, where they differ. {@code before} reads a key's stored value as the effects find it;
   * the caller holds the keys' row locks.
   */
  void maintain(WriteBatch batch, List<ShardEngine.StoredValue> effects, Function<byte[], byte[]> before) throws RocksDBException {
    Map<Long, TableIndexes> now = tables;
    if (now.isEmpty()) {
      return;
    }
    TreeMap<byte[], byte[]> written = null; // what earlier effects of the same batch left
    for (ShardEngine.StoredValue v : effects) {
      TableIndexes t = now.get(tableIdOf(v.storeKey()));
      if (t == null) {
        continue;
      }
      if (t.pending() && ShardRef.isPendingKey(v.storeKey(), t.prefixLength())) {
        pend(batch, t.tableId(), v.storeKey(), v.stored());
        continue;
      }
      if (t.indexes().isEmpty() || !ShardRef.isRowKey(v.storeKey(), t.prefixLength())) {
        continue;
      }
      if (written == null) {
        written = new TreeMap<>(Arrays::compareUnsigned);
      }
      byte[] old = written.containsKey(v.storeKey()) ? written.get(v.storeKey()) : before.apply(v.storeKey());
      written.put(v.storeKey(), v.stored());
      byte[][] was = ShardStore.indexValuesOf(t, old);
      byte[][] will = ShardStore.indexValuesOf(t, v.stored());
      for (int i = 0; i < was.length; i++) {
        if (Arrays.equals(was[i], will[i])) {
          continue;
        }
        long indexId = t.indexes().get(i).id();
        if (was[i] != null) {
          batch.delete(column, entryKey(t.tableId(), indexId, was[i], v.storeKey()));
        }
        if (will[i] != null) {
          batch.put(column, entryKey(t.tableId(), indexId, will[i], v.storeKey()), EMPTY);
        }
      }
    }
  }

  /** Puts into {@code batch} the entries of the row at {@code storeKey} stored as {@code raw}, for the indexes at {@code positions}. */
  void index(WriteBatch batch, TableIndexes t, int[] positions, byte[] storeKey, byte[] raw) throws RocksDBException {
    byte[][] values = ShardStore.indexValuesOf(t, raw);
    for (int p : positions) {
      if (values[p] != null) {
        batch.put(column, entryKey(t.tableId(), t.indexes().get(p).id(), values[p], storeKey), EMPTY);
      }
    }
  }

  /**
   * Puts (or, {@code stored} null, deletes) in {@code batch} the pending entry of the marker at
   * {@code markerKey}: {@code [table id][0: no index's id][marker's store key] → the marker as
   * stored}. So a shard's markers are one stretch of entries ({@link #pendingPrefix}), found by one
   * seek — the shard's leader drains them — on every replica and after every move, as entries are.
   */
  void pend(WriteBatch batch, long tableId, byte[] markerKey, byte[] stored) throws RocksDBException {
    byte[] key = entryKey(tableId, PENDING, EMPTY, markerKey);
    if (stored == null) {
      batch.delete(column, key);
    } else {
      batch.put(column, key, stored);
      markersWritten.incrementAndGet();
    }
  }

  /** Pending markers written so far (a hint for the drainer: markers may have come since it last looked). */
  long markersWritten() {
    return markersWritten.get();
  }

  /** Deletes in {@code batch} every entry of the row at {@code storeKey} stored as {@code raw} (its table's indexes as kept now). */
  void unindex(WriteBatch batch, byte[] storeKey, byte[] raw) throws RocksDBException {
    TableIndexes t = tables.get(tableIdOf(storeKey));
    if (t == null) {
      return;
    }
    if (t.pending() && ShardRef.isPendingKey(storeKey, t.prefixLength())) {
      pend(batch, t.tableId(), storeKey, null);
      return;
    }
    if (!ShardRef.isRowKey(storeKey, t.prefixLength())) {
      return;
    }
    byte[][] values = ShardStore.indexValuesOf(t, raw);
    for (int i = 0; i < values.length; i++) {
      if (values[i] != null) {
        batch.delete(column, entryKey(t.tableId(), t.indexes().get(i).id(), values[i], storeKey));
      }
    }
  }

  /** The index id under which a table's pending entries lie: no index has it (ids are map epochs, from 1). */
  static final long PENDING = 0;

  /** {@code [table id][0]}: every pending entry of a table starts so; then the marker's store key. */
  static byte[] pendingPrefix(long tableId) {
    return prefix(tableId, PENDING);
  }

  /** {@code [table id][index id]}: every entry of one index starts so. */
  static byte[] prefix(long tableId, long indexId) {
    return ByteBuffer.allocate(16).putLong(tableId).putLong(indexId).array();
  }

  static byte[] entryKey(long tableId, long indexId, byte[] value, byte[] storeKey) {
    return ByteBuffer.allocate(16 + value.length + storeKey.length).putLong(tableId).putLong(indexId).put(value).put(storeKey).array();
  }

  static long tableIdOf(byte[] storeKey) {
    return storeKey.length < 8 ? -1 : ByteBuffer.wrap(storeKey, 0, 8).getLong();
  }

  private static byte[] defsKey(long tableId) {
    return ByteBuffer.allocate(DEFS.length + 8).put(DEFS).putLong(tableId).array();
  }

  private static byte[] builtKey(long tableId, long indexId) {
    return ByteBuffer.allocate(BUILT.length + 16).put(BUILT).putLong(tableId).putLong(indexId).array();
  }

  /** table id, prefix length, count, then per index: id, scope, state, path length, names (length, UTF-8); then 1 if pending. */
  private static byte[] encode(TableIndexes t) {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
    try {
      out.writeLong(t.tableId());
      out.writeInt(t.prefixLength());
      out.writeInt(t.indexes().size());
      for (IndexDef i : t.indexes()) {
        out.writeLong(i.id());
        out.writeByte(i.scope().ordinal());
        out.writeByte(i.state().ordinal());
        out.writeInt(i.path().size());
        for (String name : i.path()) {
          out.writeUTF(name);
        }
      }
      if (t.pending()) {
        out.writeByte(1); // absent in definitions written before asynchronous indexes
      }
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
    return bytes.toByteArray();
  }

  private static TableIndexes decode(byte[] raw) {
    java.io.DataInputStream in = new java.io.DataInputStream(new java.io.ByteArrayInputStream(raw));
    try {
      long tableId = in.readLong();
      int prefixLength = in.readInt();
      int n = in.readInt();
      List<IndexDef> indexes = new ArrayList<>(n);
      for (int k = 0; k < n; k++) {
        long id = in.readLong();
        IndexDef.Scope scope = IndexDef.Scope.values()[in.readByte()];
        IndexDef.State state = IndexDef.State.values()[in.readByte()];
        int names = in.readInt();
        List<String> path = new ArrayList<>(names);
        for (int j = 0; j < names; j++) {
          path.add(in.readUTF());
        }
        indexes.add(new IndexDef(id, path, scope, state));
      }
      boolean pending = in.available() > 0 && in.readByte() == 1;
      return new TableIndexes(tableId, prefixLength, indexes, pending);
    } catch (java.io.IOException e) {
      throw new StorageException("a stored index definition is damaged: " + e.getMessage(), e);
    }
  }
}
