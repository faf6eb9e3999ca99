package io.shardwise.server.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * {@link ReplicaStorage} in the store's RocksDB, in a column family of its own ({@value
 * #COLUMN_FAMILY}): entry {@code o} of shard {@code n} of table {@code t} under {@code [0][t][n][o]}
 * (big-endian, so a shard's entries lie in offset order), and the shard's base and applied
 * position under {@code [1][t][n]}. Applying writes the entries' effects into the data and the new
 * applied position here in one RocksDB batch, across both column families.
 *
 * <p>Installing a snapshot replaces the shard's data (an ingestion, which cannot share a batch
 * with this column family) and then starts the log over at the snapshot's offset: a marker under
 * {@code [2][t][n]} (holding the shard's key range), written before the data is touched and removed
 * with the new state, tells a store that opens in between that the shard's data is neither the old
 * nor surely the new: the range is emptied and the log started over at 0 before anything reads it
 * ({@link #recoverInterruptedInstalls}), so the leader sends a snapshot again.
 *
 * <p>Each shard's entries not applied yet are also kept in memory ({@link Tail}, at most {@value
 * #TAIL_MAX_ENTRIES} entries and {@value #TAIL_MAX_BYTES} bytes a shard): a leader sends them to its
 * followers and applies them, a follower applies them, right after they are appended, and reading
 * them back from RocksDB each time (an iterator per follower per message, and one per apply) was a
 * good part of replication's cost. The tail only ever holds entries the log holds, equal to them:
 * it takes entries after they are written, and lets go of entries before they are removed.
 */
final class ReplicaLogs implements ReplicaStorage {

  static final String COLUMN_FAMILY_NAME = "replication";
  static final byte[] COLUMN_FAMILY = COLUMN_FAMILY_NAME.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  private static final byte ENTRY = 0;
  private static final byte STATE = 1;
  private static final byte INSTALLING = 2;
  /** The bytes of a key that name its kind and shard (the rest, if any, is an entry's offset). */
  static final int SHARD_PREFIX = 17;
  static final int TAIL_MAX_ENTRIES = 1024;
  static final long TAIL_MAX_BYTES = 1 << 20;

  private final ShardStore store;
  private final RocksDB db;
  private final ColumnFamilyHandle column;
  private final WriteOptions writeOptions;
  private final WriteOptions applyOptions;

  /** What each shard's log holds: read from RocksDB once, then kept up to date here. */
  private final ConcurrentHashMap<ShardRef, LogState> states = new ConcurrentHashMap<>();
  /** Each shard's unapplied entries, as far as they are in memory. */
  private final ConcurrentHashMap<ShardRef, Tail> tails = new ConcurrentHashMap<>();

  /**
   * @param writeOptions how the store writes (fsync on every write, or not)
   * @param applyOptions how an apply that appends nothing is written: without an fsync of its own,
   *     as what it writes can be applied again from the log after a crash, and the log is written
   *     in order, so any later write that fsyncs (an append, a trim) makes it durable first
   */
  ReplicaLogs(ShardStore store, RocksDB db, ColumnFamilyHandle column, WriteOptions writeOptions, WriteOptions applyOptions) {
    this.store = store;
    this.db = db;
    this.column = column;
    this.writeOptions = writeOptions;
    this.applyOptions = applyOptions;
  }

  private static byte[] shardKey(byte kind, ShardRef shard, int extra) {
    return ByteBuffer.allocate(SHARD_PREFIX + extra).put(kind).putLong(shard.tableId()).putLong(shard.shardNumber()).array();
  }

  private static byte[] entryKey(ShardRef shard, long offset) {
    byte[] key = shardKey(ENTRY, shard, 8);
    ByteBuffer.wrap(key, 17, 8).putLong(offset);
    return key;
  }

  @Override
  public LogState state(ShardRef shard) {
    return states.computeIfAbsent(shard, this::load);
  }

  private LogState load(ShardRef shard) {
    store.enter();
    try {
      byte[] raw = db.get(column, shardKey(STATE, shard, 0));
      long baseOffset = 0;
      long baseEpoch = 0;
      long appliedOffset = 0;
      long appliedEpoch = 0;
      if (raw != null) {
        ByteBuffer in = ByteBuffer.wrap(raw);
        baseOffset = in.getLong();
        baseEpoch = in.getLong();
        appliedOffset = in.getLong();
        appliedEpoch = in.getLong();
      }
      long lastOffset = baseOffset;
      long lastEpoch = baseEpoch;
      try (Slice lower = new Slice(entryKey(shard, 0));
          ReadOptions read = new ReadOptions().setIterateLowerBound(lower);
          RocksIterator it = db.newIterator(column, read)) {
        it.seekForPrev(entryKey(shard, Long.MAX_VALUE));
        if (it.isValid() && it.key().length == 25 && sameShard(it.key(), shard)) {
          lastOffset = ByteBuffer.wrap(it.key(), 17, 8).getLong();
          lastEpoch = ByteBuffer.wrap(it.value(), 0, 8).getLong();
        }
        it.status();
      }
      return new LogState(baseOffset, baseEpoch, lastOffset, lastEpoch, appliedOffset, appliedEpoch);
    } catch (RocksDBException e) {
      throw new StorageException("reading the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  private static boolean sameShard(byte[] key, ShardRef shard) {
    ByteBuffer k = ByteBuffer.wrap(key);
    return k.get() == ENTRY && k.getLong() == shard.tableId() && k.getLong() == shard.shardNumber();
  }

  private static byte[] stateValue(LogState s) {
    return ByteBuffer.allocate(32).putLong(s.baseOffset()).putLong(s.baseEpoch()).putLong(s.appliedOffset()).putLong(s.appliedEpoch())
        .array();
  }

  @Override
  public void append(ShardRef shard, List<LogEntry> entries) {
    appendAndApply(shard, entries, List.of());
  }

  @Override
  public void apply(ShardRef shard, List<LogEntry> entries) {
    appendAndApply(shard, List.of(), entries);
  }

  /** In one RocksDB batch: the entries, the applied ones' effects, and the shard's new applied position. */
  @Override
  public void appendAndApply(ShardRef shard, List<LogEntry> entries, List<LogEntry> applied) {
    if (entries.isEmpty() && applied.isEmpty()) {
      return;
    }
    LogState after = state(shard);
    after = entries.isEmpty() ? after : after.appended(shard, entries);
    after = applied.isEmpty() ? after : after.applied(shard, applied);
    List<ShardEngine.StoredValue> effects = new ArrayList<>();
    for (LogEntry e : applied) {
      effects.addAll(e.effects());
    }
    store.enter();
    // Under the rows' locks: the store derives their index entries from the values these replace.
    List<java.util.concurrent.locks.ReentrantLock> held = effects.isEmpty() ? List.of() : store.lockKeys(effects);
    try (WriteBatch batch = new WriteBatch()) {
      for (LogEntry e : entries) {
        batch.put(column, entryKey(shard, e.offset()), e.encode());
      }
      if (!applied.isEmpty()) {
        store.putEffects(batch, effects);
        batch.put(column, shardKey(STATE, shard, 0), stateValue(after));
      }
      db.write(entries.isEmpty() ? applyOptions : writeOptions, batch);
      states.put(shard, after);
      if (!entries.isEmpty()) {
        tails.computeIfAbsent(shard, s -> new Tail()).append(entries);
      }
      if (!applied.isEmpty()) {
        dropTail(shard, Long.MIN_VALUE, after.appliedOffset()); // read from RocksDB by any follower that still needs them
      }
    } catch (RocksDBException e) {
      throw new StorageException((applied.isEmpty() ? "appending to" : entries.isEmpty() ? "applying" : "appending to and applying")
          + " the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      held.forEach(java.util.concurrent.locks.ReentrantLock::unlock);
      store.exit();
    }
  }

  @Override
  public void truncateAfter(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset >= s.lastOffset()) {
      return;
    }
    LogState after = s.truncated(shard, offset, epochOf(shard, offset));
    dropTail(shard, offset + 1, Long.MAX_VALUE); // before the log loses them
    store.enter();
    try {
      db.deleteRange(column, writeOptions, entryKey(shard, offset + 1), entryKey(shard, Long.MAX_VALUE));
      states.put(shard, after);
    } catch (RocksDBException e) {
      throw new StorageException("truncating the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  @Override
  public List<LogEntry> read(ShardRef shard, long fromOffset, int maxEntries, long maxBytes) {
    List<LogEntry> out = new ArrayList<>();
    LogState s = state(shard);
    if (fromOffset <= s.baseOffset() || fromOffset > s.lastOffset()) {
      return out;
    }
    Tail tail = tails.get(shard);
    if (tail != null && tail.read(fromOffset, maxEntries, maxBytes, out)) {
      return out;
    }
    store.enter();
    try (Slice upper = new Slice(entryKey(shard, Long.MAX_VALUE));
        ReadOptions read = new ReadOptions().setIterateUpperBound(upper);
        RocksIterator it = db.newIterator(column, read)) {
      long bytes = 0;
      for (it.seek(entryKey(shard, fromOffset)); it.isValid() && out.size() < maxEntries && (out.isEmpty() || bytes < maxBytes); it.next()) {
        LogEntry e = LogEntry.decode(ByteBuffer.wrap(it.key(), 17, 8).getLong(), it.value());
        out.add(e);
        bytes += e.bytes();
      }
      it.status();
      return out;
    } catch (RocksDBException e) {
      throw new StorageException("reading the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  @Override
  public long epochOf(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset == s.baseOffset()) {
      return s.baseEpoch();
    }
    if (offset == s.lastOffset()) {
      return s.lastEpoch();
    }
    if (offset < s.baseOffset() || offset > s.lastOffset()) {
      return -1;
    }
    Tail tail = tails.get(shard);
    long cached = tail == null ? -1 : tail.epochOf(offset);
    if (cached >= 0) {
      return cached;
    }
    store.enter();
    try {
      byte[] raw = db.get(column, entryKey(shard, offset));
      return raw == null ? -1 : ByteBuffer.wrap(raw, 0, 8).getLong();
    } catch (RocksDBException e) {
      throw new StorageException("reading the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  @Override
  public void trim(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset <= s.baseOffset()) {
      return;
    }
    LogState after = s.trimmed(shard, offset, epochOf(shard, offset));
    dropTail(shard, Long.MIN_VALUE, offset);
    store.enter();
    try (WriteBatch batch = new WriteBatch()) {
      batch.deleteRange(column, entryKey(shard, 0), entryKey(shard, offset + 1));
      batch.put(column, shardKey(STATE, shard, 0), stateValue(after));
      db.write(writeOptions, batch);
      states.put(shard, after);
    } catch (RocksDBException e) {
      throw new StorageException("trimming the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  @Override
  public void reset(ShardRef shard, long baseOffset, long baseEpoch) {
    LogState after = LogState.at(baseOffset, baseEpoch);
    tails.remove(shard);
    store.enter();
    try {
      writeReset(shard, after);
      states.put(shard, after);
    } catch (RocksDBException e) {
      throw new StorageException("starting the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /** Empties the shard's log and stores {@code state}, ending an install under way, in one batch. */
  private void writeReset(ShardRef shard, LogState state) throws RocksDBException {
    try (WriteBatch batch = new WriteBatch()) {
      batch.deleteRange(column, entryKey(shard, 0), entryKey(shard, Long.MAX_VALUE));
      batch.put(column, shardKey(STATE, shard, 0), stateValue(state));
      batch.delete(column, shardKey(INSTALLING, shard, 0));
      db.write(writeOptions, batch);
    }
  }

  /** Marks the start of an install of {@code shard}'s data ({@link #reset} ends it), durably. */
  void beginInstall(ShardRef shard) {
    byte[] start = shard.startKey();
    byte[] end = shard.endKey();
    byte[] range = ByteBuffer.allocate(8 + start.length + end.length).putInt(start.length).put(start).putInt(end.length).put(end).array();
    tails.remove(shard);
    store.enter();
    try {
      db.put(column, writeOptions, shardKey(INSTALLING, shard, 0), range);
      states.remove(shard); // read again (and found installing) if anything looks before the install ends
    } catch (RocksDBException e) {
      throw new StorageException("starting the install of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /**
   * Empties every shard whose install a crash interrupted, and starts its log over at 0 (called as
   * the store opens, before anything reads). Returns how many there were.
   */
  int recoverInterruptedInstalls() {
    int n = 0;
    byte[] prefix = {INSTALLING};
    try (Slice upper = new Slice(new byte[] {INSTALLING + 1});
        ReadOptions read = new ReadOptions().setIterateUpperBound(upper);
        RocksIterator it = db.newIterator(column, read)) {
      for (it.seek(prefix); it.isValid(); it.next()) {
        ByteBuffer k = ByteBuffer.wrap(it.key());
        k.get();
        long table = k.getLong();
        long number = k.getLong();
        ByteBuffer v = ByteBuffer.wrap(it.value());
        byte[] start = new byte[v.getInt()];
        v.get(start);
        byte[] end = new byte[v.getInt()];
        v.get(end);
        store.deleteRows(start, end);
        try (WriteBatch batch = new WriteBatch()) {
          byte[] stateKey = ByteBuffer.allocate(17).put(STATE).putLong(table).putLong(number).array();
          byte[] entries = ByteBuffer.allocate(17).put(ENTRY).putLong(table).putLong(number).array();
          byte[] entriesEnd = ByteBuffer.allocate(25).put(ENTRY).putLong(table).putLong(number).putLong(Long.MAX_VALUE).array();
          batch.deleteRange(column, entries, entriesEnd);
          batch.put(column, stateKey, stateValue(LogState.EMPTY));
          batch.delete(column, it.key());
          db.write(writeOptions, batch);
        }
        n++;
      }
      it.status();
      return n;
    } catch (RocksDBException e) {
      throw new StorageException("recovering interrupted replica installs failed: " + e.getMessage(), e);
    }
  }

  /** The shard's applied offset and its epoch, as {@code read}'s snapshot sees them ({0, 0} for a shard without a log). */
  long[] appliedAt(ShardRef shard, ReadOptions read) throws RocksDBException {
    byte[] raw = db.get(column, read, shardKey(STATE, shard, 0));
    if (raw == null) {
      return new long[] {0, 0};
    }
    ByteBuffer in = ByteBuffer.wrap(raw);
    in.position(16);
    return new long[] {in.getLong(), in.getLong()};
  }

  @Override
  public void forget(ShardRef shard) {
    tails.remove(shard);
    store.enter();
    try (WriteBatch batch = new WriteBatch()) {
      forgetIn(batch, shard);
      batch.delete(column, shardKey(INSTALLING, shard, 0));
      db.write(writeOptions, batch);
      states.remove(shard);
    } catch (RocksDBException e) {
      throw new StorageException("removing the replication log of shard " + shard + " failed: " + e.getMessage(), e);
    } finally {
      store.exit();
    }
  }

  /**
   * Adds the deletion of {@code shard}'s log to {@code batch}, which the store writes with the
   * deletion of the shard's data ({@link ShardStore#drop}): a replica's data and its log go
   * together, so a node never holds a log that says data is applied which it no longer has. Call
   * {@link #forgotten} once the batch is written.
   */
  void forgetIn(WriteBatch batch, ShardRef shard) throws RocksDBException {
    tails.remove(shard);
    batch.deleteRange(column, entryKey(shard, 0), entryKey(shard, Long.MAX_VALUE));
    batch.delete(column, shardKey(STATE, shard, 0));
    // Not the install marker: an install drops what the replica held before it ingests the
    // snapshot, and the marker must outlive that drop until the install's reset.
  }

  /** The batch of {@link #forgetIn} was written: the cached state goes too. */
  void forgotten(ShardRef shard) {
    states.remove(shard);
  }

  private void dropTail(ShardRef shard, long from, long through) {
    Tail tail = tails.get(shard);
    if (tail != null) {
      tail.drop(from, through);
    }
  }

  /** A shard's latest entries, consecutive, in offset order; bounded (the oldest go first). */
  private static final class Tail {
    private final java.util.ArrayDeque<LogEntry> entries = new java.util.ArrayDeque<>();
    private long bytes;

    synchronized void append(List<LogEntry> appended) {
      if (!entries.isEmpty() && entries.peekLast().offset() + 1 != appended.get(0).offset()) {
        clear(); // not next to what it holds (it let go of entries meanwhile): it holds only consecutive ones
      }
      for (LogEntry e : appended) {
        entries.addLast(e);
        bytes += e.bytes();
      }
      while (entries.size() > TAIL_MAX_ENTRIES || (bytes > TAIL_MAX_BYTES && entries.size() > 1)) {
        bytes -= entries.pollFirst().bytes();
      }
    }

    /** Lets go of the entries from {@code from} through {@code through}, which are at one end. */
    synchronized void drop(long from, long through) {
      while (!entries.isEmpty() && entries.peekFirst().offset() >= from && entries.peekFirst().offset() <= through) {
        bytes -= entries.pollFirst().bytes();
      }
      while (!entries.isEmpty() && entries.peekLast().offset() >= from && entries.peekLast().offset() <= through) {
        bytes -= entries.pollLast().bytes();
      }
    }

    private void clear() {
      entries.clear();
      bytes = 0;
    }

    /** Adds the entries from {@code from} on to {@code out} as a read of RocksDB would; false if it does not hold {@code from}. */
    synchronized boolean read(long from, int maxEntries, long maxBytes, List<LogEntry> out) {
      if (entries.isEmpty() || from < entries.peekFirst().offset() || from > entries.peekLast().offset()) {
        return false;
      }
      long read = 0;
      for (LogEntry e : entries) {
        if (e.offset() < from) {
          continue;
        }
        if (out.size() >= maxEntries || (!out.isEmpty() && read >= maxBytes)) {
          break;
        }
        out.add(e);
        read += e.bytes();
      }
      return true;
    }

    /** The epoch of the entry at {@code offset}, or -1 if it does not hold it. */
    synchronized long epochOf(long offset) {
      if (entries.isEmpty() || offset < entries.peekFirst().offset() || offset > entries.peekLast().offset()) {
        return -1;
      }
      for (java.util.Iterator<LogEntry> it = entries.descendingIterator(); it.hasNext(); ) {
        LogEntry e = it.next();
        if (e.offset() == offset) {
          return e.epoch();
        }
      }
      return -1;
    }
  }
}
