package io.shardwise.bench.history;

import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * Measures availability per key while a fault runs: one thread per key writes it again and again
 * (a plain put every {@code interval}) through one shared client, as an application would, and
 * records when each write completed and whether it was acknowledged. Unlike the history clients,
 * whose every operation may wait on the faulty node, a key here waits only on its own owner, so
 * the figures tell "the faulty node's keys" from "everyone else's".
 *
 * <p>It writes its own keys (of a table no history uses), so it constrains no history.
 */
public final class AvailabilityProbe implements AutoCloseable {

  /** One write: when it was sent and answered (System.nanoTime), and whether it was acknowledged. */
  public record Attempt(long invoked, long completed, boolean ok) {}

  private final ShardwiseClient client;
  private final String table;
  private final List<Key> keys;
  private final Duration interval;
  private final List<List<Attempt>> attempts = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private final AtomicBoolean stop = new AtomicBoolean();
  private long started;
  private long stopped;

  public AvailabilityProbe(ShardwiseClient client, String table, List<Key> keys, Duration interval) {
    this.client = client;
    this.table = table;
    this.keys = List.copyOf(keys);
    this.interval = interval;
    for (int i = 0; i < keys.size(); i++) {
      attempts.add(new CopyOnWriteArrayList<>());
    }
  }

  public AvailabilityProbe start() {
    started = System.nanoTime();
    for (int i = 0; i < keys.size(); i++) {
      int k = i;
      Thread t = new Thread(() -> run(k), "availability-probe-" + i);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    return this;
  }

  private void run(int k) {
    long n = 0;
    while (!stop.get()) {
      long invoked = System.nanoTime();
      boolean ok;
      try {
        client.put(table, keys.get(k), Long.toString(n++).getBytes(StandardCharsets.UTF_8));
        ok = true;
      } catch (RuntimeException e) {
        ok = false;
      }
      attempts.get(k).add(new Attempt(invoked, System.nanoTime(), ok));
      LockSupport.parkNanos(interval.toNanos());
    }
  }

  /**
   * Waits (at most {@code timeout}) until each key of {@code indexes} has had a write acknowledged
   * after {@code sinceNanos}; true if all have.
   */
  public boolean awaitAcknowledgedAfter(List<Integer> indexes, long sinceNanos, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (indexes.stream().allMatch(k -> firstAcknowledgedAfter(k, sinceNanos).isPresent())) {
        return true;
      }
      Thread.sleep(20);
    }
    return indexes.stream().allMatch(k -> firstAcknowledgedAfter(k, sinceNanos).isPresent());
  }

  /** Stops the writers and waits for them. */
  public void stop() throws InterruptedException {
    stop.set(true);
    for (Thread t : threads) {
      t.join(Duration.ofSeconds(60).toMillis());
    }
    stopped = System.nanoTime();
  }

  public List<Key> keys() {
    return keys;
  }

  /** Writes of key {@code k} (its index in {@link #keys}) that were not acknowledged. */
  public long failures(int k) {
    return attempts.get(k).stream().filter(a -> !a.ok()).count();
  }

  /** The longest time, from start to stop, in which no write of key {@code k} was acknowledged. */
  public Duration longestGap(int k) {
    long last = started;
    long gap = 0;
    for (Attempt a : attempts.get(k)) {
      if (a.ok()) {
        gap = Math.max(gap, a.completed() - last);
        last = a.completed();
      }
    }
    return Duration.ofNanos(Math.max(gap, stopped - last));
  }

  /**
   * How long after {@code sinceNanos} (System.nanoTime) a write of key {@code k} was first
   * acknowledged; empty if none was.
   */
  public java.util.Optional<Duration> firstAcknowledgedAfter(int k, long sinceNanos) {
    return attempts.get(k).stream().filter(a -> a.ok() && a.completed() >= sinceNanos).findFirst()
        .map(a -> Duration.ofNanos(a.completed() - sinceNanos));
  }

  @Override
  public void close() {
    stop.set(true);
  }
}
