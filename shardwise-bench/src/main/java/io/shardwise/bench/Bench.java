package io.shardwise.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Runs one workload against one target, the way YCSB does: a load phase (the records, in
 * batches), a warm-up (the workload, not measured), then the measured run (a number of operations
 * or a duration) with {@code threads} closed-loop callers. Latency per operation type goes to an
 * HdrHistogram {@link Recorder}; a ticker collects the intervals every 250 ms into the totals and
 * into the phase the caller names at that moment (so a run can be cut into before / during / after
 * a rebalance). Failed operations are counted by kind and kept out of the latencies.
 */
public final class Bench {

  /** Records per load batch. */
  static final int LOAD_BATCH = 100;
  private static final long TICK_MILLIS = 250;
  private static final long HIGHEST_MICROS = Duration.ofMinutes(10).toNanos() / 1000;

  /** What to run. {@code operations} 0 means: run for {@code duration}. */
  public record Options(Workload workload, long records, long operations, Duration duration, int threads, int valueSize,
      Workload.Distribution distribution, Duration warmup, long seed, boolean orderedInserts) {

    /** Options with YCSB's default insert order (hashed: key names spread over the key space). */
    public Options(Workload workload, long records, long operations, Duration duration, int threads, int valueSize,
        Workload.Distribution distribution, Duration warmup, long seed) {
      this(workload, records, operations, duration, threads, valueSize, distribution, warmup, seed, false);
    }

    public Options {
      if (records < 1) {
        throw new IllegalArgumentException("--records must be at least 1, not " + records);
      }
      if (operations < 0) {
        throw new IllegalArgumentException("--operations must not be negative, not " + operations);
      }
      if (operations == 0 && (duration == null || duration.isZero() || duration.isNegative())) {
        throw new IllegalArgumentException("give --operations N or a positive --duration");
      }
      if (threads < 1 || threads > 1024) {
        throw new IllegalArgumentException("--threads must be in [1, 1024], not " + threads);
      }
      if (valueSize < 1 || valueSize > 1 << 20) {
        throw new IllegalArgumentException("--value-size must be in [1, 1048576] bytes, not " + valueSize);
      }
      if (warmup.isNegative()) {
        throw new IllegalArgumentException("--warmup must not be negative, not " + warmup);
      }
    }
  }

  /** Latency percentiles of one operation type, in microseconds. */
  public record OpStats(long count, double p50, double p95, double p99, double p999, double max, double mean) {
    static OpStats of(Histogram h) {
      if (h.getTotalCount() == 0) {
        return new OpStats(0, 0, 0, 0, 0, 0, 0);
      }
      return new OpStats(h.getTotalCount(), h.getValueAtPercentile(50), h.getValueAtPercentile(95), h.getValueAtPercentile(99),
          h.getValueAtPercentile(99.9), h.getMaxValue(), h.getMean());
    }
  }

  /** One phase of the measured run: its length, its operations and their latencies. */
  public record Phase(String name, double seconds, long operations, Map<OpType, OpStats> ops, OpStats all) {
    public double throughput() {
      return seconds == 0 ? 0 : operations / seconds;
    }
  }

  /** The load phase. */
  public record Load(long records, double seconds) {
    public double throughput() {
      return seconds == 0 ? 0 : records / seconds;
    }
  }

  /** A whole run. {@code phases} splits {@code run} by the names the phase supplier gave. */
  public record Result(String target, Options options, Load load, double warmupSeconds, long warmupOperations, Phase run,
      List<Phase> phases, Map<String, Long> errors, long notFound) {
    public long errorCount() {
      return errors.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  /** Told about progress about once a second. */
  public interface Listener {
    void progress(String phase, double seconds, long operations, double opsPerSecond, double p99Micros, long errors);

    /** The warm-up is over and the measured run begins (called before its first operation). */
    default void measuring() {}

    Listener NONE = (phase, seconds, operations, opsPerSecond, p99, errors) -> { };
  }

  private final Options options;

  public Bench(Options options) {
    this.options = options;
  }

  /** Loads the records into a prepared target. */
  public Load load(Target target, Listener listener) {
    target.prepare();
    long start = System.nanoTime();
    AtomicLong next = new AtomicLong();
    List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> loaders = new ArrayList<>();
    for (int t = 0; t < options.threads(); t++) {
      SplittableRandom random = new SplittableRandom(options.seed() * 31 + t);
      Thread thread = new Thread(() -> {
        while (failures.isEmpty()) {
          long first = next.getAndAdd(LOAD_BATCH);
          if (first >= options.records()) {
            return;
          }
          List<Map.Entry<String, byte[]>> batch = new ArrayList<>(LOAD_BATCH);
          for (long n = first; n < Math.min(first + LOAD_BATCH, options.records()); n++) {
            batch.add(Map.entry(KeySpace.keyName(n, options.orderedInserts()), value(random)));
          }
          try {
            target.load(batch);
          } catch (RuntimeException e) {
            failures.add(e);
          }
        }
      }, "bench-load-" + t);
      loaders.add(thread);
      thread.start();
    }
    long lastReport = start;
    for (Thread thread : loaders) {
      while (thread.isAlive()) {
        join(thread, 1000);
        long now = System.nanoTime();
        if (now - lastReport >= 1_000_000_000L) {
          lastReport = now;
          long done = Math.min(next.get(), options.records());
          listener.progress("load", (now - start) / 1e9, done, done / ((now - start) / 1e9), 0, failures.size());
        }
      }
    }
    if (!failures.isEmpty()) {
      Throwable first = failures.get(0);
      throw new IllegalStateException("loading " + target.name() + " failed: " + first.getMessage(), first);
    }
    return new Load(options.records(), (System.nanoTime() - start) / 1e9);
  }

  /**
   * Warms up, then runs the workload on a loaded target.
   *
   * @param phase names the phase the run is in at each tick (after the warm-up); {@code () -> "run"}
   *     for a plain run; {@code null} ends the run (whatever --operations or --duration say)
   */
  public Result run(Target target, Load load, Supplier<String> phase, Listener listener) {
    Workload w = options.workload();
    long expectedInserts = options.operations() > 0 ? (long) (options.operations() * w.insert()) : options.records();
    KeySpace keys = new KeySpace(options.records(), expectedInserts, options.distribution());
    Map<OpType, Recorder> recorders = new EnumMap<>(OpType.class);
    for (OpType t : OpType.values()) {
      recorders.put(t, new Recorder(1, HIGHEST_MICROS, 3));
    }
    ConcurrentHashMap<String, LongAdder> errors = new ConcurrentHashMap<>();
    LongAdder notFound = new LongAdder();
    LongAdder warmupOps = new LongAdder();
    AtomicBoolean measuring = new AtomicBoolean(options.warmup().isZero());
    if (measuring.get()) {
      listener.measuring();
    }
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong remaining = new AtomicLong(options.operations() > 0 ? options.operations() : Long.MAX_VALUE);

    List<Thread> workers = new ArrayList<>();
    java.util.concurrent.CountDownLatch finished = new java.util.concurrent.CountDownLatch(options.threads());
    for (int t = 0; t < options.threads(); t++) {
      Random choice = new Random(options.seed() * 1_000_003L + t);
      SplittableRandom values = new SplittableRandom(options.seed() * 7 + t);
      Thread thread = new Thread(() -> {
        try {
          work(target, keys, w, choice, values, measuring, stop, remaining, recorders, errors, notFound, warmupOps);
        } finally {
          finished.countDown();
        }
      }, "bench-" + t);
      workers.add(thread);
    }

    Map<OpType, Histogram> total = new EnumMap<>(OpType.class);
    for (OpType t : OpType.values()) {
      total.put(t, new Histogram(1, HIGHEST_MICROS, 3));
    }
    Map<String, PhaseAccumulator> phases = new LinkedHashMap<>();
    long start = System.nanoTime();
    long warmupEnd = start + options.warmup().toNanos();
    long runStart = measuring.get() ? start : Long.MAX_VALUE;
    long deadline = Long.MAX_VALUE;
    workers.forEach(Thread::start);
    long lastTick = start;
    long lastProgress = start;
    Map<OpType, Histogram> interval = new EnumMap<>(OpType.class);
    String lastPhase = "run";
    while (true) {
      await(finished, TICK_MILLIS); // wakes early when the last worker is done, for an exact end time
      long now = System.nanoTime();
      if (!measuring.get() && now >= warmupEnd) {
        for (Recorder r : recorders.values()) {
          r.reset(); // nothing measured yet; a clean start
        }
        listener.measuring();
        measuring.set(true);
        runStart = now;
        lastTick = now;
        continue;
      }
      if (measuring.get() && options.operations() == 0 && deadline == Long.MAX_VALUE) {
        deadline = runStart + options.duration().toNanos();
      }
      String name = measuring.get() ? phase.get() : null;
      boolean ended = measuring.get() && name == null;
      if (ended) {
        name = lastPhase;
      }
      boolean done = ended || workers.stream().noneMatch(Thread::isAlive) || now >= deadline;
      if (done) {
        stop.set(true);
        workers.forEach(th -> join(th, 0));
        now = System.nanoTime();
      }
      if (measuring.get()) {
        lastPhase = name;
        PhaseAccumulator acc = phases.computeIfAbsent(name, PhaseAccumulator::new);
        long ops = 0;
        for (OpType t : OpType.values()) {
          Histogram h = recorders.get(t).getIntervalHistogram(interval.get(t));
          interval.put(t, h);
          total.get(t).add(h);
          acc.add(t, h);
          ops += h.getTotalCount();
        }
        acc.nanos += now - lastTick;
        acc.operations += ops;
        lastTick = now;
        if (now - lastProgress >= 1_000_000_000L || done) {
          lastProgress = now;
          long all = total.values().stream().mapToLong(Histogram::getTotalCount).sum();
          double seconds = (now - runStart) / 1e9;
          listener.progress(name, seconds, all, seconds == 0 ? 0 : all / seconds, merged(total).getValueAtPercentile(99),
              errors.values().stream().mapToLong(LongAdder::sum).sum());
        }
      } else if (now - lastProgress >= 1_000_000_000L) {
        lastProgress = now;
        listener.progress("warmup", (now - start) / 1e9, warmupOps.sum(), warmupOps.sum() / ((now - start) / 1e9), 0, 0);
      }
      if (done) {
        break;
      }
    }
    long end = System.nanoTime();
    Map<OpType, OpStats> runOps = new EnumMap<>(OpType.class);
    long runCount = 0;
    for (OpType t : OpType.values()) {
      if (total.get(t).getTotalCount() > 0) {
        runOps.put(t, OpStats.of(total.get(t)));
        runCount += total.get(t).getTotalCount();
      }
    }
    Phase run = new Phase("run", (end - runStart) / 1e9, runCount, runOps, OpStats.of(merged(total)));
    List<Phase> phaseList = new ArrayList<>();
    phases.values().forEach(a -> phaseList.add(a.toPhase()));
    Map<String, Long> errorCounts = new java.util.TreeMap<>();
    errors.forEach((k, v) -> errorCounts.put(k, v.sum()));
    double warmupSeconds = Math.min(options.warmup().toNanos(), runStart - start) / 1e9;
    return new Result(target.name(), options, load, warmupSeconds, warmupOps.sum(), run, phaseList, errorCounts, notFound.sum());
  }

  /** One closed-loop caller: picks an operation, runs it, records it, until told to stop. */
  private void work(Target target, KeySpace keys, Workload w, Random choice, SplittableRandom values, AtomicBoolean measuring,
      AtomicBoolean stop, AtomicLong remaining, Map<OpType, Recorder> recorders, ConcurrentHashMap<String, LongAdder> errors,
      LongAdder notFound, LongAdder warmupOps) {
    while (!stop.get()) {
      boolean measured = measuring.get();
      if (measured && remaining.getAndDecrement() <= 0) {
        return;
      }
      OpType type = w.pick(choice.nextDouble());
      long started = System.nanoTime();
      try {
        if (!execute(target, keys, type, choice, values)) {
          notFound.increment();
        }
        long micros = Math.max(1, (System.nanoTime() - started) / 1000);
        if (measured) {
          recorders.get(type).recordValue(Math.min(micros, HIGHEST_MICROS));
        } else {
          warmupOps.increment();
        }
      } catch (RuntimeException e) {
        if (measured) {
          errors.computeIfAbsent(type.id() + ": " + kind(e), k -> new LongAdder()).increment();
        }
      }
    }
  }

  /** Runs one operation; false if a read found nothing. */
  private boolean execute(Target target, KeySpace keys, OpType type, Random choice, SplittableRandom values) {
    switch (type) {
      case READ:
        return target.read(KeySpace.keyName(keys.choose(), options.orderedInserts()));
      case UPDATE:
        target.update(KeySpace.keyName(keys.choose(), options.orderedInserts()), value(values));
        return true;
      case INSERT: {
        long n = keys.nextInsert();
        try {
          target.insert(KeySpace.keyName(n, options.orderedInserts()), value(values));
        } finally {
          keys.acknowledge(n);
        }
        return true;
      }
      case SCAN:
        target.scan(KeySpace.keyName(keys.choose(), options.orderedInserts()), 1 + choice.nextInt(Workload.MAX_SCAN_LENGTH));
        return true;
      case INCREMENT:
        target.increment(KeySpace.keyName(keys.choose(), options.orderedInserts()), 1);
        return true;
      case COUNTER_READ:
        target.counter(KeySpace.keyName(keys.choose(), options.orderedInserts()));
        return true;
      default: {
        String key = KeySpace.keyName(keys.choose(), options.orderedInserts());
        boolean found = target.read(key);
        target.update(key, value(values));
        return found;
      }
    }
  }

  private byte[] value(SplittableRandom random) {
    byte[] v = new byte[options.valueSize()];
    for (int i = 0; i < v.length; i++) {
      v[i] = (byte) ('a' + random.nextInt(26));
    }
    return v;
  }

  /** A failure's kind for the error table: a gRPC status code, or the exception's class. */
  static String kind(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof io.grpc.StatusRuntimeException s) {
        return s.getStatus().getCode().name();
      }
    }
    return e.getClass().getSimpleName();
  }

  private static Histogram merged(Map<OpType, Histogram> byType) {
    Histogram all = new Histogram(1, HIGHEST_MICROS, 3);
    byType.values().forEach(all::add);
    return all;
  }

  private static void await(java.util.concurrent.CountDownLatch latch, long millis) {
    try {
      latch.await(millis, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private static void join(Thread thread, long millis) {
    try {
      thread.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** The histograms and time of one named phase. */
  private static final class PhaseAccumulator {
    final String name;
    final Map<OpType, Histogram> ops = new EnumMap<>(OpType.class);
    long nanos;
    long operations;

    PhaseAccumulator(String name) {
      this.name = name;
    }

    void add(OpType type, Histogram h) {
      if (h.getTotalCount() > 0) {
        ops.computeIfAbsent(type, t -> new Histogram(1, HIGHEST_MICROS, 3)).add(h);
      }
    }

    Phase toPhase() {
      Map<OpType, OpStats> stats = new EnumMap<>(OpType.class);
      ops.forEach((t, h) -> stats.put(t, OpStats.of(h)));
      return new Phase(name, nanos / 1e9, operations, stats, OpStats.of(merged(ops)));
    }
  }
}
