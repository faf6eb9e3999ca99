package io.shardwise.server.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.WriteOptions;

/**
 * Copies of shards this node does not serve any more — moved away, found at start without an
 * owner here, or of a dropped table — kept on disk, never served, until a grace period ends or an
 * operator purges them (design rule 6: nothing is deleted on the word of a map alone).
 *
 * <p>The trash is a column family of the node's RocksDB: a shard enters it as one SST file written
 * from a snapshot of its range (keys prefixed with the entry id) and ingested whole, then its range
 * is deleted from the data; so trashing costs one sequential write and rewrites no live data.
 *
 * <pre>
 *   [0: 8 bytes][id: 8 bytes]          the entry: shard, when, why, keys and bytes
 *   [id: 8 bytes][original stored key] a stored value as it was (version and tombstone flag too)
 * </pre>
 *
 * <p>Trashing and ingesting a shard are serialised on this object, so a copy arriving by a move is
 * never trashed by a clean-up that decided a moment earlier. Thread-safe.
 */
public final class ShardTrash {

  static final byte[] COLUMN_FAMILY = "trash".getBytes(StandardCharsets.UTF_8);
  private static final int ID_BYTES = 8;

  /** Why a copy is in the trash. */
  public enum Kind {
    /** The shard moved to another node. */
    MOVED_AWAY,
    /** Found at start, the map giving it to another node. */
    FOREIGN_AT_START,
    /** Its table was dropped: {@code table undrop} brings it back. */
    TABLE_DROPPED,
    /** A move brought in a newer copy of the shard. */
    REPLACED,
    /** Trashed by a build that did not record why. */
    UNKNOWN
  }

  /** One trashed copy of a shard. */
  public record Entry(long id, ShardRef shard, Kind kind, long trashedAtMillis, long entries, long liveKeys, long bytes, String reason) {}

  private final ShardStore store;
  private final RocksDB db;
  private final ColumnFamilyHandle column;
  private final Options sstOptions;
  private final WriteOptions writeOptions;
  private long nextId;

  ShardTrash(ShardStore store, RocksDB db, ColumnFamilyHandle column, Options sstOptions, WriteOptions writeOptions) {
    this.store = store;
    this.db = db;
    this.column = column;
    this.sstOptions = sstOptions;
    this.writeOptions = writeOptions;
    this.nextId = entries().stream().mapToLong(Entry::id).max().orElse(0) + 1;
  }

  /**
   * Moves everything the store holds of {@code shard} into the trash, if {@code stillUnowned} is
   * true when the move starts (it is checked under this object's lock, so an arriving copy that
   * registered first is never trashed).
   *
   * @return the new entry, or empty if the shard held nothing or {@code stillUnowned} said no
   */
  public synchronized Optional<Entry> put(ShardRef shard, Kind kind, String reason, BooleanSupplier stillUnowned) {
    store.enter();
    try {
      // The decision and the drop also under the store's monitor, which a move into this node holds
      // to begin receiving a shard (MoveDestination.begin): no move can begin between "not receiving"
      // and the range deletion, so no snapshot that arrives meanwhile is deleted with the stale copy.
      synchronized (store) {
        if (!stillUnowned.getAsBoolean()) {
          return Optional.empty();
        }
        long id = nextId;
        Path file = store.directory().resolveSibling("trash-" + id + ".sst");
        try {
          ShardEngine.ExportStats exported = store.export(shard, file, longBytes(id), sstOptions);
          if (exported.entries() == 0) {
            return Optional.empty();
          }
          Entry entry = new Entry(id, shard, kind, System.currentTimeMillis(), exported.entries(), exported.liveKeys(), exported.bytes(),
              reason);
          nextId++;
          // The entry first: a crash after it and before the data leaves an empty entry, never data without one.
          db.put(column, writeOptions, metaKey(id), encode(entry));
          try (IngestExternalFileOptions ingest = new IngestExternalFileOptions().setMoveFiles(true)) {
            db.ingestExternalFile(column, List.of(file.toString()), ingest);
          }
          store.drop(shard);
          return Optional.of(entry);
        } catch (RocksDBException e) {
          throw new StorageException("moving shard " + shard + " to the trash failed: " + e.getMessage(), e);
        } finally {
          try {
            Files.deleteIfExists(file);
          } catch (IOException ignored) {
            // ingestion moved it; a leftover is harmless
          }
        }
      }
    } finally {
      store.exit();
    }
  }

  /** Every entry, oldest first. */
  public List<Entry> entries() {
    store.enter();
    try (Slice bound = new Slice(metaKey(-1L));
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound);
        RocksIterator it = db.newIterator(column, read)) {
      List<Entry> out = new ArrayList<>();
      for (it.seek(new byte[ID_BYTES]); it.isValid(); it.next()) {
        out.add(decode(it.key(), it.value()));
      }
      it.status();
      return out;
    } catch (RocksDBException e) {
      throw new StorageException("reading the trash failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /** The entry {@code id}, if there is one. */
  public Optional<Entry> entry(long id) {
    return entries().stream().filter(e -> e.id() == id).findFirst();
  }

  /**
   * Calls {@code batch} with the stored values the entry kept (original store keys), in key order,
   * at most {@code maxKeys} at a time.
   */
  public void forEachBatch(long id, int maxKeys, java.util.function.Consumer<List<ShardEngine.StoredValue>> batch) {
    store.enter();
    try (Slice bound = new Slice(longBytes(id + 1));
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setFillCache(false);
        RocksIterator it = db.newIterator(column, read)) {
      List<ShardEngine.StoredValue> values = new ArrayList<>();
      for (it.seek(longBytes(id)); it.isValid(); it.next()) {
        byte[] key = it.key();
        values.add(new ShardEngine.StoredValue(java.util.Arrays.copyOfRange(key, ID_BYTES, key.length), it.value()));
        if (values.size() == maxKeys) {
          batch.accept(values);
          values = new ArrayList<>();
        }
      }
      it.status();
      if (!values.isEmpty()) {
        batch.accept(values);
      }
    } catch (RocksDBException e) {
      throw new StorageException("reading trash entry " + id + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /** Stored bytes of every entry together. */
  public long bytes() {
    return entries().stream().mapToLong(Entry::bytes).sum();
  }

  /** Removes one entry and its data; false if there is no such entry. */
  public synchronized boolean purge(long id) {
    store.enter();
    try {
      if (db.get(column, metaKey(id)) == null) {
        return false;
      }
      db.deleteRange(column, writeOptions, longBytes(id), longBytes(id + 1));
      db.delete(column, writeOptions, metaKey(id));
      return true;
    } catch (RocksDBException e) {
      throw new StorageException("purging trash entry " + id + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /** Purges every entry trashed more than {@code grace} before {@code nowMillis}; returns them. */
  public List<Entry> purgeExpired(Duration grace, long nowMillis) {
    List<Entry> purged = new ArrayList<>();
    for (Entry e : entries()) {
      if (nowMillis - e.trashedAtMillis() >= grace.toMillis() && purge(e.id())) {
        purged.add(e);
      }
    }
    return purged;
  }

  /** The stored value an entry kept for {@code storeKey} (a key of the trashed shard), or {@code null}. */
  public byte[] stored(long id, byte[] storeKey) {
    store.enter();
    try {
      return db.get(column, ShardStore.concat(longBytes(id), storeKey));
    } catch (RocksDBException e) {
      throw new StorageException("reading trash entry " + id + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  void closeOptions() {
    sstOptions.close();
  }

  private static byte[] metaKey(long id) {
    return ShardStore.concat(new byte[ID_BYTES], longBytes(id));
  }

  /**
   * Six longs (table id, shard number, when, entries, live keys, bytes), then {@code 0x02}, the
   * kind's ordinal, the shard's layout ({@link ShardRef#encode}: layout ordinal, hash name, span
   * start and end, each behind its length) and the reason in UTF-8. Entries written before layouts
   * were recorded have {@code 0x00} and the kind (their shard is a bucket), and those written before
   * kinds the reason right after the longs; a reason never starts with 0x00 or 0x02.
   */
  private static byte[] encode(Entry e) {
    byte[] reason = e.reason().getBytes(StandardCharsets.UTF_8);
    ShardRef shard = e.shard();
    byte[] hash = shard.hash() == null ? new byte[0] : shard.hash().name().getBytes(StandardCharsets.UTF_8);
    byte[] start = shard.startKey();
    byte[] end = shard.endKey();
    return ByteBuffer.allocate(6 * Long.BYTES + 3 + 3 * Integer.BYTES + hash.length + start.length + end.length + reason.length)
        .putLong(shard.tableId()).putLong(shard.shardNumber())
        .putLong(e.trashedAtMillis()).putLong(e.entries()).putLong(e.liveKeys()).putLong(e.bytes())
        .put(WITH_LAYOUT).put((byte) e.kind().ordinal()).put((byte) shard.layout().ordinal())
        .putInt(hash.length).put(hash).putInt(start.length).put(start).putInt(end.length).put(end)
        .put(reason).array();
  }

  private static final byte WITH_KIND = 0x00;
  private static final byte WITH_LAYOUT = 0x02;

  private static Entry decode(byte[] key, byte[] value) {
    long id = ByteBuffer.wrap(key, ID_BYTES, ID_BYTES).getLong();
    ByteBuffer b = ByteBuffer.wrap(value);
    long tableId = b.getLong();
    long number = b.getLong();
    ShardRef shard = new ShardRef(tableId, number);
    long at = b.getLong();
    long entries = b.getLong();
    long live = b.getLong();
    long bytes = b.getLong();
    Kind kind = Kind.UNKNOWN;
    if (b.remaining() >= 2 && (value[b.position()] == WITH_KIND || value[b.position()] == WITH_LAYOUT)) {
      boolean withLayout = b.get() == WITH_LAYOUT;
      int ordinal = b.get();
      kind = ordinal >= 0 && ordinal < Kind.values().length ? Kind.values()[ordinal] : Kind.UNKNOWN;
      if (withLayout) {
        ShardRef.Layout layout = ShardRef.Layout.values()[b.get()];
        String hash = new String(bytes(b), StandardCharsets.UTF_8);
        shard = ShardRef.decode(tableId, number, layout, hash, bytes(b), bytes(b));
      }
    }
    String reason = new String(value, b.position(), b.remaining(), StandardCharsets.UTF_8);
    return new Entry(id, shard, kind, at, entries, live, bytes, reason);
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.getInt()];
    b.get(out);
    return out;
  }

  private static byte[] longBytes(long v) {
    return ByteBuffer.allocate(Long.BYTES).putLong(v).array();
  }

}
