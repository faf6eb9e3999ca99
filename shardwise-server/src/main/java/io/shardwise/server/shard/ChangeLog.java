package io.shardwise.server.shard;

import io.shardwise.server.storage.ShardRef;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The keys of one shard written since a move began copying it.
 *
 * <p>The {@link LocalShard} adds a key after every write to a tracked shard, still under the
 * shard's fence, so a write either is in the snapshot the copy started from or is in this log.
 * The mover {@link #drain drains} the log and sends the keys' current values to the destination
 * until little is left, pauses writes ({@link LocalShard#pause}), drains the rest, and cuts over.
 * A key written twice between two drains is sent once, with its latest value.
 *
 * <p>Thread-safe.
 */
public final class ChangeLog {

  private final ShardRef shard;
  private final ReentrantLock lock = new ReentrantLock();
  private LinkedHashSet<ByteBuffer> changed = new LinkedHashSet<>();

  ChangeLog(ShardRef shard) {
    this.shard = shard;
  }

  public ShardRef shard() {
    return shard;
  }

  void record(byte[] storeKey) {
    lock.lock();
    try {
      changed.add(ByteBuffer.wrap(storeKey));
    } finally {
      lock.unlock();
    }
  }

  /** Takes every key recorded so far (store keys, prefix included), oldest first; the log is then empty. */
  public List<byte[]> drain() {
    LinkedHashSet<ByteBuffer> taken;
    lock.lock();
    try {
      taken = changed;
      changed = new LinkedHashSet<>();
    } finally {
      lock.unlock();
    }
    List<byte[]> out = new ArrayList<>(taken.size());
    taken.forEach(b -> out.add(b.array()));
    return out;
  }

  /** Keys recorded and not yet drained. */
  public int pending() {
    lock.lock();
    try {
      return changed.size();
    } finally {
      lock.unlock();
    }
  }

}
