package io.shardwise.server.rpc;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The data API's requests as meters: {@code shardwise.requests} (a timer with a latency histogram),
 * tagged with the operation ({@code get}, {@code put}, {@code delete}, {@code batch_get},
 * {@code batch_put}, {@code scan}, {@code shard_scan}) and the outcome ({@code ok}, or the gRPC
 * status code in lower case, such as {@code invalid_argument}). A request is timed from its arrival to
 * its answer, forwarding included. Tables and keys are never tags: those are the per-shard meters'.
 *
 * <p>Public only for {@code shardwise-jmh}'s {@code RequestMetricsBenchmark}, which measures its cost.
 */
public final class RequestMetrics {

  private final MeterRegistry registry;
  private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();

  public RequestMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  /** {@code out}, timing the request {@code op} until it is answered. */
  public <R> StreamObserver<R> timed(String op, StreamObserver<R> out) {
    long start = System.nanoTime();
    return new StreamObserver<>() {
      @Override
      public void onNext(R value) {
        out.onNext(value);
      }

      @Override
      public void onError(Throwable t) {
        record(op, Status.fromThrowable(t).getCode().name().toLowerCase(Locale.ROOT), start);
        out.onError(t);
      }

      @Override
      public void onCompleted() {
        record(op, "ok", start);
        out.onCompleted();
      }
    };
  }

  private void record(String op, String outcome, long start) {
    String key = op + ' ' + outcome;
    Timer t = timers.get(key);
    if (t == null) {
      t = timers.computeIfAbsent(key, k -> Timer.builder("shardwise.requests").description("data API requests, from arrival to answer")
          .tag("op", op).tag("outcome", outcome).publishPercentileHistogram().register(registry));
    }
    t.record(System.nanoTime() - start, java.util.concurrent.TimeUnit.NANOSECONDS);
  }
}
