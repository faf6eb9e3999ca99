package io.shardwise.server.storage;

import java.nio.file.Path;
import java.util.List;

/**
 * The storage engine as the shard layer and the move protocol use it: reads and atomic writes of
 * a shard's keys, and the whole-shard operations a move needs. {@link ShardStore} is the engine
 * (RocksDB); the move simulation also runs on an in-memory one. Stored keys are {@link
 * ShardRef#storeKey} of the key; a stored value is the engine's own encoding of a value or a
 * tombstone with its version, copied between engines of the same kind as it is.
 */
public interface ShardEngine {

  /**
   * Which store this is: made once, when the store was first opened, and kept with its data. A
   * wiped or replaced data directory has another id; followers send it with every reply, so a
   * leader notices a follower whose data is not the data it counted on.
   */
  String storeId();

  /** What an export wrote: stored entries (tombstones included), live keys, and bytes. */
  record ExportStats(long entries, long liveKeys, long bytes) {}

  /** A stored key (prefix included) and its stored value ({@code null}: absent). */
  record StoredValue(byte[] storeKey, byte[] stored) {}

  /** The live value of {@code key}, or {@code null} if it is absent or deleted. */
  Versioned get(ShardRef shard, byte[] key);

  /**
   * Live entries of {@code shard} with keys in {@code [from, to)} ({@code to == null}: to the end of
   * the shard), in unsigned key order, at most {@code limit} of them.
   */
  ScanPage scan(ShardRef shard, byte[] from, byte[] to, int limit);

  /**
   * One page of {@code shard}'s rows that local index probes find ({@link ShardStore#indexScan});
   * an engine without indexes refuses.
   */
  default ShardStore.IndexPage indexScan(ShardRef shard, List<ShardStore.IndexProbe> probes, byte[] from, byte[] to, int limit,
      java.util.function.Predicate<byte[]> matches) {
    throw new UnsupportedOperationException("this engine keeps no indexes");
  }

  /** Up to {@code limit} of {@code shard}'s pending rows ({@link ShardStore#pendingRows}); an engine without indexes has none. */
  default List<ShardStore.PendingRow> pendingRows(ShardRef shard, byte[] from, int limit) {
    return List.of();
  }

  /**
   * Applies the mutations atomically: all of them, or none. A mutation whose write id this shard
   * has already applied is answered with its first result and not applied again; the record of a
   * write id is written atomically with the write, inside the shard ({@link
   * ShardStore#requestRecordKey}), so it moves with it.
   *
   * @return per mutation: the new version of a put; for a delete, the tombstone's version if the
   *     key was live and 0 if it was absent (then nothing is written)
   * @throws VersionMismatchException for the first conditional mutation that does not match;
   *     nothing is written
   * @throws IllegalArgumentException if a key or a write id repeats
   */
  long[] apply(List<Mutation> batch) throws VersionMismatchException;

  /**
   * What {@link #apply} would do, without doing it: per mutation the result {@code apply} would
   * give, and the stored values the batch would leave (user keys and write-id records) — a
   * replicated shard's log entry. Nothing is written. The caller keeps other writers off these keys
   * until the effects are written, or the evaluation is stale.
   *
   * @throws VersionMismatchException as {@link #apply}
   * @throws IllegalArgumentException as {@link #apply}
   */
  Evaluation evaluate(List<Mutation> batch) throws VersionMismatchException;

  /**
   * What {@code pending} ({@link #evaluate(List, java.util.function.Function, long)}) answers for a key
   * that an appended entry removes: nothing is stored there once it is applied (no stored value is
   * empty: each has a header). Compared by identity.
   */
  byte[] REMOVED = new byte[0];

  /**
   * {@link #evaluate} as if the stored values {@code pending} gives were already written: for each
   * store key it is asked first, and only where it answers {@code null} does the engine read its
   * own; {@link #REMOVED} means nothing is stored. A replicated shard's leader evaluates against the
   * entries it appended and has not applied yet, so a write never waits for the one before it to be
   * replicated. A key with nothing stored
   * gets a version above {@code versionFloor} too (a replicated table's, kept in the map: {@link
   * io.shardwise.core.map.Replication#versionFloor}).
   */
  Evaluation evaluate(List<Mutation> batch, java.util.function.Function<byte[], byte[]> pending, long versionFloor)
      throws VersionMismatchException;

  /**
   * Up to {@code limit} of {@code shard}'s tombstones written before {@code cutoffMillis}, as stored
   * (key and stored bytes: their versions): what a replicated shard's leader purges through its log.
   */
  List<StoredValue> expiredTombstones(ShardRef shard, long cutoffMillis, int limit);

  /** The version a stored value holds (a value's or a tombstone's). */
  long versionOf(byte[] stored);

  /** The stored bytes of {@code storeKey} ({@code null}: nothing stored), as the engine holds them now. */
  byte[] stored(byte[] storeKey);

  /**
   * Store keys of up to {@code limit} of {@code shard}'s write-id records written before {@code
   * cutoffMillis} (a record answers retries of its write for a while; then it may go). A replicated
   * shard's leader removes them through its log, so that every replica removes the same ones.
   */
  List<byte[]> expiredRequestRecords(ShardRef shard, long cutoffMillis, int limit);

  /**
   * Up to {@code limit} of the transaction records kept in {@code shard} ({@link
   * ShardRef#txnRecordKey}), as stored (their payloads without the engine's header), from the start
   * of the shard: what a purge of records looks at.
   */
  List<StoredValue> txnRecords(ShardRef shard, int limit);

  /** A batch evaluated: the result of each mutation, and the stored values it leaves (none: nothing to write). */
  record Evaluation(long[] results, List<StoredValue> effects) {}

  /** The replication logs of the shards this engine keeps. */
  ReplicaStorage replicaStorage();

  /**
   * Writes {@code shard} as of now (a consistent snapshot) to {@code file}, stored values as they
   * are. No file is created for an empty shard ({@code entries == 0}).
   */
  ExportStats exportShard(ShardRef shard, Path file);

  /** A replica's data as exported, and the offset of its replication log it was applied up to. */
  record ReplicaExport(ExportStats stats, long offset, long epoch) {}

  /**
   * Writes {@code shard}'s data to {@code file} as its replication log has applied it, with the
   * offset and epoch applied, all as of one moment. No file for an empty shard.
   */
  ReplicaExport exportReplica(ShardRef shard, Path file);

  /**
   * Replaces this replica's data of {@code shard} with {@code file} ({@link #exportReplica} on the
   * leader; {@code null}: empty) and starts its log over, empty, at {@code offset}/{@code epoch}.
   * What it held is kept aside (the trash). Crash-safe: interrupted, the shard is left empty with
   * its log at 0, never holding a mix of old and new data.
   */
  void installReplica(ShardRef shard, Path file, long offset, long epoch);

  /**
   * Replaces whatever this engine holds of {@code shard} with {@code file} (made by {@link
   * #exportShard} on another node), moving the file in; {@code file == null}: the shard is empty.
   * What it held of the shard is kept aside (the trash), not deleted.
   */
  void ingest(ShardRef shard, Path file);

  /** The stored values of {@code storeKeys} (from a move's change log), as they are now. */
  List<StoredValue> readStored(List<byte[]> storeKeys);

  /**
   * Writes stored values copied from a move's source into {@code shard}, atomically.
   *
   * @throws IllegalArgumentException if a key is not in {@code shard}; nothing is written
   */
  void writeStored(ShardRef shard, List<StoredValue> values);

  /**
   * Merges stored values (from a trashed copy of {@code shard}) into the shard: each is written
   * only if its version is newer than the key's stored version (tombstones count), so nothing
   * written since is overwritten and nothing deleted since comes back. Atomic.
   *
   * @return the store keys written
   * @throws IllegalArgumentException if a key is not in {@code shard}; nothing is written
   */
  List<byte[]> mergeStored(ShardRef shard, List<StoredValue> values);

  /**
   * Raises {@code shard}'s version floor to the highest version this engine purged from any shard
   * of its table, before an ordered shard serves here (after a split or a merge its start may hold
   * no floor of its own).
   */
  default void inheritFloor(ShardRef shard) {
    inheritFloor(shard, 0);
  }

  /**
   * {@link #inheritFloor(ShardRef)}, with both floors at least {@code atLeast}: a table that goes
   * back to one replica keeps its floor in the data, at least the map's ({@link
   * io.shardwise.core.map.Replication#versionFloor}), from then on.
   */
  void inheritFloor(ShardRef shard, long atLeast);

  /** Removes every key of {@code shard}: the incomplete copy of a move that did not happen. */
  void drop(ShardRef shard);

  /** True if any key lies in {@code shard}'s span here: live, a tombstone, a write-id record or its version floor. */
  boolean holdsAny(ShardRef shard);

  /** True once the engine is closing: long waits (for a map read) give up. */
  boolean isClosed();
}
