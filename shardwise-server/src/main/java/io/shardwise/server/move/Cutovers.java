package io.shardwise.server.move;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.server.coordination.MapStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The cutovers of the moves leaving one node, stored together when they come together: a group
 * commit of the map. A move that reaches its cutover while another one's compare-and-set is on its
 * way waits for it, and the next compare-and-set carries every cutover that queued meanwhile — one
 * map change, one epoch and one refresh for clients instead of one per shard. A plan that moves
 * many small shards (the slots of a table, the arcs a new node takes) cuts them over in a fraction
 * of the map changes; a lone cutover pays nothing extra, since nothing ever lingers for company.
 *
 * <p>Each cutover brings its own check, run against the map inside the compare-and-set (it throws
 * when the shard is no longer this node's to give at the planned epoch). A cutover whose check
 * fails is left out of the change and the others are stored without it; its mover learns that from
 * the map it gets back, exactly as if it had tried alone. If the change does not answer cleanly,
 * every mover of the batch reads the map to learn its own outcome (see {@link ShardMover}).
 *
 * <p>Thread-safe. A thread that asks for a cutover while its own batch is being stored (only the
 * single-threaded move simulation does that, from inside a yield point) stores it alone.
 */
final class Cutovers {

  private final MapStore maps;
  private final Object lock = new Object();
  private final List<Pending> queue = new ArrayList<>();
  private Thread committer;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong cutovers = new AtomicLong();

  private final MoveMetrics metrics;

  Cutovers(MapStore maps, MoveMetrics metrics) {
    this.maps = maps;
    this.metrics = metrics;
  }

  /** One shard to hand over, and what must still hold of the map when it is handed over. */
  private static final class Pending {
    final ShardId shard;
    final NodeId from;
    final NodeId to;
    final Consumer<ShardMap> check;
    boolean done;
    ShardMap stored;
    RuntimeException failure;

    Pending(ShardId shard, NodeId from, NodeId to, Consumer<ShardMap> check) {
      this.shard = shard;
      this.from = from;
      this.to = to;
      this.check = check;
    }

    /** The batch's answer, on the mover's own thread; a failure is wrapped so each mover has its own trace. */
    ShardMap result() {
      if (failure != null) {
        throw new IllegalStateException(failure.getMessage(), failure);
      }
      return stored;
    }
  }

  /**
   * Gives {@code shard} from {@code from} to {@code to} in a compare-and-set of the map, with the
   * other cutovers that are waiting.
   *
   * @param check throws if the map no longer lets the shard move as planned; then this cutover is
   *     not stored (the others may be)
   * @return the map stored by the change this cutover went with (or read by it, if nothing was
   *     stored): the caller decides from it whether the shard changed hands
   * @throws RuntimeException if the change did not answer cleanly: its outcome is then unknown and
   *     only a read of the map tells
   */
  ShardMap cutOver(ShardId shard, NodeId from, NodeId to, Consumer<ShardMap> check) {
    Pending me = new Pending(shard, from, to, check);
    Thread self = Thread.currentThread();
    boolean reentered;
    synchronized (lock) {
      reentered = committer == self;
      if (!reentered) {
        queue.add(me);
        boolean interrupted = false;
        while (committer != null && !me.done) {
          try {
            lock.wait();
          } catch (InterruptedException e) {
            interrupted = true; // the cutover must be decided: the interrupt is kept for the caller
          }
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
        if (me.done) {
          return me.result();
        }
        committer = self;
      }
    }
    if (reentered) {
      commit(List.of(me)); // asked from inside our own batch's change: this one goes alone
      return me.result();
    }
    List<Pending> batch;
    synchronized (lock) {
      batch = List.copyOf(queue); // me among them: nobody took it while no one committed
      queue.clear();
    }
    try {
      commit(batch);
    } finally {
      synchronized (lock) {
        committer = null;
        lock.notifyAll(); // the batch's movers return; the first of the next queue commits it
      }
    }
    return me.result();
  }

  private void commit(List<Pending> batch) {
    try {
      ShardMap stored = maps.updateMap(map -> {
        ShardMapDelta.Builder delta = ShardMapDelta.on(map);
        int included = 0;
        for (Pending p : batch) {
          try {
            p.check.accept(map);
          } catch (RuntimeException refused) {
            continue; // this one is not stored; its mover reads that from the map it gets back
          }
          delta.moveShard(p.shard, p.from, p.to);
          included++;
        }
        return included == 0 ? Optional.empty() : Optional.of(delta.build());
      });
      commits.incrementAndGet();
      cutovers.addAndGet(batch.size());
      metrics.cutOverTogether(batch.size());
      finish(batch, stored, null);
    } catch (RuntimeException e) {
      finish(batch, null, e);
    }
  }

  private void finish(List<Pending> batch, ShardMap stored, RuntimeException failure) {
    synchronized (lock) {
      for (Pending p : batch) {
        p.stored = stored;
        p.failure = failure;
        p.done = true;
      }
    }
  }

  /** Compare-and-sets this node's cutovers were sent in, and the cutovers they carried (for tests). */
  long commits() {
    return commits.get();
  }

  long cutovers() {
    return cutovers.get();
  }

  /** Cutovers queued behind a change in flight (for tests). */
  int waiting() {
    synchronized (lock) {
      return queue.size();
    }
  }
}
