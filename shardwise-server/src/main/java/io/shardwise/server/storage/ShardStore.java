package io.shardwise.server.storage;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.DBOptions;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.SstFileWriter;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * All shards of one node in one RocksDB instance, write-ahead log on.
 *
 * <p><b>A shard is a key prefix, not a column family.</b> Every stored key is {@code [table id: 8
 * bytes][shard number: 8 bytes][key]}, big-endian, so a shard is one contiguous key range: it is
 * scanned with one iterator, can be exported to an SST file and ingested on another node as a
 * unit, and is dropped with one {@code deleteRange}. Column families would give each shard its own
 * memtable and files, which does not scale to tables of 1024 slots or rings of hundreds of arcs
 * per node; the fixed 16-byte prefix also gives RocksDB prefix bloom filters per shard.
 *
 * <p><b>Values are versioned.</b> A stored value is {@code [flags: 1 byte][version: 8 bytes][bytes]}.
 * A key's version starts at 1 and rises by one with every write, deletes included: a delete leaves
 * a tombstone that keeps the version, so a conditional write against an old version fails even
 * after the key was deleted and written again. A tombstone records when it was written, and
 * {@link #purgeTombstones} removes those older than a grace; the shard then keeps a <em>version
 * floor</em>, the highest version it purged, and a key written where none is stored starts above
 * it, so versions still never repeat (no ABA) although the tombstone is gone. Writes of one key are serialised by a lock stripe
 * (read the version, write the next); a batch locks all its stripes in ascending order and commits
 * one RocksDB {@link WriteBatch}, so it is applied entirely or not at all.
 *
 * <p><b>The engine only.</b> Whether this node may serve a shard, the write fence and a move's
 * change log belong to the shard's {@code LocalShard}; requests reach the store only through it.
 *
 * <p><b>Moving a shard.</b> The source tracks the shard (every later write records its key in a
 * change log), {@link #exportShard exports} a consistent snapshot of it to an SST file, which the destination {@link #ingest ingests} whole; then the keys written meanwhile
 * are copied as stored values ({@link #readStored}/{@link #writeStored}), versions and tombstones
 * included, so the destination continues every key's version sequence exactly.
 *
 * <p>Thread-safe. Closing releases RocksDB; reopening the directory brings every shard back.
 */
public final class ShardStore implements ShardEngine, AutoCloseable {

  private static final byte LIVE = 0;
  private static final byte TOMBSTONE = 1;
  private static final int HEADER = 9;
  private static final int STRIPES = 1024;
  private static final HashFunction STRIPE_HASH = HashFunctions.xxhash64();

  static {
    RocksDbLibrary.load();
  }

  private final Path directory;
  private final DBOptions dbOptions;
  private final ColumnFamilyOptions dataOptions;
  private final ColumnFamilyOptions trashOptions;
  private final Options sstOptions;
  private final WriteOptions writeOptions;
  private final RocksDB db;
  private final List<ColumnFamilyHandle> handles;
  private final ShardTrash trash;
  private final ReentrantLock[] stripes = new ReentrantLock[STRIPES];
  private final LongAdder inUse = new LongAdder();
  private final ShardTraffic traffic = new ShardTraffic();
  private volatile boolean closed;

  private ShardStore(Path directory, DBOptions dbOptions, ColumnFamilyOptions dataOptions, ColumnFamilyOptions trashOptions,
      WriteOptions writeOptions, RocksDB db, List<ColumnFamilyHandle> handles) {
    this.directory = directory;
    this.dbOptions = dbOptions;
    this.dataOptions = dataOptions;
    this.trashOptions = trashOptions;
    this.sstOptions = new Options(dbOptions, dataOptions);
    this.writeOptions = writeOptions;
    this.db = db;
    this.handles = handles;
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new ReentrantLock();
    }
    this.trash = new ShardTrash(this, db, handles.get(1), new Options(dbOptions, trashOptions), writeOptions);
  }

  /**
   * Opens (creating if needed) the store in {@code directory}: shard data in RocksDB's default
   * column family, and the {@link ShardTrash trash} in a column family of its own.
   *
   * @param syncWrites fsync the write-ahead log on every write, to survive a machine crash, at a
   *     large cost per write. Without it an acknowledged write survives a process crash: the log is
   *     in the OS page cache.
   * @throws StorageException if RocksDB cannot open the directory (for example, another process
   *     holds it)
   */
  public static ShardStore open(Path directory, boolean syncWrites) {
    DBOptions dbOptions = null;
    ColumnFamilyOptions dataOptions = null;
    ColumnFamilyOptions trashOptions = null;
    try {
      Files.createDirectories(directory);
      dbOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
      dataOptions = new ColumnFamilyOptions()
          .setCompressionType(CompressionType.LZ4_COMPRESSION)
          .useFixedLengthPrefixExtractor(ShardRef.PREFIX_BYTES)
          .setTableFormatConfig(new BlockBasedTableConfig().setFilterPolicy(new BloomFilter(10, false)));
      trashOptions = new ColumnFamilyOptions().setCompressionType(CompressionType.LZ4_COMPRESSION);
      WriteOptions writeOptions = new WriteOptions().setSync(syncWrites);
      List<ColumnFamilyHandle> handles = new ArrayList<>();
      RocksDB db = RocksDB.open(dbOptions, directory.toString(), List.of(
          new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, dataOptions),
          new ColumnFamilyDescriptor(ShardTrash.COLUMN_FAMILY, trashOptions)), handles);
      return new ShardStore(directory, dbOptions, dataOptions, trashOptions, writeOptions, db, handles);
    } catch (RocksDBException | IOException e) {
      for (AutoCloseable c : new AutoCloseable[] {trashOptions, dataOptions, dbOptions}) {
        if (c != null) {
          try {
            c.close();
          } catch (Exception ignored) {
            // closing what was half-opened
          }
        }
      }
      throw new StorageException("cannot open the shard store in " + directory + ": " + e.getMessage(), e);
    }
  }

  /** Copies of shards this node no longer serves, kept for a grace period. */
  public ShardTrash trash() {
    return trash;
  }

  public Path directory() {
    return directory;
  }

  /** Reads and writes served per shard since the store opened. */
  public ShardTraffic traffic() {
    return traffic;
  }

  /** The live value of {@code key}, or {@code null} if it is absent or deleted. */
  @Override
  public Versioned get(ShardRef shard, byte[] key) {
    enter();
    try {
      byte[] raw = read(shard.storeKey(key));
      traffic.read(shard);
      return raw == null || raw[0] == TOMBSTONE ? null : new Versioned(Arrays.copyOfRange(raw, HEADER, raw.length), version(raw));
    } finally {
      exit();
    }
  }

  /** Writes {@code value} and returns its new version. */
  public long put(ShardRef shard, byte[] key, byte[] value) {
    return applyUnchecked(Mutation.put(shard, key, value));
  }

  /**
   * Writes {@code value} only if the key's current version is {@code expectedVersion} (0: only if
   * the key is absent), and returns the new version.
   *
   * @throws VersionMismatchException with the current version; nothing is written
   */
  public long putIfVersion(ShardRef shard, byte[] key, byte[] value, long expectedVersion) throws VersionMismatchException {
    return apply(List.of(new Mutation(shard, key, value, expectedVersion)))[0];
  }

  /** Deletes {@code key}; true if it was live. */
  public boolean delete(ShardRef shard, byte[] key) {
    try {
      return apply(List.of(Mutation.delete(shard, key)))[0] > 0;
    } catch (VersionMismatchException e) {
      throw new AssertionError("an unconditional delete cannot mismatch", e);
    }
  }


  private long applyUnchecked(Mutation m) {
    try {
      return apply(List.of(m))[0];
    } catch (VersionMismatchException e) {
      throw new AssertionError("an unconditional write cannot mismatch", e);
    }
  }

  /**
   * Applies the mutations atomically: all of them, or none. A key, and a write id, may appear once
   * per batch.
   *
   * <p>A mutation with a write id that this shard has already applied is not applied again: its
   * result is the first one, read from the shard's request record. A record is written in the same
   * RocksDB batch as the write it answers for, under a key of the shard's own range that no user key
   * can take ({@link #requestRecordKey}), so it is exactly as durable as the write, and it moves,
   * exports and is trashed with the shard.
   *
   * @return per mutation: the new version of a put; for a delete, the tombstone's version if the
   *     key was live and 0 if it was absent (then nothing is written)
   * @throws VersionMismatchException for the first conditional mutation that does not match;
   *     nothing is written
   * @throws IllegalArgumentException if a key or a write id repeats
   */
  @Override
  public long[] apply(List<Mutation> batch) throws VersionMismatchException {
    enter();
    try {
      int n = batch.size();
      byte[][] storeKeys = new byte[n][];
      byte[][] recordKeys = new byte[n][];
      TreeSet<Integer> stripeSet = new TreeSet<>();
      TreeSet<byte[]> seen = new TreeSet<>(Arrays::compareUnsigned);
      for (int i = 0; i < n; i++) {
        Mutation m = batch.get(i);
        storeKeys[i] = m.shard().storeKey(m.key());
        if (!seen.add(storeKeys[i])) {
          throw new IllegalArgumentException("key " + i + " of the batch repeats an earlier key");
        }
        stripeSet.add(stripeOf(storeKeys[i]));
        if (m.requestId() != null) {
          recordKeys[i] = m.shard().storeKey(requestRecordKey(m.requestId()));
          if (!seen.add(recordKeys[i])) {
            throw new IllegalArgumentException("write id " + i + " of the batch repeats an earlier write id");
          }
          stripeSet.add(stripeOf(recordKeys[i]));
        }
      }
      List<ReentrantLock> held = new ArrayList<>();
      try {
        for (int stripe : stripeSet) { // ascending: no two batches wait on each other
          stripes[stripe].lock();
          held.add(stripes[stripe]);
        }
        long[] versions = new long[n];
        long now = System.currentTimeMillis();
        boolean anyWrite = false;
        try (WriteBatch writes = new WriteBatch()) {
          for (int i = 0; i < n; i++) {
            Mutation m = batch.get(i);
            if (recordKeys[i] != null) {
              byte[] record = read(recordKeys[i]);
              if (record != null) {
                versions[i] = recordedResult(record); // a retry: answered, not applied again
                continue;
              }
            }
            byte[] raw = read(storeKeys[i]);
            long stored = raw == null ? versionFloor(m.shard()) : version(raw);
            boolean live = raw != null && raw[0] != TOMBSTONE;
            long current = live ? stored : 0;
            if (m.expectedVersion() != Mutation.ANY && m.expectedVersion() != current) {
              throw new VersionMismatchException(m.expectedVersion(), current);
            }
            if (m.value() == null && !live) {
              versions[i] = 0; // deleting an absent key writes nothing
            } else {
              versions[i] = stored + 1;
              writes.put(storeKeys[i], m.value() == null ? tombstone(versions[i], now) : encode(m.value(), versions[i]));
              anyWrite = true;
            }
            if (recordKeys[i] != null) {
              writes.put(recordKeys[i], encode(requestRecord(versions[i], now), 1));
              anyWrite = true;
            }
          }
          if (anyWrite) {
            db.write(writeOptions, writes);
          }
        }
        for (Mutation m : batch) {
          traffic.write(m.shard());
        }
        return versions;
      } catch (RocksDBException e) {
        throw new StorageException("batch write failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  // ------------------------------------------------------------------ request records

  /**
   * Where a shard keeps the record of a write id: {@code 0x00 0x02 + id} inside the shard's range.
   * An encoded user key never starts so ({@code Key} encodes a 0x00 byte of the partition key as
   * {@code 0x00 0xFF} and ends it with {@code 0x00 0x01}, and a partition key is never empty), so
   * records never meet user keys; scans and sizes skip them.
   */
  public static byte[] requestRecordKey(byte[] requestId) {
    byte[] out = new byte[RECORD_PREFIX.length + requestId.length];
    System.arraycopy(RECORD_PREFIX, 0, out, 0, RECORD_PREFIX.length);
    System.arraycopy(requestId, 0, out, RECORD_PREFIX.length, requestId.length);
    return out;
  }

  private static final byte[] RECORD_PREFIX = {0x00, 0x02};
  private static final byte[] RECORD_END = {0x00, 0x03};
  /** Where a shard keeps its version floor ({@link #purgeTombstones}): a stored value whose version is the floor. */
  private static final byte[] FLOOR_KEY = {0x00, 0x04};

  /**
   * True for a key the store keeps for itself inside a shard's range (a write id's record, the
   * version floor), false for a user key: an encoded user key that starts with 0x00 continues with
   * 0xFF. Reserved keys move, export and are trashed with their shard; scans and counts skip them.
   */
  public static boolean isReserved(byte[] storeKey) {
    return storeKey.length >= ShardRef.PREFIX_BYTES + 2 && storeKey[ShardRef.PREFIX_BYTES] == 0x00
        && storeKey[ShardRef.PREFIX_BYTES + 1] != (byte) 0xFF;
  }

  private static byte[] requestRecord(long result, long atMillis) {
    return java.nio.ByteBuffer.allocate(16).putLong(result).putLong(atMillis).array();
  }

  private static long recordedResult(byte[] raw) {
    return java.nio.ByteBuffer.wrap(raw, HEADER, 8).getLong();
  }

  /** Removes the shard's request records written before {@code cutoffMillis}; returns how many. */
  public int purgeRequestRecords(ShardRef shard, long cutoffMillis) {
    enter();
    try (Slice bound = new Slice(shard.storeKey(RECORD_END));
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true).setFillCache(false);
        RocksIterator it = db.newIterator(read);
        WriteBatch deletes = new WriteBatch()) {
      int purged = 0;
      for (it.seek(shard.storeKey(RECORD_PREFIX)); it.isValid(); it.next()) {
        byte[] raw = it.value();
        if (java.nio.ByteBuffer.wrap(raw, HEADER + 8, 8).getLong() < cutoffMillis) {
          deletes.delete(it.key());
          purged++;
        }
      }
      checkIterator(it, shard);
      if (purged > 0) {
        db.write(writeOptions, deletes);
      }
      return purged;
    } catch (RocksDBException e) {
      throw new StorageException("purging request records of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      exit();
    }
  }

  // ------------------------------------------------------------------ tombstones and the version floor

  /** The most tombstones {@link #purgeTombstones} removes in one call (it holds their lock stripes meanwhile). */
  public static final int TOMBSTONE_PURGE_BATCH = 256;

  /** What one {@link #purgeTombstones} call removed, and the key to go on from ({@code null}: the shard's end). */
  public record TombstonePurge(int purged, byte[] next) {}

  /**
   * Removes up to {@link #TOMBSTONE_PURGE_BATCH} of {@code shard}'s tombstones written before
   * {@code cutoffMillis}, from {@code from} (a key, not prefixed; empty: the shard's start) on, and
   * raises the shard's version floor to the highest version removed, in the same atomic batch.
   * Under the lock stripes of those keys: a write of one of them either comes first (the key is
   * live again and stays) or finds it gone and the floor already raised.
   *
   * <p>Run it only where no move is copying the shard: a move's change log does not see the
   * removals (a copy that keeps a tombstone is still correct, only larger).
   */
  public TombstonePurge purgeTombstones(ShardRef shard, long cutoffMillis, byte[] from) {
    enter();
    try {
      List<byte[]> candidates = new ArrayList<>();
      byte[] next = null;
      try (Slice bound = new Slice(shard.prefixEnd());
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true).setFillCache(false);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(shard.storeKey(from)); it.isValid(); it.next()) {
          byte[] raw = it.value();
          if (raw[0] == TOMBSTONE && deletedAtMillis(raw) < cutoffMillis && !isReserved(it.key())) {
            if (candidates.size() == TOMBSTONE_PURGE_BATCH) {
              next = Arrays.copyOfRange(it.key(), ShardRef.PREFIX_BYTES, it.key().length);
              break;
            }
            candidates.add(it.key());
          }
        }
        checkIterator(it, shard);
      }
      if (candidates.isEmpty()) {
        return new TombstonePurge(0, null);
      }
      byte[] floorKey = shard.storeKey(FLOOR_KEY);
      TreeSet<Integer> stripeSet = new TreeSet<>();
      stripeSet.add(stripeOf(floorKey));
      candidates.forEach(k -> stripeSet.add(stripeOf(k)));
      List<ReentrantLock> held = new ArrayList<>();
      try (WriteBatch writes = new WriteBatch()) {
        for (int stripe : stripeSet) { // ascending, as writes take them
          stripes[stripe].lock();
          held.add(stripes[stripe]);
        }
        long floor = versionFloor(shard);
        long raised = floor;
        int purged = 0;
        for (byte[] key : candidates) {
          byte[] raw = read(key);
          if (raw != null && raw[0] == TOMBSTONE && deletedAtMillis(raw) < cutoffMillis) { // not written again meanwhile
            writes.delete(key);
            raised = Math.max(raised, version(raw));
            purged++;
          }
        }
        if (purged > 0) {
          if (raised > floor) {
            writes.put(floorKey, encode(new byte[0], raised));
          }
          db.write(writeOptions, writes);
        }
        return new TombstonePurge(purged, next);
      } catch (RocksDBException e) {
        throw new StorageException("purging tombstones of shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /**
   * The highest version {@link #purgeTombstones} removed from {@code shard} (0 if none): a key
   * written where nothing is stored gets the next version above it. Read under the key's stripe.
   */
  long versionFloor(ShardRef shard) {
    byte[] raw = read(shard.storeKey(FLOOR_KEY));
    return raw == null ? 0 : version(raw);
  }

  /** When a tombstone was written; 0 for one written before tombstones recorded it. */
  private static long deletedAtMillis(byte[] tombstone) {
    return tombstone.length >= HEADER + 8 ? java.nio.ByteBuffer.wrap(tombstone, HEADER, 8).getLong() : 0;
  }

  private static byte[] tombstone(long version, long atMillis) {
    byte[] out = encode(java.nio.ByteBuffer.allocate(8).putLong(atMillis).array(), version);
    out[0] = TOMBSTONE;
    return out;
  }

  // ------------------------------------------------------------------ moving shards

  /**
   * Writes {@code shard} as of now (a consistent snapshot) to the SST file {@code file}, stored
   * values as they are. No file is created for an empty shard ({@code entries == 0}).
   */
  @Override
  public ExportStats exportShard(ShardRef shard, Path file) {
    return export(shard, file, new byte[0], sstOptions);
  }

  /**
   * Writes {@code shard} as of now to the SST file {@code file}, each key behind {@code keyPrefix},
   * for a column family whose options are {@code writerOptions}. No file for an empty shard.
   */
  ExportStats export(ShardRef shard, Path file, byte[] keyPrefix, Options writerOptions) {
    enter();
    try {
      Snapshot snapshot = db.getSnapshot();
      long entries = 0;
      long live = 0;
      long bytes = 0;
      try (Slice bound = new Slice(shard.prefixEnd());
          ReadOptions read = new ReadOptions().setSnapshot(snapshot).setIterateUpperBound(bound).setPrefixSameAsStart(true)
              .setFillCache(false);
          RocksIterator it = db.newIterator(read);
          EnvOptions env = new EnvOptions();
          SstFileWriter writer = new SstFileWriter(env, writerOptions)) {
        it.seek(shard.prefix());
        if (it.isValid()) {
          writer.open(file.toString());
          for (; it.isValid(); it.next()) {
            byte[] key = it.key();
            byte[] raw = it.value();
            writer.put(keyPrefix.length == 0 ? key : concat(keyPrefix, key), raw);
            entries++;
            bytes += key.length + raw.length;
            if (raw[0] != TOMBSTONE && !isReserved(key)) {
              live++;
            }
          }
          writer.finish();
        }
        checkIterator(it, shard);
        return new ExportStats(entries, live, bytes);
      } catch (RocksDBException e) {
        throw new StorageException("exporting shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        db.releaseSnapshot(snapshot);
        snapshot.close();
      }
    } finally {
      exit();
    }
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }


  /**
   * Replaces whatever this store holds of {@code shard} with the SST file {@code file} (made by
   * {@link #exportShard} on another node), moving the file into the store. {@code file == null}:
   * the shard is empty.
   */
  @Override
  public void ingest(ShardRef shard, Path file) {
    synchronized (trash) { // never interleaved with trashing the same shard
      enter();
      try {
        // Whatever this node held of the shard is older than the incoming copy, but it is not ours
        // to delete: it goes to the trash (and the range is then empty, so ingestion forces no flush).
        trash.put(shard, ShardTrash.Kind.REPLACED, "replaced by a copy that a move brought in", () -> true);
        if (file == null) {
          return;
        }
        try (IngestExternalFileOptions ingest = new IngestExternalFileOptions().setMoveFiles(true)) {
          db.ingestExternalFile(List.of(file.toString()), ingest);
        } catch (RocksDBException e) {
          throw new StorageException("ingesting shard " + shard + " from " + file + " failed: " + e.getMessage(), e);
        }
      } finally {
        exit();
      }
    }
  }


  /** The stored values of {@code storeKeys} (from a move's change log), as they are now. */
  @Override
  public List<StoredValue> readStored(List<byte[]> storeKeys) {
    if (storeKeys.isEmpty()) {
      return List.of(); // RocksDB's multiGet asserts on an empty list
    }
    enter();
    try {
      try {
        List<byte[]> values = db.multiGetAsList(storeKeys);
        List<StoredValue> out = new ArrayList<>(storeKeys.size());
        for (int i = 0; i < storeKeys.size(); i++) {
          out.add(new StoredValue(storeKeys.get(i), values.get(i)));
        }
        return out;
      } catch (RocksDBException e) {
        throw new StorageException("read failed: " + e.getMessage(), e);
      }
    } finally {
      exit();
    }
  }

  /**
   * Writes stored values copied from a move's source into {@code shard}, atomically.
   *
   * @throws IllegalArgumentException if a key is not in {@code shard}; nothing is written
   */
  @Override
  public void writeStored(ShardRef shard, List<StoredValue> values) {
    enter();
    try {
      byte[] prefix = shard.prefix();
      try (WriteBatch writes = new WriteBatch()) {
        for (StoredValue v : values) {
          if (v.storeKey().length < prefix.length || Arrays.compare(v.storeKey(), 0, prefix.length, prefix, 0, prefix.length) != 0) {
            throw new IllegalArgumentException("a copied key does not belong to shard " + shard);
          }
          if (v.stored() == null) {
            writes.delete(v.storeKey());
          } else {
            writes.put(v.storeKey(), v.stored());
          }
        }
        db.write(writeOptions, writes);
      } catch (RocksDBException e) {
        throw new StorageException("writing copied values to shard " + shard + " failed: " + e.getMessage(), e);
      }
    } finally {
      exit();
    }
  }

  @Override
  public List<byte[]> mergeStored(ShardRef shard, List<StoredValue> values) {
    enter();
    try {
      byte[] prefix = shard.prefix();
      TreeSet<Integer> stripeSet = new TreeSet<>();
      for (StoredValue v : values) {
        if (v.stored() == null || v.storeKey().length < prefix.length
            || Arrays.compare(v.storeKey(), 0, prefix.length, prefix, 0, prefix.length) != 0) {
          throw new IllegalArgumentException("a merged value is absent or its key does not belong to shard " + shard);
        }
        stripeSet.add(stripeOf(v.storeKey()));
      }
      List<ReentrantLock> held = new ArrayList<>();
      try (WriteBatch writes = new WriteBatch()) {
        for (int stripe : stripeSet) { // ascending, as writes take them: no two wait on each other
          stripes[stripe].lock();
          held.add(stripes[stripe]);
        }
        List<byte[]> written = new ArrayList<>();
        for (StoredValue v : values) {
          byte[] raw = read(v.storeKey());
          if (raw == null && !isReserved(v.storeKey())) {
            // Nothing stored: the merged value comes back, above the version floor so that no
            // version repeats. (If the key's tombstone was purged, a delete older than the
            // tombstone grace is undone: a restore is an operator's explicit choice.)
            long floor = versionFloor(shard);
            writes.put(v.storeKey(), version(v.stored()) > floor ? v.stored() : withVersion(v.stored(), floor + 1));
            written.add(v.storeKey());
          } else if (raw == null || version(raw) < version(v.stored())) {
            writes.put(v.storeKey(), v.stored());
            written.add(v.storeKey());
          }
        }
        if (!written.isEmpty()) {
          db.write(writeOptions, writes);
        }
        return written;
      } catch (RocksDBException e) {
        throw new StorageException("merging into shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /** Every shard this store holds any key of (tombstones count), in key order. */
  public List<ShardRef> storedShards() {
    enter();
    try {
      List<ShardRef> out = new ArrayList<>();
      try (ReadOptions read = new ReadOptions().setTotalOrderSeek(true).setFillCache(false);
          RocksIterator it = db.newIterator(read)) {
        it.seekToFirst();
        while (it.isValid()) {
          ShardRef shard = ShardRef.ofStoreKey(it.key());
          out.add(shard);
          it.seek(shard.prefixEnd());
        }
        checkIterator(it, null);
      }
      return out;
    } finally {
      exit();
    }
  }

  /**
   * Live entries of {@code shard} with keys in {@code [from, to)} ({@code to == null}: to the end of
   * the shard), in unsigned key order, at most {@code limit} of them.
   */
  @Override
  public ScanPage scan(ShardRef shard, byte[] from, byte[] to, int limit) {
    enter();
    try {
      if (limit < 1) {
        throw new IllegalArgumentException("scan limit must be at least 1, not " + limit);
      }
      traffic.read(shard);
      List<StoredEntry> out = new ArrayList<>();
      byte[] upper = to == null ? shard.prefixEnd() : shard.storeKey(to);
      try (Slice bound = new Slice(upper);
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(shard.storeKey(from)); it.isValid(); it.next()) {
          byte[] raw = it.value();
          if (raw[0] == TOMBSTONE || isReserved(it.key())) {
            continue;
          }
          byte[] key = Arrays.copyOfRange(it.key(), ShardRef.PREFIX_BYTES, it.key().length);
          if (out.size() == limit) {
            return new ScanPage(out, key);
          }
          out.add(new StoredEntry(key, Arrays.copyOfRange(raw, HEADER, raw.length), version(raw)));
        }
        checkIterator(it, shard);
      }
      return new ScanPage(out, null);
    } finally {
      exit();
    }
  }

  /** Live keys and their bytes (keys plus values) in {@code shard}. Reads the whole shard. */
  public ShardStats stats(ShardRef shard) {
    enter();
    try {
      long keys = 0;
      long bytes = 0;
      try (Slice bound = new Slice(shard.prefixEnd());
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(shard.prefix()); it.isValid(); it.next()) {
          byte[] raw = it.value();
          if (raw[0] != TOMBSTONE && !isReserved(it.key())) {
            keys++;
            bytes += it.key().length - ShardRef.PREFIX_BYTES + raw.length - HEADER;
          }
        }
        checkIterator(it, shard);
      }
      return new ShardStats(keys, bytes);
    } finally {
      exit();
    }
  }

  /** Live keys and bytes of a shard. */
  public record ShardStats(long keys, long bytes) {}

  /** Removes every key of {@code shard}, tombstones included, with one range deletion. */
  @Override
  public void drop(ShardRef shard) {
    enter();
    try {
      try {
        db.deleteRange(writeOptions, shard.prefix(), shard.prefixEnd());
      } catch (RocksDBException e) {
        throw new StorageException("dropping shard " + shard + " failed: " + e.getMessage(), e);
      }
    } finally {
      exit();
    }
  }

  /**
   * Marks an operation in progress; {@link #close} waits for them, because RocksDB must never be
   * touched after it is closed (the process would abort).
   *
   * @throws StorageException once the store is closed
   */
  void enter() {
    inUse.increment();
    if (closed) {
      inUse.decrement();
      throw new StorageException("the shard store is closed", null);
    }
  }

  void exit() {
    inUse.decrement();
  }

  /** True once {@link #close} has begun. */
  @Override
  public boolean isClosed() {
    return closed;
  }

  /** Waits (up to 10 s) for operations in progress, then closes RocksDB. Later calls fail; closing again does nothing. */
  @Override
  public synchronized void close() {
    if (closed) {
      return; // RocksDB must never be touched once closed: a second close would crash the process
    }
    closed = true;
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (inUse.sum() > 0 && System.nanoTime() < deadline) {
      LockSupport.parkNanos(1_000_000);
    }
    if (inUse.sum() > 0) {
      // Still busy after 10 s: leave RocksDB open rather than crash the process under a reader.
      return;
    }
    try {
      db.syncWal();
    } catch (RocksDBException e) {
      // Closing anyway: the log of every acknowledged write is already in the OS page cache.
    }
    handles.forEach(ColumnFamilyHandle::close);
    db.close();
    trash.closeOptions();
    sstOptions.close();
    writeOptions.close();
    trashOptions.close();
    dataOptions.close();
    dbOptions.close();
  }

  private byte[] read(byte[] storeKey) {
    try {
      return db.get(storeKey);
    } catch (RocksDBException e) {
      throw new StorageException("read failed: " + e.getMessage(), e);
    }
  }

  private static void checkIterator(RocksIterator it, ShardRef shard) {
    try {
      it.status();
    } catch (RocksDBException e) {
      throw new StorageException("reading shard " + shard + " failed: " + e.getMessage(), e);
    }
  }

  private static int stripeOf(byte[] storeKey) {
    return (int) Long.remainderUnsigned(STRIPE_HASH.hash(storeKey), STRIPES);
  }

  private static long version(byte[] raw) {
    long v = 0;
    for (int i = 1; i < HEADER; i++) {
      v = (v << 8) | (raw[i] & 0xff);
    }
    return v;
  }

  private static byte[] withVersion(byte[] raw, long version) {
    byte[] out = Arrays.copyOf(raw, raw.length);
    for (int i = 8; i >= 1; i--) {
      out[i] = (byte) version;
      version >>>= 8;
    }
    return out;
  }

  private static byte[] encode(byte[] valueOrNull, long version) {
    byte[] value = valueOrNull == null ? new byte[0] : valueOrNull;
    byte[] out = new byte[HEADER + value.length];
    out[0] = valueOrNull == null ? TOMBSTONE : LIVE;
    for (int i = 8; i >= 1; i--) {
      out[i] = (byte) version;
      version >>>= 8;
    }
    System.arraycopy(value, 0, out, HEADER, value.length);
    return out;
  }
}
