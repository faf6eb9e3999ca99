package io.shardwise.server.storage;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * All shards of one node in one RocksDB instance, write-ahead log on.
 *
 * <p><b>A shard is a key range, not a column family.</b> Every stored key starts with its table's
 * id and its placement ({@link ShardRef}): the key itself for range tables, the partition key's hash
 * for hashrange tables, the shard number for the strategies that cannot split. So a shard is always
 * one contiguous range of keys: it is scanned with one iterator, exported to an SST file and
 * ingested on another node as a unit, and dropped with one {@code deleteRange}; and a range or
 * hashrange shard splits or merges without a key being rewritten. Column families would give each
 * shard its own memtable and files, which does not scale to tables of 1024 slots or to tables that
 * split into thousands of shards. The data directory records its layout version ({@link
 * StoreFormat}); an older one is migrated by {@link #migrate} before it serves.
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

  private static final Logger LOG = LoggerFactory.getLogger(ShardStore.class);

  /** The data directory layout this build writes ({@link StoreFormat}). */
  public static final int LAYOUT_VERSION = StoreFormat.CURRENT;

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
  private final ColumnFamilyOptions logOptions;
  private final Options sstOptions;
  private final WriteOptions writeOptions;
  private final WriteOptions unsyncedWrites = new WriteOptions(); // for ReplicaLogs' applies: what they write is in the log already
  private final RocksDB db;
  private final List<ColumnFamilyHandle> handles;
  private final ShardTrash trash;
  private final StoreFormat format;
  private final ReplicaLogs replicaLogs;
  private final LocalIndexes indexes;
  private final ReentrantLock[] stripes = new ReentrantLock[STRIPES];
  private final LongAdder inUse = new LongAdder();
  private final ShardTraffic traffic = new ShardTraffic();
  private volatile boolean closed;
  private volatile int version;
  private Identity identity;

  private ShardStore(Path directory, DBOptions dbOptions, ColumnFamilyOptions dataOptions, ColumnFamilyOptions trashOptions,
      ColumnFamilyOptions logOptions, WriteOptions writeOptions, RocksDB db, List<ColumnFamilyHandle> handles) {
    this.directory = directory;
    this.dbOptions = dbOptions;
    this.dataOptions = dataOptions;
    this.trashOptions = trashOptions;
    this.logOptions = logOptions;
    this.sstOptions = new Options(dbOptions, dataOptions);
    this.writeOptions = writeOptions;
    this.db = db;
    this.handles = handles;
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new ReentrantLock();
    }
    this.trash = new ShardTrash(this, db, handles.get(1), new Options(dbOptions, trashOptions), writeOptions);
    this.format = new StoreFormat(db, handles.get(2));
    this.indexes = new LocalIndexes(db, handles.get(4), handles.get(2), writeOptions); // before anything writes rows
    this.replicaLogs = new ReplicaLogs(this, db, handles.get(3), writeOptions, unsyncedWrites);
    int interrupted = replicaLogs.recoverInterruptedInstalls();
    if (interrupted > 0) {
      LOG.warn("{} replica install(s) were interrupted by a crash: those shards start over empty and take a snapshot again", interrupted);
    }
  }

  /** The replication logs of this node's replicated shards, in a column family of their own. */
  @Override
  public ReplicaStorage replicaStorage() {
    return replicaLogs;
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
    return open(directory, syncWrites, false);
  }

  /**
   * The replication logs' column family: as the trash's, and its memtable keeps an insert hint per
   * shard ({@link ReplicaLogs#SHARD_PREFIX} bytes: kind, table, shard), since each shard's entries
   * arrive in order. Without it an entry that follows another shard's was placed by a search from the
   * top of the skip list: on a busy replicated node, most of a log append's memtable work.
   */
  private static ColumnFamilyOptions replicaLogOptions() {
    java.util.Properties hint = new java.util.Properties(); // not in RocksJava's setters; RocksDB's option string
    hint.setProperty("memtable_insert_with_hint_prefix_extractor", "rocksdb.FixedPrefix." + ReplicaLogs.SHARD_PREFIX);
    ColumnFamilyOptions options = ColumnFamilyOptions.getColumnFamilyOptionsFromProps(hint);
    if (options == null) {
      throw new StorageException("RocksDB did not take the replication log's memtable insert hint option", null);
    }
    return options.setCompressionType(CompressionType.LZ4_COMPRESSION);
  }

  /**
   * As {@link #open(Path, boolean)}; with {@code unsyncedDieWithProcess}, writes that do not fsync
   * stay in this process (RocksDB's manual WAL flush: in its log buffer, not the OS page cache)
   * until a synced write, a full buffer or a memtable switch writes them out, so that {@code kill
   * -9} loses them as a machine crash loses what was not fsynced. A fault-test aid, meaningful
   * with {@code syncWrites}: it lets a process crash stand for a power loss.
   */
  public static ShardStore open(Path directory, boolean syncWrites, boolean unsyncedDieWithProcess) {
    DBOptions dbOptions = null;
    ColumnFamilyOptions dataOptions = null;
    ColumnFamilyOptions trashOptions = null;
    ColumnFamilyOptions logOptions = null;
    try {
      Files.createDirectories(directory);
      dbOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true).setManualWalFlush(unsyncedDieWithProcess);
      dataOptions = new ColumnFamilyOptions()
          .setCompressionType(CompressionType.LZ4_COMPRESSION)
          .useFixedLengthPrefixExtractor(ShardRef.BUCKET_PREFIX)
          .setTableFormatConfig(new BlockBasedTableConfig().setFilterPolicy(new BloomFilter(10, false)));
      trashOptions = new ColumnFamilyOptions().setCompressionType(CompressionType.LZ4_COMPRESSION);
      logOptions = replicaLogOptions();
      WriteOptions writeOptions = new WriteOptions().setSync(syncWrites);
      List<ColumnFamilyHandle> handles = new ArrayList<>();
      RocksDB db = RocksDB.open(dbOptions, directory.toString(), List.of(
          new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, dataOptions),
          new ColumnFamilyDescriptor(ShardTrash.COLUMN_FAMILY, trashOptions),
          new ColumnFamilyDescriptor(StoreFormat.COLUMN_FAMILY, trashOptions),
          new ColumnFamilyDescriptor(ReplicaLogs.COLUMN_FAMILY, logOptions),
          new ColumnFamilyDescriptor(LocalIndexes.COLUMN_FAMILY, trashOptions)), handles);
      ShardStore store = new ShardStore(directory, dbOptions, dataOptions, trashOptions, logOptions, writeOptions, db, handles);
      try {
        boolean empty = store.isEmpty() && store.trash().entries().isEmpty();
        store.identity = store.format.identity(empty);
        store.version = store.format.version(store.isEmpty());
      } catch (RuntimeException e) {
        store.close();
        throw e;
      }
      return store;
    } catch (RocksDBException | IOException | StorageException e) {
      for (AutoCloseable c : new AutoCloseable[] {logOptions, trashOptions, dataOptions, dbOptions}) {
        if (c != null) {
          try {
            c.close();
          } catch (Exception ignored) {
            // closing what was half-opened
          }
        }
      }
      throw e instanceof StorageException named ? named
          : new StorageException("cannot open the shard store in " + directory + ": " + e.getMessage(), e);
    }
  }

  /**
   * The layout version of the data directory ({@link StoreFormat}): {@link StoreFormat#CURRENT}, or
   * 1 until {@link #migrate} has run.
   */
  public int layoutVersion() {
    return version;
  }

  /**
   * Which store this is (see {@link #storeId}), and how it came to have its id.
   *
   * @param madeNow the id was made when this process opened the store: the directory is new, or
   *     was written by a build before store ids
   * @param adopted made now for a store that already held data (a build before store ids wrote
   *     it): the node's replicas in the map were granted to this very data
   */
  public record Identity(String id, boolean madeNow, boolean adopted) {}

  /** This store's identity, read (or made) when it was opened. */
  public Identity identity() {
    return identity;
  }

  @Override
  public String storeId() {
    return identity.id();
  }

  /** What {@link #migrate} did: the version it found, and the shards and keys it rewrote. */
  public record Migration(int fromVersion, int shards, long keys) {}

  /**
   * Brings a directory of an older layout version to the current one, rewriting the shards of the
   * ordered tables that {@code tables} (the map's, by id) names; a no-op when it is current. Call
   * it before the store serves anything.
   */
  public synchronized Migration migrate(java.util.function.LongFunction<io.shardwise.core.map.Table> tables) {
    if (version == StoreFormat.CURRENT) {
      return new Migration(version, 0, 0);
    }
    enter();
    try {
      Migration m = format.migrate(this, tables);
      version = StoreFormat.CURRENT;
      return m;
    } finally {
      exit();
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
      byte[] intentKey = shard.intentKey(key);
      byte[] lock = intentKey == null ? null : read(intentKey);
      Versioned v = raw == null || raw[0] == TOMBSTONE ? null : new Versioned(Arrays.copyOfRange(raw, HEADER, raw.length), version(raw));
      if (lock != null) {
        throw new KeyLockedException(shard, key, Intent.decode(lock, HEADER), v);
      }
      traffic.read(shard);
      return v;
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
   * can take ({@link ShardRef#recordKey}), so it is exactly as durable as the write, and it moves,
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
      Keys keys = keysOf(batch);
      List<ReentrantLock> held = lock(keys.stripes);
      try {
        Evaluation e = evaluateHeld(batch, keys, k -> null, 0);
        if (!e.effects().isEmpty()) {
          try (WriteBatch writes = new WriteBatch()) {
            putEffects(writes, e.effects());
            db.write(writeOptions, writes);
          }
        }
        return e.results();
      } catch (RocksDBException e) {
        throw new StorageException("batch write failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /**
   * What {@link #apply} would write, without writing it: the results and the stored values the
   * batch leaves. The caller must keep every other writer off these keys until the effects are
   * written (a replicated shard's leader holds their latches until its log entry is applied).
   */
  @Override
  public Evaluation evaluate(List<Mutation> batch) throws VersionMismatchException {
    return evaluate(batch, k -> null, 0);
  }

  @Override
  public Evaluation evaluate(List<Mutation> batch, java.util.function.Function<byte[], byte[]> pending, long versionFloor)
      throws VersionMismatchException {
    enter();
    try {
      Keys keys = keysOf(batch);
      List<ReentrantLock> held = lock(keys.stripes);
      try {
        return evaluateHeld(batch, keys, pending, versionFloor);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /** A batch's store keys and write-id record keys, checked for repeats, and the lock stripes they fall in. */
  private record Keys(byte[][] storeKeys, byte[][] recordKeys, TreeSet<Integer> stripes) {}

  private Keys keysOf(List<Mutation> batch) {
    int n = batch.size();
    byte[][] storeKeys = new byte[n][];
    byte[][] recordKeys = new byte[n][];
    TreeSet<Integer> stripeSet = new TreeSet<>();
    TreeSet<byte[]> seen = new TreeSet<>(Arrays::compareUnsigned);
    for (int i = 0; i < n; i++) {
      Mutation m = batch.get(i);
      storeKeys[i] = m.txn() != null && m.txn().kind() == TxnStep.Kind.RECORD
          ? m.shard().txnRecordKey(m.key(), m.txn().txnId()) : m.shard().storeKey(m.key());
      if (!seen.add(storeKeys[i])) {
        throw new IllegalArgumentException("key " + i + " of the batch repeats an earlier key");
      }
      stripeSet.add(stripeOf(storeKeys[i]));
      if (m.requestId() != null) {
        recordKeys[i] = m.shard().recordKey(m.key(), m.requestId());
        if (!seen.add(recordKeys[i])) {
          throw new IllegalArgumentException("write id " + i + " of the batch repeats an earlier write id");
        }
        stripeSet.add(stripeOf(recordKeys[i]));
      }
    }
    return new Keys(storeKeys, recordKeys, stripeSet);
  }

  /** The results and effects of {@code batch}, its stripes held, reading {@code pending} before the store. */
  private Evaluation evaluateHeld(List<Mutation> batch, Keys keys, java.util.function.Function<byte[], byte[]> pending,
      long tableVersionFloor) throws VersionMismatchException {
    int n = batch.size();
    long[] versions = new long[n];
    long now = System.currentTimeMillis();
    List<StoredValue> effects = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Mutation m = batch.get(i);
      if (m.txn() != null && m.txn().kind() == TxnStep.Kind.RECORD) {
        continue; // after the others, which it may record
      }
      if (keys.recordKeys[i] != null) {
        byte[] record = readThrough(keys.recordKeys[i], pending);
        if (record != null) {
          versions[i] = recordedResult(record); // a retry: answered, not applied again
          continue;
        }
      }
      if (m.reconciled()) {
        versions[i] = reconciled(m, pending, effects);
        continue;
      }
      byte[] intentKey = m.shard().intentKey(m.key());
      if (intentKey == null && m.txn() != null) {
        throw new IllegalArgumentException("a transaction's key is an encoded key");
      }
      byte[] lockRaw = intentKey == null ? null : readThrough(intentKey, pending);
      Intent lock = lockRaw == null ? null : Intent.decode(lockRaw, HEADER);
      if (m.txn() != null && m.txn().kind() == TxnStep.Kind.RESOLVE) {
        versions[i] = resolve(m, keys.storeKeys[i], intentKey, lock, now, effects);
        if (versions[i] > 0) {
          pend(m, versions[i], now, pending, effects);
        }
        continue;
      }
      if (lock != null && !(m.txn() != null && lock.sameTransaction(m.txn().txnId()))) {
        throw new KeyLockedException(m.shard(), m.key(), lock);
      }
      if (lock != null) { // this transaction's prepare again: it holds the key already
        versions[i] = lock.version();
        continue;
      }
      byte[] raw = readThrough(keys.storeKeys[i], pending);
      long stored = raw == null ? Math.max(versionFloor(m.shard()), tableVersionFloor) : version(raw);
      boolean live = raw != null && raw[0] != TOMBSTONE;
      long current = live ? stored : 0;
      if (!Mutation.meets(m.expectedVersion(), current)) {
        throw new VersionMismatchException(m.expectedVersion(), current, i);
      }
      if (m.txn() != null && m.txn().kind() == TxnStep.Kind.CHECK) {
        versions[i] = 0;
        continue;
      }
      if (m.txn() != null) { // a prepare: the intent, holding the version its commit will write
        Intent intent = m.txn().intent();
        versions[i] = intent.op() == Intent.Op.CHECK || (intent.op() == Intent.Op.DELETE && !live) ? 0 : stored + 1;
        effects.add(new StoredValue(intentKey, encode(intent.withVersion(versions[i]).encode(), 1)));
        continue;
      }
      byte[] value = m.valueGiven(raw, live, HEADER);
      if (value == null && !live) {
        versions[i] = 0; // deleting an absent key writes nothing
      } else {
        versions[i] = stored + 1;
        effects.add(new StoredValue(keys.storeKeys[i], value == null ? tombstone(versions[i], now) : encode(value, versions[i])));
        pend(m, versions[i], now, pending, effects);
      }
      if (keys.recordKeys[i] != null) {
        effects.add(new StoredValue(keys.recordKeys[i], encode(requestRecord(versions[i], now), 1)));
      }
    }
    for (int i = 0; i < n; i++) {
      Mutation m = batch.get(i);
      if (m.txn() != null && m.txn().kind() == TxnStep.Kind.RECORD) {
        byte[] raw = readThrough(keys.storeKeys[i], pending);
        byte[] before = raw == null ? null : Arrays.copyOfRange(raw, HEADER, raw.length);
        byte[] after = m.txn().record().apply(before, versions.clone());
        if (after != before) {
          effects.add(new StoredValue(keys.storeKeys[i], after == null ? null : encode(after, 1)));
        }
      }
    }
    for (Mutation m : batch) {
      traffic.write(m.shard());
    }
    return new Evaluation(versions, effects);
  }

  /**
   * A {@link TxnStep.Kind#RESOLVE}: the key's intent of the step's transaction becomes its outcome
   * (the value or tombstone it holds, at the version it holds, if committed) and goes. Returns the
   * version written, 0 if none, -1 if the key holds no intent of that transaction (resolved before).
   */
  private static long resolve(Mutation m, byte[] storeKey, byte[] intentKey, Intent lock, long now, List<StoredValue> effects) {
    if (lock == null || !lock.sameTransaction(m.txn().txnId())) {
      return -1;
    }
    effects.add(new StoredValue(intentKey, null));
    if (!m.txn().commit() || lock.version() == 0) {
      return 0;
    }
    effects.add(new StoredValue(storeKey, lock.op() == Intent.Op.PUT ? encode(lock.value(), lock.version()) : tombstone(lock.version(), now)));
    return lock.version();
  }

  /**
   * Adds to {@code effects} the pending marker of {@code m}'s row, written now at {@code version},
   * if its table has an asynchronous global index (the definitions change only under every row
   * lock, so a write either leaves a marker or comes before the index, which its backfill then finds).
   */
  private void pend(Mutation m, long version, long now, java.util.function.Function<byte[], byte[]> pending, List<StoredValue> effects) {
    LocalIndexes.TableIndexes t = indexes.of(m.shard().tableId());
    if (t == null || !t.pending()) {
      return;
    }
    byte[] markerKey = m.shard().pendingKey(m.key());
    if (markerKey == null) {
      return;
    }
    byte[] raw = readThrough(markerKey, pending);
    PendingMarker marker = raw == null ? PendingMarker.of(version, now) : PendingMarker.decode(raw, HEADER).andThen(version, now);
    effects.add(new StoredValue(markerKey, encode(marker.encode(), 1)));
  }

  /**
   * A {@link Mutation#reconciled}: the row's marker without the changes up to the mutation's
   * version (gone if none is left). Returns 1 if the marker changed, 0 if not (none, or only later changes).
   */
  private long reconciled(Mutation m, java.util.function.Function<byte[], byte[]> pending, List<StoredValue> effects) {
    byte[] markerKey = m.shard().pendingKey(m.key());
    byte[] raw = markerKey == null ? null : readThrough(markerKey, pending);
    if (raw == null) {
      return 0;
    }
    PendingMarker before = PendingMarker.decode(raw, HEADER);
    PendingMarker after = before.reconciledThrough(m.expectedVersion());
    if (after == before) {
      return 0;
    }
    effects.add(new StoredValue(markerKey, after == null ? null : encode(after.encode(), 1)));
    return 1;
  }

  private byte[] readThrough(byte[] storeKey, java.util.function.Function<byte[], byte[]> pending) {
    byte[] p = pending.apply(storeKey);
    if (p == REMOVED) {
      return null; // an appended entry removes it (a resolved intent, a cleared marker, a purged record)
    }
    return p != null ? p : read(storeKey);
  }

  // ------------------------------------------------------------------ request records

  private static final byte[] BUCKET_RECORDS = {0x00, 0x02};
  private static final byte[] BUCKET_RECORDS_END = {0x00, 0x03};

  private static byte[] requestRecord(long result, long atMillis) {
    return java.nio.ByteBuffer.allocate(16).putLong(result).putLong(atMillis).array();
  }

  private static long recordedResult(byte[] raw) {
    return java.nio.ByteBuffer.wrap(raw, HEADER, 8).getLong();
  }

  /**
   * Removes the request records of a {@link ShardRef.Layout#BUCKET bucket} shard written before
   * {@code cutoffMillis} (they lie together at its start); returns how many. The records of an
   * ordered shard lie beside their keys, and {@link #purgeTombstones} removes them as it passes.
   */
  public int purgeRequestRecords(ShardRef shard, long cutoffMillis) {
    if (shard.layout() != ShardRef.Layout.BUCKET) {
      return 0;
    }
    enter();
    try (Slice bound = new Slice(shard.storeKey(BUCKET_RECORDS_END));
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true).setFillCache(false);
        RocksIterator it = db.newIterator(read);
        WriteBatch deletes = new WriteBatch()) {
      int purged = 0;
      for (it.seek(shard.storeKey(BUCKET_RECORDS)); it.isValid(); it.next()) {
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

  @Override
  public List<StoredValue> expiredTombstones(ShardRef shard, long cutoffMillis, int limit) {
    enter();
    try (Slice bound = new Slice(shard.endKey());
        ReadOptions read = spanRead(shard, bound).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      List<StoredValue> out = new ArrayList<>();
      for (it.seek(shard.startKey()); it.isValid() && out.size() < limit; it.next()) {
        byte[] raw = it.value();
        if (!shard.isReserved(it.key()) && raw[0] == TOMBSTONE && deletedAtMillis(raw) < cutoffMillis) {
          out.add(new StoredValue(it.key(), raw));
        }
      }
      checkIterator(it, shard);
      return out;
    } finally {
      exit();
    }
  }

  @Override
  public long versionOf(byte[] stored) {
    return version(stored);
  }

  @Override
  public byte[] stored(byte[] storeKey) {
    enter();
    try {
      return read(storeKey);
    } finally {
      exit();
    }
  }

  @Override
  public List<byte[]> expiredRequestRecords(ShardRef shard, long cutoffMillis, int limit) {
    boolean bucket = shard.layout() == ShardRef.Layout.BUCKET;
    enter();
    try (Slice bound = new Slice(bucket ? shard.storeKey(BUCKET_RECORDS_END) : shard.endKey());
        ReadOptions read = (bucket ? new ReadOptions().setIterateUpperBound(bound).setPrefixSameAsStart(true) : spanRead(shard, bound))
            .setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      List<byte[]> out = new ArrayList<>();
      for (it.seek(bucket ? shard.storeKey(BUCKET_RECORDS) : shard.startKey()); it.isValid() && out.size() < limit; it.next()) {
        if ((bucket || (shard.isReserved(it.key()) && shard.isRecord(it.key())))
            && java.nio.ByteBuffer.wrap(it.value(), HEADER + 8, 8).getLong() < cutoffMillis) {
          out.add(it.key());
        }
      }
      checkIterator(it, shard);
      return out;
    } finally {
      exit();
    }
  }

  // ------------------------------------------------------------------ tombstones and the version floor

  /** The most tombstones {@link #purgeTombstones} removes in one call (it holds their lock stripes meanwhile). */
  public static final int TOMBSTONE_PURGE_BATCH = 256;

  /** What one {@link #purgeTombstones} call removed, and the key to go on from ({@code null}: the shard's end). */
  public record TombstonePurge(int purged, byte[] next) {}

  /** {@link #purgeTombstones(ShardRef, long, long, byte[])} removing no request records. */
  public TombstonePurge purgeTombstones(ShardRef shard, long cutoffMillis, byte[] from) {
    return purgeTombstones(shard, cutoffMillis, Long.MIN_VALUE, from);
  }

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
  public TombstonePurge purgeTombstones(ShardRef shard, long cutoffMillis, long recordCutoffMillis, byte[] from) {
    enter();
    try {
      List<byte[]> candidates = new ArrayList<>();
      byte[] next = null;
      int records = 0;
      try (Slice bound = new Slice(shard.endKey());
          ReadOptions read = spanRead(shard, bound).setFillCache(false);
          RocksIterator it = db.newIterator(read);
          WriteBatch recordDeletes = new WriteBatch()) {
        for (it.seek(from.length == 0 ? shard.startKey() : shard.storeKey(from)); it.isValid(); it.next()) {
          byte[] raw = it.value();
          if (shard.isReserved(it.key())) {
            if (shard.layout() != ShardRef.Layout.BUCKET && shard.isRecord(it.key())
                && java.nio.ByteBuffer.wrap(raw, HEADER + 8, 8).getLong() < recordCutoffMillis) {
              recordDeletes.delete(it.key()); // a record answers retries of its write: nothing to lock against
              records++;
            }
          } else if (raw[0] == TOMBSTONE && deletedAtMillis(raw) < cutoffMillis) {
            if (candidates.size() == TOMBSTONE_PURGE_BATCH) {
              next = shard.userKey(it.key());
              break;
            }
            candidates.add(it.key());
          }
        }
        checkIterator(it, shard);
        if (records > 0) {
          db.write(writeOptions, recordDeletes);
        }
      } catch (RocksDBException e) {
        throw new StorageException("purging request records of shard " + shard + " failed: " + e.getMessage(), e);
      }
      if (candidates.isEmpty()) {
        return new TombstonePurge(0, null);
      }
      byte[] floorKey = shard.floorKey();
      byte[] tableFloorKey = tableFloorKey(shard.tableId());
      TreeSet<Integer> stripeSet = new TreeSet<>();
      stripeSet.add(stripeOf(floorKey));
      stripeSet.add(stripeOf(tableFloorKey));
      candidates.forEach(k -> stripeSet.add(stripeOf(k)));
      List<ReentrantLock> held = lock(stripeSet);
      try (WriteBatch writes = new WriteBatch()) {
        long floor = versionFloor(shard);
        long tableFloor = tableFloor(shard.tableId());
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
          if (raised > tableFloor) {
            writes.put(meta(), tableFloorKey, encode(new byte[0], raised));
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
    byte[] raw = read(shard.floorKey());
    return raw == null ? 0 : version(raw);
  }

  /**
   * Makes {@code shard}'s version floor and its table's floor in this store (kept in the {@code
   * meta} column family, raised in the same batch as every purge) equal, at the higher of the two.
   * A floor lives at its shard's start, so the upper half of a split, or the right part of a merge,
   * starts where no floor was kept. Calling this whenever an ordered shard starts to serve here
   * keeps one rule true: the table's floor is at least the floor of every shard of the table that
   * ever served here, and a shard serves with at least the table's floor. That covers a split, a
   * merge, a shard that arrived by a move and then split, and a restart after a split this node had
   * not applied before it died, at the price of versions that may jump higher than they had to.
   * Call it before the shard serves.
   */
  @Override
  public void inheritFloor(ShardRef shard, long atLeast) {
    enter();
    try {
      byte[] floorKey = shard.floorKey();
      TreeSet<Integer> stripeSet = new TreeSet<>();
      stripeSet.add(stripeOf(floorKey));
      stripeSet.add(stripeOf(tableFloorKey(shard.tableId())));
      List<ReentrantLock> held = lock(stripeSet);
      try (WriteBatch writes = new WriteBatch()) {
        long floor = versionFloor(shard);
        long tableFloor = tableFloor(shard.tableId());
        long target = Math.max(atLeast, Math.max(floor, tableFloor)); // a shard that arrived with its floor: the table's covers it from now on
        if (target > floor) {
          writes.put(floorKey, encode(new byte[0], target));
        }
        if (target > tableFloor) {
          writes.put(meta(), tableFloorKey(shard.tableId()), encode(new byte[0], target));
        }
        if (writes.count() > 0) {
          db.write(writeOptions, writes);
        }
      } catch (RocksDBException e) {
        throw new StorageException("raising the version floor of shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /** The highest version purged from any shard of table {@code tableId} in this store (0 if none). */
  private long tableFloor(long tableId) {
    try {
      byte[] raw = db.get(meta(), tableFloorKey(tableId));
      return raw == null ? 0 : version(raw);
    } catch (RocksDBException e) {
      throw new StorageException("read failed: " + e.getMessage(), e);
    }
  }

  private static byte[] tableFloorKey(long tableId) {
    return java.nio.ByteBuffer.allocate(14).put("floor:".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putLong(tableId).array();
  }

  private ColumnFamilyHandle meta() {
    return handles.get(2);
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
    return atSnapshot(snapshot -> exportAt(snapshot, shard, file, keyPrefix, writerOptions));
  }

  /**
   * Writes {@code shard}'s data as its replication log has applied it, with the offset applied, as
   * of one moment (a snapshot of both column families): what a follower installs to start its log
   * at that offset. No file for an empty shard.
   */
  @Override
  public ReplicaExport exportReplica(ShardRef shard, Path file) {
    return atSnapshot(snapshot -> {
      try (ReadOptions read = new ReadOptions().setSnapshot(snapshot)) {
        long[] applied = replicaLogs.appliedAt(shard, read);
        return new ReplicaExport(exportAt(snapshot, shard, file, new byte[0], sstOptions), applied[0], applied[1]);
      } catch (RocksDBException e) {
        throw new StorageException("exporting replica " + shard + " failed: " + e.getMessage(), e);
      }
    });
  }

  /** Runs {@code read} against one RocksDB snapshot of the whole store, released afterwards. */
  private <T> T atSnapshot(java.util.function.Function<Snapshot, T> read) {
    enter();
    try {
      Snapshot snapshot = db.getSnapshot();
      try {
        return read.apply(snapshot);
      } finally {
        db.releaseSnapshot(snapshot);
        snapshot.close();
      }
    } finally {
      exit();
    }
  }

  /**
   * Replaces this replica's data of {@code shard} with {@code file} (from {@link #exportReplica} on
   * another node; {@code null}: empty) and starts its log over at {@code offset}. What it held is
   * trashed, as for a move. A crash in between leaves the shard empty with its log at 0 (see
   * {@link ReplicaLogs}), never a mix.
   */
  @Override
  public void installReplica(ShardRef shard, Path file, long offset, long epoch) {
    replicaLogs.beginInstall(shard);
    ingest(shard, file);
    replicaLogs.reset(shard, offset, epoch);
  }

  private ExportStats exportAt(Snapshot snapshot, ShardRef shard, Path file, byte[] keyPrefix, Options writerOptions) {
    long entries = 0;
    long live = 0;
    long bytes = 0;
    try (Slice bound = new Slice(shard.endKey());
        ReadOptions read = spanRead(shard, bound).setSnapshot(snapshot).setFillCache(false);
        RocksIterator it = db.newIterator(read);
        EnvOptions env = new EnvOptions();
        SstFileWriter writer = new SstFileWriter(env, writerOptions)) {
      it.seek(shard.startKey());
      if (it.isValid()) {
        writer.open(file.toString());
        for (; it.isValid(); it.next()) {
          byte[] key = it.key();
          byte[] raw = it.value();
          writer.put(keyPrefix.length == 0 ? key : concat(keyPrefix, key), raw);
          entries++;
          bytes += key.length + raw.length;
          if (raw[0] != TOMBSTONE && !shard.isReserved(key)) {
            live++;
          }
        }
        writer.finish();
      }
      checkIterator(it, shard);
      return new ExportStats(entries, live, bytes);
    } catch (RocksDBException e) {
      throw new StorageException("exporting shard " + shard + " failed: " + e.getMessage(), e);
    }
  }

  static byte[] concat(byte[] a, byte[] b) {
    return ShardRef.concat(a, b);
  }

  private static byte[] max(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b) >= 0 ? a : b;
  }

  private static byte[] min(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b) <= 0 ? a : b;
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
        // The rows came without their entries (an export holds the span only): they are indexed here,
        // by the definitions as they are now — read after the ingestion, so an index defined meanwhile
        // is either here or backfilled over these rows by the node that defined it.
        reindexRange(shard.startKey(), shard.endKey(), null);
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
      for (StoredValue v : values) {
        if (!shard.contains(v.storeKey())) {
          throw new IllegalArgumentException("a copied key does not belong to shard " + shard);
        }
      }
      List<ReentrantLock> held = lockKeys(values);
      try (WriteBatch writes = new WriteBatch()) {
        putEffects(writes, values);
        db.write(writeOptions, writes);
      } catch (RocksDBException e) {
        throw new StorageException("writing copied values to shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  @Override
  public List<byte[]> mergeStored(ShardRef shard, List<StoredValue> values) {
    enter();
    try {
      TreeSet<Integer> stripeSet = new TreeSet<>();
      for (StoredValue v : values) {
        if (v.stored() == null || !shard.contains(v.storeKey())) {
          throw new IllegalArgumentException("a merged value is absent or its key does not belong to shard " + shard);
        }
        stripeSet.add(stripeOf(v.storeKey()));
      }
      List<ReentrantLock> held = lock(stripeSet);
      try (WriteBatch writes = new WriteBatch()) {
        List<byte[]> written = new ArrayList<>();
        List<StoredValue> effects = new ArrayList<>();
        for (StoredValue v : values) {
          byte[] raw = read(v.storeKey());
          if (raw == null && !shard.isReserved(v.storeKey())) {
            // Nothing stored: the merged value comes back, above the version floor so that no
            // version repeats. (If the key's tombstone was purged, a delete older than the
            // tombstone grace is undone: a restore is an operator's explicit choice.)
            long floor = versionFloor(shard);
            effects.add(new StoredValue(v.storeKey(), version(v.stored()) > floor ? v.stored() : withVersion(v.stored(), floor + 1)));
            written.add(v.storeKey());
          } else if (raw == null || version(raw) < version(v.stored())) {
            effects.add(v);
            written.add(v.storeKey());
          }
        }
        if (!written.isEmpty()) {
          putEffects(writes, effects);
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

  /** True if the store holds no key of any shard (tombstones and the store's own keys count). */
  public boolean isEmpty() {
    enter();
    try (ReadOptions read = new ReadOptions().setTotalOrderSeek(true).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      it.seekToFirst();
      boolean empty = !it.isValid();
      checkIterator(it, null);
      return empty;
    } finally {
      exit();
    }
  }

  /**
   * Every shard this store holds any key of (tombstones count), in key order. {@code tables} names
   * the tables the caller knows by id (the map's): an ordered table's shards are found by their
   * spans in it, and whatever is stored under an id it does not name comes back as one {@link
   * ShardRef#wholeTable} ref.
   */
  public List<ShardRef> storedShards(java.util.function.LongFunction<io.shardwise.core.map.Table> tables) {
    enter();
    try {
      List<ShardRef> out = new ArrayList<>();
      try (ReadOptions read = new ReadOptions().setTotalOrderSeek(true).setFillCache(false);
          RocksIterator it = db.newIterator(read)) {
        it.seekToFirst();
        while (it.isValid()) {
          byte[] key = it.key();
          long tableId = tableIdOf(key);
          if (key.length >= ShardRef.BUCKET_PREFIX && key[8] == 0) {
            ShardRef bucket = ShardRef.ofBucketKey(key); // a shard-number prefix
            out.add(bucket);
            it.seek(bucket.endKey());
            continue;
          }
          io.shardwise.core.map.Table table = tables.apply(tableId);
          ShardRef rest = ShardRef.wholeTable(tableId);
          if (table != null && ShardRef.of(table, table.shards().get(0).id().number()).layout() != ShardRef.Layout.BUCKET) {
            for (var s : table.shards()) {
              ShardRef ref = ShardRef.of(table, s.id().number());
              if (holdsAny(ref)) {
                out.add(ref);
              }
            }
          } else {
            out.add(rest); // stored under a table id the caller does not know in this layout
          }
          it.seek(rest.endKey());
        }
        checkIterator(it, null);
      }
      return out;
    } finally {
      exit();
    }
  }

  private static long tableIdOf(byte[] storeKey) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (i < storeKey.length ? storeKey[i] & 0xff : 0);
    }
    return v;
  }

  /**
   * Options to iterate within one shard's span up to {@code bound} (its end, or lower): a bucket
   * shard is one fixed-length prefix, so prefix seeks (and bloom filters) serve it; an ordered
   * shard's span crosses prefixes, so it is read in total order.
   */
  private static ReadOptions spanRead(ShardRef shard, Slice bound) {
    ReadOptions read = new ReadOptions().setIterateUpperBound(bound);
    return shard.layout() == ShardRef.Layout.BUCKET ? read.setPrefixSameAsStart(true) : read.setTotalOrderSeek(true);
  }

  /**
   * Live entries of {@code shard} with keys in {@code [from, to)} ({@code to == null}: to the end of
   * the shard), in unsigned key order, at most {@code limit} of them, and the transactions' intents
   * on keys of the range the page covers ({@link ScanPage#locked}).
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
      List<ScanPage.Locked> locked = new ArrayList<>();
      // The bounds, clamped to the span: an ordered shard's neighbours lie right beside it.
      byte[] lower = from.length == 0 ? shard.startKey() : max(shard.storeKey(from), shard.startKey());
      byte[] upper = to == null ? shard.endKey() : min(shard.storeKey(to), shard.endKey());
      if (Arrays.compareUnsigned(lower, upper) >= 0) {
        return new ScanPage(out, null);
      }
      // One snapshot for the rows and every intent: what the page says held at one moment.
      Snapshot snapshot = db.getSnapshot();
      byte[] resumeFrom = null;
      try (Slice bound = new Slice(upper);
          ReadOptions read = spanRead(shard, bound).setSnapshot(snapshot);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(lower); it.isValid(); it.next()) {
          byte[] storeKey = it.key();
          if (shard.isIntent(storeKey)) {
            lockedIn(shard, storeKey, it.value(), lower, upper, locked);
            continue;
          }
          byte[] raw = it.value();
          if (raw[0] == TOMBSTONE || shard.isReserved(storeKey)) {
            continue;
          }
          byte[] key = shard.userKey(storeKey);
          if (out.size() == limit) {
            resumeFrom = key;
            break;
          }
          out.add(new StoredEntry(key, Arrays.copyOfRange(raw, HEADER, raw.length), version(raw)));
        }
        checkIterator(it, shard);
        lockedInLastPartition(shard, snapshot, lower, resumeFrom != null ? resumeFrom : to, locked);
      } finally {
        db.releaseSnapshot(snapshot);
        snapshot.close();
      }
      return new ScanPage(out, resumeFrom, locked);
    } finally {
      exit();
    }
  }

  /**
   * Adds the intent stored at {@code storeKey} if its key lies in {@code [lower, upper)} (store keys:
   * in the order of the shard's layout, which for hashes is not the keys' own order).
   */
  private static void lockedIn(ShardRef shard, byte[] storeKey, byte[] raw, byte[] lower, byte[] upper, List<ScanPage.Locked> locked) {
    byte[] key = shard.keyOfIntent(storeKey);
    byte[] at = shard.storeKey(key);
    if (Arrays.compareUnsigned(at, lower) >= 0 && Arrays.compareUnsigned(at, upper) < 0) {
      locked.add(new ScanPage.Locked(key, Intent.decode(raw, HEADER)));
    }
  }

  /**
   * A partition's intents lie after all its keys ({@link ShardRef#intentKey}), so a scan that ends
   * inside a partition ({@code end} has a partition key and a tag: it is a key of that partition, or
   * just past all of them) has not passed the intents on that partition's keys below {@code end}.
   * Reads them with a seek of their own, keeping those of keys at or above {@code scanStart} (a store key).
   */
  private void lockedInLastPartition(ShardRef shard, Snapshot snapshot, byte[] scanStart, byte[] end, List<ScanPage.Locked> locked) {
    byte[][] range = end == null ? null : shard.intentsBelow(end);
    if (range == null) {
      return;
    }
    byte[] endAt = min(shard.storeKey(end), shard.endKey());
    byte[] lower = max(range[0], shard.startKey());
    byte[] upper = min(range[1], shard.endKey());
    if (Arrays.compareUnsigned(lower, upper) >= 0) {
      return;
    }
    try (Slice bound = new Slice(upper);
        ReadOptions read = spanRead(shard, bound).setSnapshot(snapshot);
        RocksIterator it = db.newIterator(read)) {
      for (it.seek(lower); it.isValid(); it.next()) {
        if (shard.isIntent(it.key())) {
          lockedIn(shard, it.key(), it.value(), scanStart, endAt, locked);
        }
      }
      checkIterator(it, shard);
    }
  }

  @Override
  public List<StoredValue> txnRecords(ShardRef shard, int limit) {
    enter();
    try {
      List<StoredValue> out = new ArrayList<>();
      try (Slice bound = new Slice(shard.endKey());
          ReadOptions read = spanRead(shard, bound);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(shard.startKey()); it.isValid() && out.size() < limit; it.next()) {
          if (shard.isTxnRecord(it.key())) {
            byte[] raw = it.value();
            out.add(new StoredValue(it.key(), Arrays.copyOfRange(raw, HEADER, raw.length)));
          }
        }
        checkIterator(it, shard);
      }
      return out;
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
      try (Slice bound = new Slice(shard.endKey());
          ReadOptions read = spanRead(shard, bound);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(shard.startKey()); it.isValid(); it.next()) {
          byte[] raw = it.value();
          if (raw[0] != TOMBSTONE && !shard.isReserved(it.key())) {
            keys++;
            bytes += it.key().length - shard.prefixLength() + raw.length - HEADER;
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

  /**
   * RocksDB's estimate of the bytes {@code shard}'s span takes, in files and in memtables, read
   * from indexes and memtable statistics without a scan: cheap enough to ask for every shard every
   * few seconds. Compressed, and counting tombstones and older versions not yet compacted away.
   */
  public long approximateBytes(ShardRef shard) {
    enter();
    try {
      return approximateBytes(shard.startKey(), shard.endKey());
    } finally {
      exit();
    }
  }

  /**
   * Where a size split puts the upper half's start: a partition key (range) or a hash (hashrange),
   * with the live bytes below it and in the whole shard.
   */
  public record SplitPoint(byte[] partitionKey, long hash, long bytesBelow, long bytes, long keys) {}

  /**
   * The point that splits a range or hashrange shard in two halves of about equal live bytes: the
   * first partition key (hash) at which the bytes below it reach half, or the last one before if the
   * half falls in the shard's last partition. Never inside one partition key, which always stays
   * whole. Empty when the shard is empty or holds a single partition key (hash): that is a hot or
   * large key, not a split. Reads the shard twice (its size, then up to the half), as CockroachDB's
   * split-key search does.
   *
   * @throws IllegalArgumentException for a shard of a strategy that does not split
   */
  public java.util.Optional<SplitPoint> sizeSplitPoint(ShardRef shard) {
    return sizeSplitPoints(shard, 2, true).stream().findFirst();
  }

  /** RocksDB's estimate of the bytes stored in {@code [from, to)}, in files and memtables; the caller has entered. */
  private long approximateBytes(byte[] from, byte[] to) {
    try (Slice start = new Slice(from);
        Slice end = new Slice(to)) {
      return db.getApproximateSizes(List.of(new org.rocksdb.Range(start, end)), org.rocksdb.SizeApproximationFlag.INCLUDE_FILES,
          org.rocksdb.SizeApproximationFlag.INCLUDE_MEMTABLES)[0];
    }
  }

  /**
   * The points that cut a range or hashrange shard into {@code parts} pieces of about equal live
   * bytes: point {@code i} is the first partition key (hash) at which the bytes below it reach
   * {@code i / parts} of the shard's. Never inside one partition key, so there are fewer points when
   * a few partitions hold most of the bytes (none for an empty shard or a single partition). Reads
   * the shard twice: its size, then up to the last point.
   *
   * @param parts 2 or more
   * @throws IllegalArgumentException for a shard of a strategy that does not split
   */
  public List<SplitPoint> sizeSplitPoints(ShardRef shard, int parts) {
    return sizeSplitPoints(shard, parts, false);
  }

  /** {@code lastBoundary}: with one point asked and none past its share, the last partition boundary before it. */
  private List<SplitPoint> sizeSplitPoints(ShardRef shard, int parts, boolean lastBoundary) {
    if (shard.layout() != ShardRef.Layout.KEY && shard.layout() != ShardRef.Layout.HASH) {
      throw new IllegalArgumentException("only range and hashrange shards split; shard " + shard + " is laid out as " + shard.layout());
    }
    if (parts < 2) {
      throw new IllegalArgumentException("a shard is cut into 2 or more parts, not " + parts);
    }
    ShardStats stats = stats(shard);
    List<SplitPoint> points = new ArrayList<>();
    enter();
    try (Slice bound = new Slice(shard.endKey());
        ReadOptions read = spanRead(shard, bound).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      long below = 0;
      byte[] previous = null;
      byte[] boundary = null;
      long boundaryBelow = 0;
      for (it.seek(shard.startKey()); it.isValid() && points.size() < parts - 1; it.next()) {
        byte[] raw = it.value();
        if (raw[0] == TOMBSTONE || shard.isReserved(it.key())) {
          continue;
        }
        byte[] unit = shard.placementKeyOfStored(it.key());
        if (previous != null && !Arrays.equals(unit, previous)) {
          if (below >= stats.bytes() * (points.size() + 1) / parts) {
            points.add(splitPoint(shard, unit, below, stats));
          }
          boundary = unit;
          boundaryBelow = below;
        }
        previous = unit;
        below += it.key().length - shard.prefixLength() + raw.length - HEADER;
      }
      checkIterator(it, shard);
      if (points.isEmpty() && lastBoundary && boundary != null) {
        points.add(splitPoint(shard, boundary, boundaryBelow, stats));
      }
      return points;
    } finally {
      exit();
    }
  }

  private static SplitPoint splitPoint(ShardRef shard, byte[] unit, long below, ShardStats stats) {
    return shard.layout() == ShardRef.Layout.HASH
        ? new SplitPoint(null, java.nio.ByteBuffer.wrap(unit).getLong(), below, stats.bytes(), stats.keys())
        : new SplitPoint(unit, 0, below, stats.bytes(), stats.keys());
  }

  @Override
  public boolean holdsAny(ShardRef shard) {
    enter();
    try (Slice bound = new Slice(shard.endKey());
        ReadOptions read = spanRead(shard, bound).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      it.seek(shard.startKey());
      boolean any = it.isValid();
      checkIterator(it, shard);
      return any;
    } finally {
      exit();
    }
  }

  /** Removes every key of {@code shard}, tombstones included, with one range deletion. */
  @Override
  public void drop(ShardRef shard) {
    enter();
    try {
      // The data and the shard's replication log (if it kept one) in one batch: never one without the other.
      try (WriteBatch batch = new WriteBatch()) {
        unindexRange(batch, shard.startKey(), shard.endKey());
        batch.deleteRange(shard.startKey(), shard.endKey());
        replicaLogs.forgetIn(batch, shard);
        db.write(writeOptions, batch);
        replicaLogs.forgotten(shard);
      } catch (RocksDBException e) {
        throw new StorageException("dropping shard " + shard + " failed: " + e.getMessage(), e);
      }
    } finally {
      exit();
    }
  }

  // ------------------------------------------------------------------ local secondary indexes

  /**
   * Puts {@code effects} into {@code writes} with the index entry changes they make ({@link
   * LocalIndexes#maintain}). The caller holds the keys' row locks until the batch is written.
   */
  void putEffects(WriteBatch writes, List<StoredValue> effects) throws RocksDBException {
    for (StoredValue v : effects) {
      if (v.stored() == null) {
        writes.delete(v.storeKey());
      } else {
        writes.put(v.storeKey(), v.stored());
      }
    }
    indexes.maintain(writes, effects, this::read);
  }

  /** Takes the row locks of {@code values}' keys, in stripe order. */
  List<ReentrantLock> lockKeys(List<StoredValue> values) {
    TreeSet<Integer> stripeSet = new TreeSet<>();
    for (StoredValue v : values) {
      stripeSet.add(stripeOf(v.storeKey()));
    }
    return lock(stripeSet);
  }

  /** The encodings of {@code t}'s indexed fields in the row stored as {@code raw}; nulls for a tombstone, an absent row or a field not indexed. */
  static byte[][] indexValuesOf(LocalIndexes.TableIndexes t, byte[] raw) {
    if (raw == null || raw[0] == TOMBSTONE) {
      return new byte[t.indexes().size()][];
    }
    try {
      return io.shardwise.proto.Documents.indexValues(Arrays.copyOfRange(raw, HEADER, raw.length), t.paths());
    } catch (io.shardwise.proto.Documents.NotADocumentException e) {
      return new byte[t.indexes().size()][]; // written before the table held documents only: not indexed
    }
  }

  /**
   * Sets which local indexes table {@code tableId} has ({@code local}: from the map; none forgets
   * them, and the entries of every index no longer listed are deleted). Taken while every row lock
   * is held, so each write follows either the old definitions or the new ones, wholly. Returns the
   * ids of the indexes dropped.
   */
  public List<Long> defineIndexes(io.shardwise.core.map.Table table) {
    List<io.shardwise.core.doc.IndexDef> local = table.indexes().stream()
        .filter(i -> i.scope() == io.shardwise.core.doc.IndexDef.Scope.LOCAL).toList();
    return defineIndexes(table.id(), ShardRef.of(table, table.shards().get(0).id().number()).prefixLength(), local,
        !table.asyncIndexes().isEmpty());
  }

  /** Forgets the indexes of a table the map no longer has, deleting their entries (its rows go to the trash). */
  public List<Long> forgetIndexes(long tableId) {
    return defineIndexes(tableId, 0, List.of(), false);
  }

  /** The tables this store keeps local indexes for. */
  public java.util.Set<Long> indexedTables() {
    return indexes.all().keySet();
  }

  private List<Long> defineIndexes(long tableId, int prefixLength, List<io.shardwise.core.doc.IndexDef> local, boolean pending) {
    LocalIndexes.TableIndexes before = indexes.of(tableId);
    if (before == null ? local.isEmpty() && !pending
        : before.indexes().equals(local) && before.prefixLength() == prefixLength && before.pending() == pending) {
      return List.of();
    }
    enter();
    try {
      TreeSet<Integer> all = new TreeSet<>();
      for (int i = 0; i < STRIPES; i++) {
        all.add(i);
      }
      List<ReentrantLock> held = lock(all);
      try (WriteBatch batch = new WriteBatch()) {
        List<Long> dropped = indexes.define(batch, tableId, prefixLength, local, pending);
        db.write(writeOptions, batch);
        indexes.defined(tableId, prefixLength, local, pending);
        return dropped;
      } catch (RocksDBException e) {
        throw new StorageException("defining the indexes of table " + tableId + " failed: " + e.getMessage(), e);
      } finally {
        held.forEach(ReentrantLock::unlock);
      }
    } finally {
      exit();
    }
  }

  /** The local indexes this store keeps for table {@code tableId} (none if it keeps none). */
  public List<io.shardwise.core.doc.IndexDef> definedIndexes(long tableId) {
    LocalIndexes.TableIndexes t = indexes.of(tableId);
    return t == null ? List.of() : t.indexes();
  }

  /** Whether this store has indexed every row of table {@code tableId} it holds for index {@code indexId} (its backfill ended). */
  public boolean indexBuilt(long tableId, long indexId) {
    enter();
    try {
      return indexes.built(tableId, indexId);
    } finally {
      exit();
    }
  }

  /** What a backfill did: rows read, entries written. */
  public record Backfill(long rows, long entries) {}

  /** Rows a backfill indexes per batch, each batch under its rows' locks. */
  static final int BACKFILL_BATCH = 512;

  /**
   * Indexes every row of table {@code tableId} this store holds (every shard, leader's or
   * follower's) for each of the table's indexes not yet built here, then records them built. Writes
   * go on meanwhile: each batch of rows is read again and indexed under its rows' locks, so a row
   * written during the backfill ends with exactly its entries. Idempotent; {@code progress} hears
   * the rows done so far.
   */
  public Backfill backfillIndexes(long tableId, java.util.function.LongConsumer progress) {
    enter();
    try {
      LocalIndexes.TableIndexes t = indexes.of(tableId);
      if (t == null) {
        return new Backfill(0, 0);
      }
      List<Long> todo = new ArrayList<>();
      for (io.shardwise.core.doc.IndexDef i : t.indexes()) {
        if (!indexes.built(tableId, i.id())) {
          todo.add(i.id());
        }
      }
      if (todo.isEmpty()) {
        return new Backfill(0, 0);
      }
      byte[] start = java.nio.ByteBuffer.allocate(8).putLong(tableId).array();
      Backfill done = reindexRange(start, io.shardwise.core.doc.IndexValues.successor(start), todo, progress);
      LocalIndexes.TableIndexes after = indexes.of(tableId);
      for (long id : todo) {
        if (after != null && after.position(id) >= 0) {
          indexes.markBuilt(tableId, id);
        }
      }
      return done;
    } catch (RocksDBException e) {
      throw new StorageException("recording the backfill of table " + tableId + " failed: " + e.getMessage(), e);
    } finally {
      exit();
    }
  }

  private Backfill reindexRange(byte[] start, byte[] end, List<Long> only) {
    return reindexRange(start, end, only, n -> { });
  }

  /**
   * Writes the entries of every live row in {@code [start, end)} (one table's keys) for the indexes
   * {@code only} (null: all the table's), a batch of rows at a time, each row read again under its
   * lock. Entries of other values are not touched: writes keep those exact.
   */
  private Backfill reindexRange(byte[] start, byte[] end, List<Long> only, java.util.function.LongConsumer progress) {
    long rows = 0;
    long entries = 0;
    byte[] from = start;
    while (true) {
      LocalIndexes.TableIndexes t = indexes.of(LocalIndexes.tableIdOf(start));
      if (t == null) {
        return new Backfill(rows, entries);
      }
      List<byte[]> keys = new ArrayList<>(BACKFILL_BATCH);
      byte[] next = null;
      try (Slice bound = new Slice(end);
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setFillCache(false);
          RocksIterator it = db.newIterator(read)) {
        for (it.seek(from); it.isValid(); it.next()) {
          byte[] key = it.key();
          if (!ShardRef.isRowKey(key, t.prefixLength()) && !(only == null && t.pending() && ShardRef.isPendingKey(key, t.prefixLength()))) {
            continue;
          }
          if (keys.size() == BACKFILL_BATCH) {
            next = key;
            break;
          }
          keys.add(key);
        }
        checkIterator(it, null);
      }
      if (!keys.isEmpty()) {
        TreeSet<Integer> stripeSet = new TreeSet<>();
        keys.forEach(k -> stripeSet.add(stripeOf(k)));
        List<ReentrantLock> held = lock(stripeSet);
        try (WriteBatch batch = new WriteBatch()) {
          // The definitions as they are under these locks (they change only under every lock): an
          // index dropped meanwhile gets no entry that its drop would not have deleted.
          LocalIndexes.TableIndexes now = indexes.of(t.tableId());
          int[] positions = now == null ? new int[0] : java.util.stream.IntStream.range(0, now.indexes().size())
              .filter(p -> only == null || only.contains(now.indexes().get(p).id())).toArray();
          for (byte[] key : keys) {
            byte[] raw = read(key);
            if (now != null && now.pending() && ShardRef.isPendingKey(key, now.prefixLength())) {
              indexes.pend(batch, now.tableId(), key, raw); // a marker that came with a move's copy
              continue;
            }
            if (raw != null && raw[0] != TOMBSTONE && positions.length > 0) {
              indexes.index(batch, now, positions, key, raw);
              rows++;
            }
          }
          entries += batch.count();
          db.write(writeOptions, batch);
        } catch (RocksDBException e) {
          throw new StorageException("indexing table " + t.tableId() + " failed: " + e.getMessage(), e);
        } finally {
          held.forEach(ReentrantLock::unlock);
        }
        progress.accept(rows);
      }
      if (next == null) {
        return new Backfill(rows, entries);
      }
      from = next;
    }
  }

  /** Deletes, in {@code batch}, the entries of every row stored in {@code [start, end)} (one table's keys). */
  private void unindexRange(WriteBatch batch, byte[] start, byte[] end) throws RocksDBException {
    if (indexes.of(LocalIndexes.tableIdOf(start)) == null) {
      return;
    }
    try (Slice bound = new Slice(end);
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setFillCache(false);
        RocksIterator it = db.newIterator(read)) {
      for (it.seek(start); it.isValid(); it.next()) {
        indexes.unindex(batch, it.key(), it.value());
      }
      checkIterator(it, null);
    }
  }

  /** Deletes the stored keys in {@code [start, end)} and their rows' index entries, in one batch. */
  void deleteRows(byte[] start, byte[] end) throws RocksDBException {
    try (WriteBatch batch = new WriteBatch()) {
      unindexRange(batch, start, end);
      batch.deleteRange(start, end);
      db.write(writeOptions, batch);
    }
  }

  /** The rows whose value in local index {@code indexId} lies in {@code range}. */
  public record IndexProbe(long indexId, io.shardwise.core.doc.IndexValues.Range range) {}

  /**
   * One page of the rows of {@code shard} that any of {@code probes} finds (a union: an OR of
   * conditions on indexed fields), those whose document meets {@code matches}, in store-key order
   * (as a scan's), from {@code from} (inclusive; empty: the shard's start) to {@code to} (exclusive;
   * null: the shard's end), at most {@code limit};
   * entries and rows read at one snapshot. {@code examined} counts the entries read; {@code locked}
   * the intents on candidate rows, as a scan reports them.
   *
   * @throws IllegalStateException if this store does not keep an index a probe names
   */
  public IndexPage indexScan(ShardRef shard, List<IndexProbe> probes, byte[] from, byte[] to, int limit,
      java.util.function.Predicate<byte[]> matches) {
    enter();
    try {
      if (limit < 1) {
        throw new IllegalArgumentException("scan limit must be at least 1, not " + limit);
      }
      LocalIndexes.TableIndexes t = indexes.of(shard.tableId());
      for (IndexProbe p : probes) {
        if (t == null || t.position(p.indexId()) < 0) {
          throw new IllegalStateException("this node keeps no index " + p.indexId() + " of table " + shard.tableId());
        }
      }
      traffic.read(shard);
      byte[] lower = from.length == 0 ? shard.startKey() : max(shard.storeKey(from), shard.startKey());
      byte[] upper = to == null ? shard.endKey() : min(shard.storeKey(to), shard.endKey());
      Candidates candidates = new Candidates(Math.max(4 * limit, 1_024), upper);
      long examined = 0;
      Snapshot snapshot = db.getSnapshot();
      try {
        long[] perProbe = new long[probes.size()];
        for (int i = 0; i < probes.size(); i++) {
          perProbe[i] = candidates(probes.get(i), snapshot, lower, candidates);
          examined += perProbe[i];
        }
        List<StoredEntry> out = new ArrayList<>();
        List<ScanPage.Locked> locked = new ArrayList<>();
        byte[] resumeFrom = null;
        try (ReadOptions rows = new ReadOptions().setSnapshot(snapshot)) {
          for (byte[] storeKey : candidates.keys) {
            byte[] key = shard.userKey(storeKey);
            byte[] intentKey = shard.intentKey(key);
            byte[] lock = intentKey == null ? null : db.get(rows, intentKey);
            if (lock != null) {
              locked.add(new ScanPage.Locked(key, Intent.decode(lock, HEADER)));
            }
            byte[] raw = db.get(rows, storeKey);
            if (raw == null || raw[0] == TOMBSTONE) {
              continue;
            }
            byte[] value = Arrays.copyOfRange(raw, HEADER, raw.length);
            if (!matches.test(value)) {
              continue;
            }
            if (out.size() == limit) {
              resumeFrom = key;
              break;
            }
            out.add(new StoredEntry(key, value, version(raw)));
          }
        }
        if (resumeFrom == null && candidates.dropped != null) {
          resumeFrom = shard.userKey(candidates.dropped); // more rows than a page holds: the next page starts at the first left out
        }
        return new IndexPage(new ScanPage(out, resumeFrom, locked), examined, perProbe);
      } catch (RocksDBException e) {
        throw new StorageException("reading the indexes of shard " + shard + " failed: " + e.getMessage(), e);
      } finally {
        db.releaseSnapshot(snapshot);
        snapshot.close();
      }
    } finally {
      exit();
    }
  }

  /**
   * Adds the store keys of the rows in {@code [lower, upper)} that {@code probe} finds, read at
   * {@code snapshot}; returns the entries read. Within a value, entries lie in store-key order: one
   * seek reaches a shard's first, and past its last the next value is sought.
   */
  private long candidates(IndexProbe probe, Snapshot snapshot, byte[] lower, Candidates out) throws RocksDBException {
    byte[] prefix = LocalIndexes.prefix(LocalIndexes.tableIdOf(lower), probe.indexId());
    long examined = 0;
    try (Slice bound = new Slice(probe.range().endKey(prefix));
        ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setSnapshot(snapshot);
        RocksIterator it = db.newIterator(indexes.column(), read)) {
      it.seek(probe.range().startKey(prefix));
      while (it.isValid()) {
        byte[] entry = it.key();
        int valueEnd = io.shardwise.core.doc.IndexValues.end(entry, prefix.length);
        if (valueEnd < 0) {
          throw new StorageException("index " + probe.indexId() + " holds a damaged entry", null);
        }
        byte[] row = Arrays.copyOfRange(entry, valueEnd, entry.length);
        examined++;
        if (Arrays.compareUnsigned(row, lower) < 0) {
          it.seek(concat(Arrays.copyOf(entry, valueEnd), lower)); // this value's rows of the shard start there
        } else if (Arrays.compareUnsigned(row, out.upper) >= 0) {
          it.seek(io.shardwise.core.doc.IndexValues.successor(Arrays.copyOf(entry, valueEnd))); // the next value
        } else {
          out.add(row);
          it.next();
        }
      }
      it.status();
    }
    return examined;
  }

  /**
   * The store keys of the rows a page through an index may hold, in order: the first {@code cap}
   * found below {@code upper}. When more are found the highest go, and {@code upper} comes down to
   * the first of them ({@code dropped}), where the next page starts: a page's memory is bounded
   * however many rows the indexes find.
   */
  private static final class Candidates {
    final TreeSet<byte[]> keys = new TreeSet<>(Arrays::compareUnsigned);
    final int cap;
    byte[] upper;
    byte[] dropped;

    Candidates(int cap, byte[] upper) {
      this.cap = cap;
      this.upper = upper;
    }

    void add(byte[] storeKey) {
      keys.add(storeKey);
      if (keys.size() > cap) {
        dropped = keys.pollLast();
        upper = dropped;
      }
    }
  }

  /** A page read through an index, and how many index entries it read, in all and per probe (in the probes' order). */
  public record IndexPage(ScanPage page, long examined, long[] perProbe) {}

  /**
   * How this store's entries of table {@code tableId}'s indexes compare with its rows, as the
   * consistency checker reads them: per index, entries a row calls for that are missing, and entries
   * no row calls for. Reads everything: for tests and {@code index check}.
   */
  public Map<Long, IndexCheck> checkIndexes(long tableId) {
    enter();
    try {
      LocalIndexes.TableIndexes t = indexes.of(tableId);
      Map<Long, IndexCheck> out = new java.util.TreeMap<>();
      if (t == null) {
        return out;
      }
      Snapshot snapshot = db.getSnapshot();
      try {
        List<TreeSet<byte[]>> expected = new ArrayList<>();
        t.indexes().forEach(i -> expected.add(new TreeSet<>(Arrays::compareUnsigned)));
        byte[] start = java.nio.ByteBuffer.allocate(8).putLong(tableId).array();
        long rows = 0;
        try (Slice bound = new Slice(io.shardwise.core.doc.IndexValues.successor(start));
            ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setSnapshot(snapshot);
            RocksIterator it = db.newIterator(read)) {
          for (it.seek(start); it.isValid(); it.next()) {
            if (!ShardRef.isRowKey(it.key(), t.prefixLength()) || it.value()[0] == TOMBSTONE) {
              continue;
            }
            rows++;
            byte[][] values = indexValuesOf(t, it.value());
            for (int p = 0; p < values.length; p++) {
              if (values[p] != null) {
                expected.get(p).add(LocalIndexes.entryKey(tableId, t.indexes().get(p).id(), values[p], it.key()));
              }
            }
          }
          checkIterator(it, null);
        }
        for (int p = 0; p < t.indexes().size(); p++) {
          long indexId = t.indexes().get(p).id();
          byte[] prefix = LocalIndexes.prefix(tableId, indexId);
          TreeSet<byte[]> want = expected.get(p);
          long entries = 0;
          long extra = 0;
          try (Slice bound = new Slice(io.shardwise.core.doc.IndexValues.successor(prefix));
              ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setSnapshot(snapshot);
              RocksIterator it = db.newIterator(indexes.column(), read)) {
            for (it.seek(prefix); it.isValid(); it.next()) {
              entries++;
              if (!want.remove(it.key())) {
                extra++;
              }
            }
            checkIterator(it, null);
          }
          out.put(indexId, new IndexCheck(rows, entries, want.size(), extra));
        }
        return out;
      } finally {
        db.releaseSnapshot(snapshot);
        snapshot.close();
      }
    } finally {
      exit();
    }
  }

  // ------------------------------------------------------------------ pending markers

  /** Pending markers written in this store since it opened (they may have been reconciled since): the drainer's hint. */
  public long markersWritten() {
    return indexes.markersWritten();
  }

  /** A row whose changes its table's asynchronous global indexes do not show yet: its encoded key and its marker. */
  public record PendingRow(byte[] key, PendingMarker marker) {}

  /**
   * Up to {@code limit} of {@code shard}'s pending rows, in key order from {@code from} (an encoded
   * key, inclusive; empty: the shard's start), as this store holds them (a leader's store may lag its
   * appended log by a few entries: a marker read a little late is reconciled a little late).
   */
  @Override
  public List<PendingRow> pendingRows(ShardRef shard, byte[] from, int limit) {
    enter();
    try {
      byte[] prefix = LocalIndexes.pendingPrefix(shard.tableId());
      byte[] start = concat(prefix, from.length == 0 ? shard.startKey() : max(shard.startKey(), shard.pendingKey(from)));
      List<PendingRow> out = new ArrayList<>();
      try (Slice bound = new Slice(concat(prefix, shard.endKey()));
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true);
          RocksIterator it = db.newIterator(indexes.column(), read)) {
        for (it.seek(start); it.isValid() && out.size() < limit; it.next()) {
          byte[] markerKey = Arrays.copyOfRange(it.key(), prefix.length, it.key().length);
          out.add(new PendingRow(shard.keyOfPending(markerKey), PendingMarker.decode(it.value(), HEADER)));
        }
        checkIterator(it, shard);
      }
      return out;
    } finally {
      exit();
    }
  }

  /** How many of a shard's rows are pending, and since when the oldest ({@code Long.MAX_VALUE}: none). */
  public record PendingSummary(long rows, long oldestMillis, boolean counted) {}

  /** The most markers {@link #pendingSummary} reads: past that it reports a count of at least as many. */
  static final int PENDING_SUMMARY_LIMIT = 100_000;

  /** {@code shard}'s pending rows, counted (up to {@link #PENDING_SUMMARY_LIMIT}) with the oldest change's time. */
  public PendingSummary pendingSummary(ShardRef shard) {
    enter();
    try {
      byte[] prefix = LocalIndexes.pendingPrefix(shard.tableId());
      long rows = 0;
      long oldest = Long.MAX_VALUE;
      try (Slice bound = new Slice(concat(prefix, shard.endKey()));
          ReadOptions read = new ReadOptions().setIterateUpperBound(bound).setTotalOrderSeek(true).setFillCache(false);
          RocksIterator it = db.newIterator(indexes.column(), read)) {
        for (it.seek(concat(prefix, shard.startKey())); it.isValid() && rows < PENDING_SUMMARY_LIMIT; it.next()) {
          rows++;
          oldest = Math.min(oldest, PendingMarker.decode(it.value(), HEADER).sinceMillis());
        }
        checkIterator(it, shard);
      }
      return new PendingSummary(rows, oldest, rows < PENDING_SUMMARY_LIMIT);
    } finally {
      exit();
    }
  }

  /** The pending marker of the row at {@code key} of {@code shard} as stored here, or null. */
  public PendingMarker pendingMarker(ShardRef shard, byte[] key) {
    byte[] markerKey = shard.pendingKey(key);
    if (markerKey == null) {
      return null;
    }
    enter();
    try {
      byte[] raw = read(markerKey);
      return raw == null ? null : PendingMarker.decode(raw, HEADER);
    } finally {
      exit();
    }
  }

  /** One index in one store: rows of its table, its entries, entries missing for rows, entries with no row. */
  public record IndexCheck(long rows, long entries, long missing, long extra) {
    public boolean exact() {
      return missing == 0 && extra == 0;
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
      throw StorageException.closedStore();
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
      db.flushWal(true); // what the log buffer holds (with unsyncedDieWithProcess), then an fsync
    } catch (RocksDBException e) {
      // Closing anyway: the log of every acknowledged write is already in the OS page cache (or fsynced).
    }
    handles.forEach(ColumnFamilyHandle::close);
    db.close();
    format.close();
    trash.closeOptions();
    sstOptions.close();
    writeOptions.close();
    unsyncedWrites.close();
    trashOptions.close();
    logOptions.close();
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

  /**
   * Locks the stripes in ascending order, as every write takes them, so no two writers wait on each
   * other; returns them for unlocking.
   */
  private List<ReentrantLock> lock(TreeSet<Integer> stripeSet) {
    List<ReentrantLock> held = new ArrayList<>(stripeSet.size());
    for (int stripe : stripeSet) {
      stripes[stripe].lock();
      held.add(stripes[stripe]);
    }
    return held;
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
