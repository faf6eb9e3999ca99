package io.shardwise.jmh;

import io.grpc.stub.StreamObserver;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.shardwise.server.rpc.RequestMetrics;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What timing a request costs the node: answering a request through the observer the data API
 * hands its handlers ({@code metrics=on}: {@link RequestMetrics#timed}, two clock reads and a timer
 * with a Prometheus histogram) against the bare observer ({@code off}), from 2 threads.
 *
 * <p>Run: {@code java -jar shardwise-jmh/target/benchmarks.jar RequestMetricsBenchmark}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(2)
@State(Scope.Benchmark)
public class RequestMetricsBenchmark {

  @Param({"off", "on"})
  public String metrics;

  private RequestMetrics requests;

  @Setup
  public void setUp() {
    requests = new RequestMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  /** An observer that only hands the answer on, as gRPC's does to its transport. */
  private static StreamObserver<Object> sink(Blackhole bh) {
    return new StreamObserver<>() {
      @Override
      public void onNext(Object value) {
        bh.consume(value);
      }

      @Override
      public void onError(Throwable t) {
        bh.consume(t);
      }

      @Override
      public void onCompleted() {
        bh.consume(this);
      }
    };
  }

  @Benchmark
  public void answer(Blackhole bh) {
    StreamObserver<Object> out = sink(bh);
    StreamObserver<Object> observer = metrics.equals("on") ? requests.timed("get", out) : out;
    observer.onNext(Boolean.TRUE);
    observer.onCompleted();
  }
}
