package io.shardwise.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/** Runs one operation over and over on several threads for a set time: the loop of the benches that run by duration. */
final class ForDuration {

  private ForDuration() {}

  /**
   * Runs {@code operation} in a loop on each of {@code threads} threads until {@code duration} has
   * passed (the operation under way then finishes); returns the seconds it took. An operation that
   * throws ends the run and is rethrown.
   */
  static double run(int threads, Duration duration, Runnable operation) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> workers = new ArrayList<>();
      long started = System.nanoTime();
      for (int t = 0; t < threads; t++) {
        workers.add(pool.submit(() -> {
          while (!stop.get()) {
            operation.run();
          }
          return null;
        }));
      }
      Thread.sleep(duration.toMillis());
      stop.set(true);
      for (Future<?> f : workers) {
        f.get();
      }
      return (System.nanoTime() - started) / 1e9;
    } finally {
      stop.set(true);
      pool.shutdownNow();
    }
  }
}
