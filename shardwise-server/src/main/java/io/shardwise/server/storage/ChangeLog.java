package io.shardwise.server.storage;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The keys of one shard written since a move began copying it, and whether the shard is paused.
 *
 * <p>The store adds a key after every write to a tracked shard, under that key's lock stripe, so a
 * write either is in the snapshot the copy started from or is in this log. The mover {@link #drain
 * drains} the log and sends the keys' current values to the destination until little is left,
 * pauses writes ({@link ShardStore#freeze}), drains the rest, and cuts over. A key written twice
 * between two drains is sent once, with its latest value.
 *
 * <p>Thread-safe.
 */
public final class ChangeLog {

  private final ShardRef shard;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition opened = lock.newCondition();
  private LinkedHashSet<ByteBuffer> changed = new LinkedHashSet<>();
  private volatile boolean writesPaused;
  private volatile boolean readsPaused;

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

  boolean writesPaused() {
    return writesPaused;
  }

  boolean readsPaused() {
    return readsPaused;
  }

  void pause(boolean reads) {
    writesPaused = true;
    readsPaused |= reads;
  }

  void open() {
    lock.lock();
    try {
      writesPaused = false;
      readsPaused = false;
      opened.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Waits until the shard is no longer paused, at most {@code timeout}; true if it is open. */
  public boolean awaitOpen(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    lock.lock();
    try {
      while (writesPaused) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        opened.await(left, TimeUnit.NANOSECONDS);
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } finally {
      lock.unlock();
    }
  }
}
