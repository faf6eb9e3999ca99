package io.shardwise.server.index;

import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.ErrorInfo;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * The fence that keeps every write of a globally indexed table in step with its index, at the
 * shards that take the writes.
 *
 * <p>A global index's entries live in other shards than its rows, so a write of a row must change
 * them in the same transaction ({@link GlobalIndexes}). A node that plans a write on a map older
 * than the index does not know it must. So a shard's owner takes a write of a document table only
 * inside this fence, and checks there, by its own current map, that the write was planned on a map
 * that has every global index of the table: a plain write (put, delete, batch: planned on none) of
 * such a table, or a transaction's item planned before the table's newest global index, is refused
 * ({@link ErrorInfo.Code#INDEXED_WRITE}, naming the map epoch to catch up to); the node that planned
 * it plans it again on the newer map.
 *
 * <p>The backfill of a new global index must not read a row before the last write planned without
 * the index has landed. {@link #drain} returns once every write that entered the fence before it was
 * called has left; a write entering after reads the newer map. A node calls it after applying a map
 * with a new global index, and reports the index drained here; the controller backfills once every
 * node holding the table's shards has.
 *
 * <p>Thread-safe. Writes hold the read side (shared); {@link #drain} takes the write side for a moment.
 */
public final class GlobalIndexFence {

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Supplier<ShardMap> map;

  /** @param map this node's current map */
  public GlobalIndexFence(Supplier<ShardMap> map) {
    this.map = map;
  }

  /**
   * Runs {@code write}, a write of {@code table} planned on the map of {@code plannedEpoch} (0: a
   * plain write, planned with no index), unless this node's map gives the table a global index newer
   * than that.
   *
   * @throws io.grpc.StatusRuntimeException FAILED_PRECONDITION, {@link ErrorInfo.Code#INDEXED_WRITE}: nothing was written
   */
  public <T> T write(String table, long plannedEpoch, Supplier<T> write) {
    lock.readLock().lock();
    try {
      ShardMap now = map.get();
      Table t = now.table(table).orElse(null);
      long newest = t == null ? 0 : t.newestSyncIndex();
      if (newest > plannedEpoch) {
        throw refused(table, plannedEpoch, newest, now.epoch());
      }
      return write.get();
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Runs {@code step}, a transaction's resolution at this node's shard of a document table, inside
   * the fence without a check (a resolution is never refused: its transaction is decided). So a
   * resolution that began before this node learned of a new global index — its row written without
   * a pending marker, under the old definitions — has landed before {@link #drain} returns, and the
   * index's backfill reads the row it left.
   */
  public <T> T pass(Supplier<T> step) {
    lock.readLock().lock();
    try {
      return step.get();
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Returns once every write that entered the fence before this call has left it. */
  public void drain() {
    lock.writeLock().lock();
    lock.writeLock().unlock();
  }

  /** How a refusal ends: the map epoch to plan again on follows. */
  private static final String REPLAN = "plan it again on map epoch ";

  /**
   * The map epoch a refusal by this fence names, found in the message of a transaction it aborted
   * (the coordinator passes a shard's refusal on in words); 0 if the message is not such a refusal.
   */
  static long replanEpoch(String message) {
    int at = message == null ? -1 : message.indexOf(REPLAN);
    if (at < 0) {
      return 0;
    }
    int from = at + REPLAN.length();
    int to = from;
    while (to < message.length() && Character.isDigit(message.charAt(to))) {
      to++;
    }
    return to == from ? 0 : Long.parseLong(message.substring(from, to));
  }

  private static io.grpc.StatusRuntimeException refused(String table, long plannedEpoch, long newest, long epoch) {
    String what = plannedEpoch == 0 ? "a write planned without its global indexes"
        : "a transaction planned on map epoch " + plannedEpoch + ", before its global index of epoch " + newest;
    return Errors.of(io.grpc.Status.FAILED_PRECONDITION, "table " + table + " has a global index (since map epoch " + newest + "): "
        + what + " is refused; " + REPLAN + epoch,
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.INDEXED_WRITE).setMapEpoch(epoch).build());
  }
}
