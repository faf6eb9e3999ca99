package io.shardwise.server.storage;

import io.shardwise.core.map.Table;
import java.nio.charset.StandardCharsets;
import java.util.function.LongFunction;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The version of a data directory's layout, kept in the store's {@code meta} column family, and
 * the migration from the one before.
 *
 * <ul>
 *   <li><b>1</b> (no version recorded): every stored key is {@code [table id][shard number][key]}.
 *   <li><b>2</b>: {@code range} and {@code hashrange} shards are laid out in placement order
 *       ({@link ShardRef}); every other strategy keeps the shard-number prefix.
 * </ul>
 *
 * <p>A directory of version 1 that holds data is migrated before the node serves: each stored
 * shard of a {@code range} or {@code hashrange} table in the map is rewritten in placement order
 * and its old range deleted, shard by shard, then the version is recorded. A crash in between
 * leaves version 1 and both copies of at most one shard, identical; the next start repeats that
 * shard. Data of tables the map does not have keeps its prefix (it goes to the trash, whose
 * entries record their layout, and a restore re-keys). A build that knows only version 1 cannot
 * open version 2 at all (it does not know the {@code meta} column family), so nothing is read in
 * a layout it does not understand. A directory with a newer version than this build knows is
 * refused.
 */
final class StoreFormat {

  /** The layout this build writes. */
  static final int CURRENT = 2;
  static final byte[] COLUMN_FAMILY = "meta".getBytes(StandardCharsets.UTF_8);
  private static final byte[] VERSION_KEY = "format".getBytes(StandardCharsets.UTF_8);
  private static final byte[] STORE_ID_KEY = "store-id".getBytes(StandardCharsets.UTF_8);
  private static final int BATCH_KEYS = 10_000;

  private final RocksDB db;
  private final ColumnFamilyHandle meta;
  private final WriteOptions syncWrite;

  StoreFormat(RocksDB db, ColumnFamilyHandle meta) {
    this.db = db;
    this.meta = meta;
    this.syncWrite = new WriteOptions().setSync(true);
  }

  /** The recorded version; for none, 1 if the store holds data and otherwise the current one (recorded now). */
  int version(boolean storeEmpty) {
    try {
      byte[] v = db.get(meta, VERSION_KEY);
      if (v != null) {
        int version = Integer.parseInt(new String(v, StandardCharsets.UTF_8));
        if (version > CURRENT) {
          throw new StorageException("the data directory has layout version " + version + "; this build reads up to " + CURRENT
              + ": run the build that wrote it", null);
        }
        return version;
      }
      if (storeEmpty) {
        record(CURRENT);
        return CURRENT;
      }
      return 1;
    } catch (RocksDBException e) {
      throw new StorageException("reading the data directory's layout version failed: " + e.getMessage(), e);
    }
  }

  /**
   * The store's id ({@link ShardStore#storeId}), made and recorded the first time the store is
   * opened by a build that knows store ids: random, so a directory that was wiped, or replaced by
   * another disk, has another id than the one ZooKeeper remembers for the node.
   *
   * @param storeEmpty whether the store holds no data now (an id made for a store that does was
   *     written by an older build: {@link ShardStore.Identity#adopted})
   */
  ShardStore.Identity identity(boolean storeEmpty) {
    try {
      byte[] v = db.get(meta, STORE_ID_KEY);
      if (v != null) {
        return new ShardStore.Identity(new String(v, StandardCharsets.UTF_8), false, false);
      }
      String id = java.util.UUID.randomUUID().toString();
      db.put(meta, syncWrite, STORE_ID_KEY, id.getBytes(StandardCharsets.UTF_8));
      return new ShardStore.Identity(id, true, !storeEmpty);
    } catch (RocksDBException e) {
      throw new StorageException("reading the data directory's store id failed: " + e.getMessage(), e);
    }
  }

  private void record(int version) throws RocksDBException {
    db.put(meta, syncWrite, VERSION_KEY, Integer.toString(version).getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Rewrites version-1 shards of the ordered tables that {@code tables} knows (by id) in placement
   * order, then records the current version. Call it before anything reads or writes the data.
   */
  ShardStore.Migration migrate(ShardStore store, LongFunction<Table> tables) {
    try {
      int shards = 0;
      long keys = 0;
      for (ShardRef old : store.storedShards(id -> null)) {
        if (old.layout() != ShardRef.Layout.BUCKET) {
          continue; // already in placement order: a migration that crashed after this shard
        }
        Table table = tables.apply(old.tableId());
        if (table == null || table.positionOf(old.shardNumber()) < 0) {
          continue;
        }
        ShardRef target = ShardRef.of(table, old.shardNumber());
        if (target.layout() == ShardRef.Layout.BUCKET) {
          continue;
        }
        keys += copy(old, target);
        db.deleteRange(syncWrite, old.startKey(), old.endKey());
        shards++;
      }
      record(CURRENT);
      return new ShardStore.Migration(1, shards, keys);
    } catch (RocksDBException e) {
      throw new StorageException("migrating the data directory to layout version " + CURRENT + " failed: " + e.getMessage(), e);
    }
  }

  /** Writes every stored key of {@code from} re-keyed into {@code to}, a batch at a time; returns how many. */
  private long copy(ShardRef from, ShardRef to) throws RocksDBException {
    long copied = 0;
    try (Slice bound = new Slice(from.endKey());
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      WriteBatch batch = new WriteBatch();
      try {
        for (it.seek(from.startKey()); it.isValid(); it.next()) {
          byte[] key = to.rekey(from, it.key());
          if (key != null) { // a bucket shard's write-id records name no key: they are not carried over
            batch.put(key, it.value());
            copied++;
          }
          if (batch.count() == BATCH_KEYS) {
            db.write(syncWrite, batch);
            batch.close();
            batch = new WriteBatch();
          }
        }
        it.status();
        if (batch.count() > 0) {
          db.write(syncWrite, batch);
        }
      } finally {
        batch.close();
      }
    }
    return copied;
  }

  void close() {
    syncWrite.close();
  }
}
