package io.shardwise.server.rpc;

import io.shardwise.core.map.ShardMap;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The shard map this process has applied, and a way to wait until it reaches an epoch. Maps only
 * move forward: an older map offered late is ignored. Thread-safe.
 */
public final class AppliedMap {

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition advanced = lock.newCondition();
  private volatile ShardMap current = ShardMap.EMPTY;

  public ShardMap current() {
    return current;
  }

  /** Installs {@code map} if it is newer; returns the map it replaced, or {@code null} if ignored. */
  public ShardMap advance(ShardMap map) {
    lock.lock();
    try {
      if (map.epoch() <= current.epoch()) {
        return null;
      }
      ShardMap previous = current;
      current = map;
      advanced.signalAll();
      return previous;
    } finally {
      lock.unlock();
    }
  }

  /** Waits up to {@code timeout} for a map at {@code epoch} or later; returns the current map. */
  public ShardMap await(long epoch, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    lock.lock();
    try {
      while (current.epoch() < epoch) {
        long left = deadline - System.nanoTime();
        if (left <= 0 || !advanced.await(left, TimeUnit.NANOSECONDS)) {
          break;
        }
      }
      return current;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return current;
    } finally {
      lock.unlock();
    }
  }
}
