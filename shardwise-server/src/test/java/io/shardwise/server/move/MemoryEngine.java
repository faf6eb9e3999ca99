package io.shardwise.server.move;

import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ReplicaStorage;
import io.shardwise.server.storage.ScanPage;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.storage.Versioned;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The engine's contract ({@link ShardEngine}) in memory, for the move simulation: versions that
 * rise across deletes, write ids answered from a record kept inside the shard, deletes of absent
 * keys that write nothing, exports to a file and ingests that replace the shard. A crash of its
 * node keeps it, as kill -9 keeps RocksDB's data. {@code MoveSimulationTest} runs the same
 * schedules on {@link ShardStore} too, so the two are held to one behaviour.
 *
 * <p>A power loss ({@link #losePower}) of a node that fsyncs its writes ({@code --sync-writes}) is
 * modelled too: the replication log's applies that append nothing skip their fsync ({@link
 * io.shardwise.server.storage.ReplicaStorage#appendAndApply}), every other write is synced, and a
 * synced write makes every earlier one durable (RocksDB's write-ahead log is one file written in
 * order). A power loss undoes a suffix of the unsynced writes since the last synced one. Not
 * thread-safe.
 */
public final class MemoryEngine implements ShardEngine {

  private static final byte VALUE = 0;
  private static final byte TOMBSTONE = 1;
  private static final int HEADER = 9;

  private final TreeMap<byte[], byte[]> data = new TreeMap<>(Arrays::compareUnsigned);
  private final TreeMap<byte[], byte[]> trash = new TreeMap<>(Arrays::compareUnsigned);
  private final String storeId;
  private final java.util.function.LongSupplier wallMillis; // stamps tombstones and write-id records
  // How to undo each write that skipped its fsync since the last one that did not, oldest first.
  private final List<Runnable> unsynced = new ArrayList<>();

  public MemoryEngine() {
    this(java.util.UUID.randomUUID().toString(), System::currentTimeMillis);
  }

  /** An engine whose store id and wall clock a simulation chooses, so that its schedules replay exactly. */
  public MemoryEngine(String storeId, java.util.function.LongSupplier wallMillis) {
    this.storeId = storeId;
    this.wallMillis = wallMillis;
  }

  @Override
  public String storeId() {
    return storeId;
  }

  @Override
  public Versioned get(ShardRef shard, byte[] key) {
    byte[] raw = data.get(shard.storeKey(key));
    return raw == null || raw[0] == TOMBSTONE ? null : new Versioned(Arrays.copyOfRange(raw, HEADER, raw.length), version(raw));
  }

  @Override
  public ScanPage scan(ShardRef shard, byte[] from, byte[] to, int limit) {
    throw new UnsupportedOperationException("the move simulation does not scan");
  }

  @Override
  public long[] apply(List<Mutation> batch) throws VersionMismatchException {
    Evaluation e = evaluate(batch);
    for (StoredValue v : e.effects()) {
      data.put(v.storeKey(), v.stored());
    }
    synced();
    return e.results();
  }

  @Override
  public Evaluation evaluate(List<Mutation> batch) throws VersionMismatchException {
    return evaluate(batch, k -> null, 0);
  }

  /** {@code key}'s stored value as the appended entries ({@code pending}) leave it, else as stored here. */
  private byte[] through(java.util.function.Function<byte[], byte[]> pending, byte[] key) {
    byte[] p = pending.apply(key);
    return p == REMOVED ? null : p != null ? p : data.get(key);
  }

  @Override
  public Evaluation evaluate(List<Mutation> batch, java.util.function.Function<byte[], byte[]> pending, long versionFloor)
      throws VersionMismatchException {
    int n = batch.size();
    TreeSet<byte[]> seen = new TreeSet<>(Arrays::compareUnsigned);
    byte[][] keys = new byte[n][];
    byte[][] records = new byte[n][];
    for (int i = 0; i < n; i++) {
      Mutation m = batch.get(i);
      keys[i] = m.shard().storeKey(m.key());
      if (!seen.add(keys[i])) {
        throw new IllegalArgumentException("key " + i + " of the batch repeats an earlier key");
      }
      if (m.requestId() != null) {
        records[i] = m.shard().recordKey(m.key(), m.requestId());
        if (!seen.add(records[i])) {
          throw new IllegalArgumentException("write id " + i + " of the batch repeats an earlier write id");
        }
      }
    }
    long[] versions = new long[n];
    List<StoredValue> effects = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Mutation m = batch.get(i);
      if (m.txn() != null) {
        throw new UnsupportedOperationException("the move simulation's engine keeps no transactions");
      }
      byte[] record = records[i] == null ? null : through(pending, records[i]);
      if (record != null) {
        versions[i] = ByteBuffer.wrap(record, HEADER, 8).getLong(); // a repeat: answered, not applied
        continue;
      }
      byte[] raw = through(pending, keys[i]);
      long stored = raw == null ? versionFloor : version(raw);
      boolean live = raw != null && raw[0] != TOMBSTONE;
      long current = live ? stored : 0;
      if (!Mutation.meets(m.expectedVersion(), current)) {
        throw new VersionMismatchException(m.expectedVersion(), current, i);
      }
      byte[] value = m.valueGiven(raw, live, HEADER);
      if (value == null && !live) {
        versions[i] = 0;
      } else {
        versions[i] = stored + 1;
        effects.add(new StoredValue(keys[i], value == null ? tombstone(versions[i], wallMillis.getAsLong())
            : encode(value, versions[i])));
      }
      if (records[i] != null) {
        effects.add(new StoredValue(records[i], encode(ByteBuffer.allocate(16).putLong(versions[i]).putLong(wallMillis.getAsLong())
            .array(), 1)));
      }
    }
    return new Evaluation(versions, effects);
  }

  @Override
  public List<byte[]> expiredRequestRecords(ShardRef shard, long cutoffMillis, int limit) {
    List<byte[]> out = new ArrayList<>();
    for (java.util.Map.Entry<byte[], byte[]> e : range(data, shard).entrySet()) {
      if (out.size() < limit && shard.isReserved(e.getKey()) && shard.isRecord(e.getKey())
          && ByteBuffer.wrap(e.getValue(), HEADER + 8, 8).getLong() < cutoffMillis) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  private final MemoryReplicaStorage replicas = new MemoryReplicaStorage(this);

  @Override
  public io.shardwise.server.storage.ReplicaStorage replicaStorage() {
    return replicas;
  }

  /**
   * Writes stored values as they are ({@code null}: removed), for {@link MemoryReplicaStorage}'s
   * applies (which say whether the write is synced); returns how to undo it.
   */
  Runnable write(List<StoredValue> values) {
    List<StoredValue> before = new ArrayList<>(values.size());
    for (StoredValue v : values) {
      before.add(new StoredValue(v.storeKey(), data.get(v.storeKey())));
      if (v.stored() == null) {
        data.remove(v.storeKey());
      } else {
        data.put(v.storeKey(), v.stored());
      }
    }
    return () -> {
      for (int i = before.size() - 1; i >= 0; i--) {
        StoredValue v = before.get(i);
        if (v.stored() == null) {
          data.remove(v.storeKey());
        } else {
          data.put(v.storeKey(), v.stored());
        }
      }
    };
  }

  /** A write that fsyncs the log: it and every write before it survive a power loss. */
  void synced() {
    unsynced.clear();
  }

  /** A write that skipped its fsync: a power loss may undo it ({@code undo}), and every unsynced one after it. */
  void unsynced(Runnable undo) {
    unsynced.add(undo);
  }

  /** Writes a power loss would undo now: those since the last synced write. */
  public int unsyncedWrites() {
    return unsynced.size();
  }

  /**
   * A power loss: keeps the oldest {@code kept} of the {@link #unsyncedWrites} (the log buffer had
   * written them out) and undoes the others, newest first.
   */
  public void losePower(int kept) {
    if (kept < 0 || kept > unsynced.size()) {
      throw new IllegalArgumentException("kept " + kept + " of " + unsynced.size() + " unsynced writes");
    }
    for (int i = unsynced.size() - 1; i >= kept; i--) {
      unsynced.get(i).run();
    }
    unsynced.clear();
  }

  @Override
  public ExportStats exportShard(ShardRef shard, Path file) {
    NavigableMap<byte[], byte[]> range = range(data, shard);
    if (range.isEmpty()) {
      return new ExportStats(0, 0, 0);
    }
    long live = 0;
    long bytes = 0;
    try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(Files.newOutputStream(file)))) {
      out.writeInt(range.size());
      for (var e : range.entrySet()) {
        write(out, e.getKey());
        write(out, e.getValue());
        bytes += e.getKey().length + e.getValue().length;
        if (e.getValue()[0] != TOMBSTONE && !shard.isReserved(e.getKey())) {
          live++;
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new ExportStats(range.size(), live, bytes);
  }

  @Override
  public ReplicaExport exportReplica(ShardRef shard, Path file) {
    ReplicaStorage.LogState s = replicas.state(shard);
    return new ReplicaExport(exportShard(shard, file), s.appliedOffset(), s.appliedEpoch());
  }

  @Override
  public void installReplica(ShardRef shard, Path file, long offset, long epoch) {
    ingest(shard, file);
    replicas.reset(shard, offset, epoch); // synced, as ingest is
  }

  @Override
  public void ingest(ShardRef shard, Path file) {
    synced(); // an ingestion's files are synced, and so is the record of it
    NavigableMap<byte[], byte[]> old = range(data, shard);
    trash.putAll(old);
    old.clear();
    if (file == null) {
      return;
    }
    try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(Files.newInputStream(file)))) {
      for (int n = in.readInt(); n > 0; n--) {
        data.put(read(in), read(in));
      }
      Files.delete(file); // moved in, as RocksDB's ingestion moves the file
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public List<StoredValue> readStored(List<byte[]> storeKeys) {
    List<StoredValue> out = new ArrayList<>(storeKeys.size());
    for (byte[] k : storeKeys) {
      out.add(new StoredValue(k, data.get(k)));
    }
    return out;
  }

  @Override
  public void writeStored(ShardRef shard, List<StoredValue> values) {
    for (StoredValue v : values) {
      if (!shard.contains(v.storeKey())) {
        throw new IllegalArgumentException("a copied key does not belong to shard " + shard);
      }
    }
    write(values);
    synced();
  }

  @Override
  public List<byte[]> mergeStored(ShardRef shard, List<StoredValue> values) {
    throw new UnsupportedOperationException("the move simulation does not restore trash");
  }

  @Override
  public void inheritFloor(ShardRef shard, long atLeast) {
    // no floors here: the move simulation never purges a tombstone, and its table does not split
  }

  @Override
  public boolean holdsAny(ShardRef shard) {
    return !range(data, shard).isEmpty();
  }

  @Override
  public void drop(ShardRef shard) {
    range(data, shard).clear();
    synced();
  }

  @Override
  public boolean isClosed() {
    return false;
  }

  private static NavigableMap<byte[], byte[]> range(TreeMap<byte[], byte[]> map, ShardRef shard) {
    return map.subMap(shard.start(), true, shard.end(), false);
  }

  /** A tombstone as the store keeps one: its version, and when the key was deleted. */
  private static byte[] tombstone(long version, long atMillis) {
    byte[] out = encode(ByteBuffer.allocate(8).putLong(atMillis).array(), version);
    out[0] = TOMBSTONE;
    return out;
  }

  @Override
  public List<StoredValue> expiredTombstones(ShardRef shard, long cutoffMillis, int limit) {
    List<StoredValue> out = new ArrayList<>();
    for (java.util.Map.Entry<byte[], byte[]> e : range(data, shard).entrySet()) {
      byte[] raw = e.getValue();
      if (out.size() < limit && !shard.isReserved(e.getKey()) && raw[0] == TOMBSTONE && raw.length >= HEADER + 8
          && ByteBuffer.wrap(raw, HEADER, 8).getLong() < cutoffMillis) {
        out.add(new StoredValue(e.getKey(), raw));
      }
    }
    return out;
  }

  @Override
  public long versionOf(byte[] stored) {
    return version(stored);
  }

  @Override
  public byte[] stored(byte[] storeKey) {
    return data.get(storeKey);
  }

  private static byte[] encode(byte[] value, long version) {
    byte[] v = value == null ? new byte[0] : value;
    return ByteBuffer.allocate(HEADER + v.length).put(value == null ? TOMBSTONE : VALUE).putLong(version).put(v).array();
  }

  private static long version(byte[] raw) {
    return ByteBuffer.wrap(raw, 1, 8).getLong();
  }

  private static void write(DataOutputStream out, byte[] b) throws IOException {
    out.writeInt(b.length);
    out.write(b);
  }

  private static byte[] read(DataInputStream in) throws IOException {
    byte[] b = new byte[in.readInt()];
    in.readFully(b);
    return b;
  }

  @Override
  public List<StoredValue> txnRecords(ShardRef shard, int limit) {
    return List.of(); // the move simulation keeps no transactions
  }
}
