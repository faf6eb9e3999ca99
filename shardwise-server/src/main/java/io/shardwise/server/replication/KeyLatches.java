package io.shardwise.server.replication;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Latches on the keys of a leader's writes in flight (CockroachDB's latch manager, simplified): a
 * write evaluates its keys against the shard's data only once no earlier write of those keys is
 * still waiting for its log entry to be applied, so it always reads what the write before it left.
 * Waiting is asynchronous — a future completes when every key is held — so a write waiting for
 * replication holds no thread and no lock. Keys are granted all at once, and in arrival order per
 * key: a later write never overtakes an earlier one that wants one of its keys, so nothing
 * deadlocks and nothing starves.
 *
 * <p>Thread-safe.
 */
final class KeyLatches {

  /** Held keys; release them exactly once. */
  interface Held {
    void release();
  }

  private record Waiter(List<ByteBuffer> keys, CompletableFuture<Held> granted) {}

  private final Set<ByteBuffer> held = new HashSet<>();
  private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();

  /** Completes once every one of {@code keys} (store keys, repeats allowed) is held by the caller. */
  CompletableFuture<Held> acquire(List<byte[]> keys) {
    List<ByteBuffer> wanted = new ArrayList<>(keys.size());
    Set<ByteBuffer> distinct = new HashSet<>();
    for (byte[] k : keys) {
      ByteBuffer b = ByteBuffer.wrap(k.clone());
      if (distinct.add(b)) {
        wanted.add(b);
      }
    }
    Waiter w = new Waiter(wanted, new CompletableFuture<>());
    synchronized (this) {
      if (waiting.isEmpty() && free(wanted, Set.of())) {
        held.addAll(wanted);
      } else {
        waiting.add(w);
        return w.granted();
      }
    }
    w.granted().complete(releaser(wanted));
    return w.granted();
  }

  /** Keys held or waited for right now (for tests). */
  synchronized int size() {
    return held.size() + waiting.size();
  }

  private boolean free(List<ByteBuffer> keys, Set<ByteBuffer> reserved) {
    for (ByteBuffer k : keys) {
      if (held.contains(k) || reserved.contains(k)) {
        return false;
      }
    }
    return true;
  }

  private Held releaser(List<ByteBuffer> keys) {
    boolean[] done = {false};
    return () -> {
      List<Waiter> granted = new ArrayList<>();
      synchronized (this) {
        if (done[0]) {
          return;
        }
        done[0] = true;
        keys.forEach(held::remove);
        // Oldest first; a waiter that cannot go yet keeps its keys from the ones behind it.
        Set<ByteBuffer> reserved = new HashSet<>();
        for (Iterator<Waiter> it = waiting.iterator(); it.hasNext(); ) {
          Waiter w = it.next();
          if (free(w.keys(), reserved)) {
            held.addAll(w.keys());
            granted.add(w);
            it.remove();
          } else {
            reserved.addAll(w.keys());
          }
        }
      }
      for (Waiter w : granted) {
        grant(() -> w.granted().complete(releaser(w.keys())));
      }
    };
  }

  /**
   * Runs a grant, after the one this thread is running if any: a granted write may finish at once
   * and release keys that grant the next, and a queue of writes on one hot key must not become a
   * stack as deep as the queue.
   */
  private static void grant(Runnable r) {
    java.util.ArrayDeque<Runnable> queue = GRANTS.get();
    queue.add(r);
    if (queue.size() > 1) {
      return; // the loop below, further up this thread's stack, runs it
    }
    while (!queue.isEmpty()) {
      try {
        queue.peek().run();
      } finally {
        queue.poll();
      }
    }
  }

  private static final ThreadLocal<java.util.ArrayDeque<Runnable>> GRANTS = ThreadLocal.withInitial(java.util.ArrayDeque::new);
}
