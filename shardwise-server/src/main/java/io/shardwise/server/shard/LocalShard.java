package io.shardwise.server.shard;

import io.shardwise.server.storage.ShardRef;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One shard as this node holds it (CockroachDB and TiKV call this the replica): the epoch at which
 * the node owns it, whether it still serves it, the write fence, and the change log of a move in
 * progress. Every read and write of the shard's data passes through here, so "do I own it" and
 * "write" are one atomic step (design rule 7).
 *
 * <p><b>The fence.</b> A request holds the fence shared while it checks the state and touches the
 * store, and a change of state takes it exclusively: when {@link #pause}, {@link #handOff} or
 * {@link #track} returns, no request that saw the old state is still in flight, and every later
 * one sees the new state. Requests only ever {@code tryLock} the fence — a request on the network
 * thread never waits for it; a busy fence is answered like a paused shard.
 *
 * <p><b>States.</b> {@code SERVING}, optionally with writes (or reads and writes) paused by a move;
 * {@code HANDED_OFF} once a map this node applied gives the shard to another node. A handed-off
 * shard never serves again unless a newer map gives it back ({@link #own}).
 *
 * <p>Thread-safe.
 */
public final class LocalShard {

  /** Whether the node serves the shard. */
  public enum State { SERVING, HANDED_OFF }

  private final ShardRef ref;
  private final ReentrantReadWriteLock fence = new ReentrantReadWriteLock();
  private final ReentrantLock waiters = new ReentrantLock();
  private final Condition opened = waiters.newCondition();
  // Written only under the exclusive fence; volatile for the readers outside it (stats, waiters).
  private volatile long epoch;
  private volatile State state = State.SERVING;
  private volatile boolean writesPaused;
  private volatile boolean readsPaused;
  private volatile ChangeLog log;
  private volatile boolean replicated;

  LocalShard(ShardRef ref, long epoch) {
    this.ref = ref;
    this.epoch = epoch;
  }

  /**
   * True if the shard's table keeps replicas: its writes go through the replication log and its
   * reads wait for the leader's read barrier ({@link ReplicatedData}), never straight to the store.
   */
  public boolean replicated() {
    return replicated;
  }

  /**
   * Sets whether the table keeps replicas. A change takes the fence exclusively: when it returns, no
   * write that began on the other path is still in flight, and a write that checked the flag before
   * and enters after finds it changed ({@link LocalShards#apply} refuses it, and its client retries).
   */
  void replicated(boolean value) {
    if (replicated == value) {
      return;
    }
    fence.writeLock().lock();
    try {
      replicated = value;
    } finally {
      fence.writeLock().unlock();
    }
  }

  public ShardRef ref() {
    return ref;
  }

  /** The shard's epoch in the newest map in which this node owns it. */
  public long epoch() {
    return epoch;
  }

  public State state() {
    return state;
  }

  // ------------------------------------------------------------------ the request side

  /**
   * Enters the fence shared for one request: the caller must call {@link #exit} in a finally.
   *
   * @throws ShardFencedException if the shard is handed off, paused for this kind of request, or
   *     changing state right now; the fence is not held then
   */
  void enter(boolean write) {
    if (!fence.readLock().tryLock()) {
      throw new ShardFencedException(ref, this, "is changing hands");
    }
    String refused = null;
    if (state != State.SERVING) {
      refused = "was handed off to another node";
    } else if (write ? writesPaused : readsPaused) {
      refused = "is paused for a move's cutover";
    }
    if (refused != null) {
      fence.readLock().unlock();
      throw new ShardFencedException(ref, this, refused);
    }
  }

  /** Records a stored key (prefix included) written while inside the fence, for a move in progress (no-op otherwise). */
  void writtenStored(byte[] storeKey) {
    ChangeLog l = log;
    if (l != null) {
      l.record(storeKey);
    }
  }

  /** True while a move's change log records this shard's writes (read inside the fence). */
  boolean tracked() {
    return log != null;
  }

  void exit() {
    fence.readLock().unlock();
  }

  /** Waits until the shard is no longer paused (or no longer served here), at most {@code timeout}. */
  boolean awaitOpen(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    waiters.lock();
    try {
      while (writesPaused && state == State.SERVING) {
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
      waiters.unlock();
    }
  }

  // ------------------------------------------------------------------ state changes (exclusive)

  /**
   * Starts recording every key written to the shard. When this returns, every write that began
   * before is complete (it is in any snapshot taken from now on) and every later write is in the log.
   *
   * @throws IllegalStateException if a move is already tracking the shard, or it is not served here
   */
  public ChangeLog track() {
    fence.writeLock().lock();
    try {
      if (state != State.SERVING) {
        throw new IllegalStateException("shard " + ref + " is not served by this node");
      }
      if (log != null) {
        throw new IllegalStateException("shard " + ref + " is already being moved");
      }
      log = new ChangeLog(ref);
      return log;
    } finally {
      fence.writeLock().unlock();
    }
  }

  /** Pauses writes (and reads too if {@code reads}); when this returns no write is in flight. */
  public void pause(boolean reads) {
    fence.writeLock().lock();
    try {
      writesPaused = true;
      readsPaused |= reads;
    } finally {
      fence.writeLock().unlock();
    }
  }

  /** Ends a move's tracking and pause: the shard serves again, or stays handed off if it was. */
  public void resume() {
    fence.writeLock().lock();
    try {
      log = null;
      writesPaused = false;
      readsPaused = false;
    } finally {
      fence.writeLock().unlock();
    }
    signalOpened();
  }

  /** A map this node applied gives the shard to another node: it is never served here again. */
  void handOff() {
    fence.writeLock().lock();
    try {
      state = State.HANDED_OFF;
    } finally {
      fence.writeLock().unlock();
    }
    signalOpened(); // paused requests go and route again
  }

  /** A map this node applied gives it the shard at {@code newEpoch} (again). */
  void own(long newEpoch) {
    if (state == State.SERVING && epoch == newEpoch) {
      return;
    }
    fence.writeLock().lock();
    try {
      epoch = Math.max(epoch, newEpoch);
      state = State.SERVING;
    } finally {
      fence.writeLock().unlock();
    }
  }

  private void signalOpened() {
    waiters.lock();
    try {
      opened.signalAll();
    } finally {
      waiters.unlock();
    }
  }

  @Override
  public String toString() {
    return ref + "@" + epoch + " " + state + (writesPaused ? (readsPaused ? " (paused)" : " (writes paused)") : "")
        + (log != null ? " (moving)" : "");
  }
}
