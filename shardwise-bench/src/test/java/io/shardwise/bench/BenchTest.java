package io.shardwise.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/**
 * The harness itself, at small scale: it counts exactly, reports percentiles of what it recorded,
 * and accounts for errors by kind. Never its speed. The target here is an in-memory map: this tests
 * the instrument, not a server.
 */
class BenchTest {

  /** An ordered in-memory store that counts every call and can be told to fail some of them. */
  static final class CountingTarget implements Target {
    final ConcurrentSkipListMap<String, byte[]> data = new ConcurrentSkipListMap<>();
    final AtomicLong reads = new AtomicLong();
    final AtomicLong updates = new AtomicLong();
    final AtomicLong inserts = new AtomicLong();
    final AtomicLong scans = new AtomicLong();
    final AtomicLong loaded = new AtomicLong();
    final AtomicInteger failReadsEvery = new AtomicInteger();
    final AtomicInteger failUpdatesEvery = new AtomicInteger();
    final AtomicLong failedReads = new AtomicLong();
    final AtomicLong failedUpdates = new AtomicLong();

    @Override
    public String name() {
      return "memory";
    }

    @Override
    public void prepare() {
      data.clear();
    }

    @Override
    public void load(List<Map.Entry<String, byte[]>> batch) {
      batch.forEach(e -> data.put(e.getKey(), e.getValue()));
      loaded.addAndGet(batch.size());
    }

    @Override
    public boolean read(String key) {
      long n = reads.incrementAndGet();
      if (failReadsEvery.get() > 0 && n % failReadsEvery.get() == 0) {
        failedReads.incrementAndGet();
        throw Status.UNAVAILABLE.withDescription("node down").asRuntimeException();
      }
      return data.containsKey(key);
    }

    @Override
    public void update(String key, byte[] value) {
      long n = updates.incrementAndGet();
      if (failUpdatesEvery.get() > 0 && n % failUpdatesEvery.get() == 0) {
        failedUpdates.incrementAndGet();
        throw new IllegalStateException("disk full");
      }
      data.put(key, value);
    }

    @Override
    public void insert(String key, byte[] value) {
      inserts.incrementAndGet();
      data.put(key, value);
    }

    @Override
    public int scan(String startKey, int count) {
      scans.incrementAndGet();
      return (int) data.tailMap(startKey).keySet().stream().limit(count).count();
    }

    @Override
    public void close() {}
  }

  private static Bench.Options options(Workload w, long records, long operations, int threads) {
    return new Bench.Options(w, records, operations, Duration.ZERO, threads, 16, w.defaultDistribution(), Duration.ZERO, 7);
  }

  private static Bench.Result run(Bench.Options o, Target target) {
    Bench bench = new Bench(o);
    Bench.Load load = bench.load(target, Bench.Listener.NONE);
    return bench.run(target, load, () -> "run", Bench.Listener.NONE);
  }

  @Test
  void theRunCountsExactlyTheOperationsAskedAndEveryOneTheTargetSaw() {
    CountingTarget target = new CountingTarget();
    Bench.Result r = run(options(Workload.A, 500, 2_000, 4), target);
    assertThat(target.loaded.get()).isEqualTo(500);
    assertThat(r.load().records()).isEqualTo(500);
    assertThat(r.run().operations()).isEqualTo(2_000);
    Bench.OpStats read = r.run().ops().get(OpType.READ);
    Bench.OpStats update = r.run().ops().get(OpType.UPDATE);
    assertThat(read.count()).isEqualTo(target.reads.get());
    assertThat(update.count()).isEqualTo(target.updates.get());
    assertThat(read.count() + update.count()).isEqualTo(2_000);
    assertThat(read.count()).isBetween(850L, 1_150L); // 50/50 with a fixed seed
    assertThat(r.errors()).isEmpty();
    assertThat(r.notFound()).isZero();
    assertThat(r.phases()).extracting(Bench.Phase::name).containsExactly("run");
    assertThat(r.phases().get(0).operations()).isEqualTo(2_000);
    for (Bench.OpStats s : List.of(read, update, r.run().all())) {
      assertThat(s.p50()).isPositive().isLessThanOrEqualTo(s.p95());
      assertThat(s.p95()).isLessThanOrEqualTo(s.p99());
      assertThat(s.p99()).isLessThanOrEqualTo(s.p999());
      assertThat(s.p999()).isLessThanOrEqualTo(s.max());
    }
  }

  @Test
  void insertsAndScansOfWorkloadEAreCountedAndOnlyAcknowledgedKeysAreRead() {
    CountingTarget target = new CountingTarget();
    Bench.Result r = run(options(Workload.E, 300, 1_000, 3), target);
    long inserts = r.run().ops().get(OpType.INSERT).count();
    long scans = r.run().ops().get(OpType.SCAN).count();
    assertThat(inserts + scans).isEqualTo(1_000);
    assertThat(inserts).isEqualTo(target.inserts.get()).isPositive();
    assertThat(scans).isEqualTo(target.scans.get());
    assertThat(target.data).hasSize((int) (300 + inserts));
    // Workload F: a read-modify-write is one operation, made of one read and one update.
    CountingTarget f = new CountingTarget();
    Bench.Result rf = run(options(Workload.F, 200, 600, 2), f);
    long rmw = rf.run().ops().get(OpType.READ_MODIFY_WRITE).count();
    assertThat(rmw + rf.run().ops().get(OpType.READ).count()).isEqualTo(600);
    assertThat(f.updates.get()).isEqualTo(rmw);
    assertThat(rf.notFound()).isZero();
  }

  @Test
  void failuresAreCountedByKindAndKeptOutOfTheLatencies() {
    CountingTarget target = new CountingTarget();
    target.failReadsEvery.set(7);
    target.failUpdatesEvery.set(10);
    Bench.Result r = run(options(Workload.A, 200, 1_400, 4), target);
    assertThat(r.errors()).containsOnly(
        Map.entry("read: UNAVAILABLE", target.failedReads.get()),
        Map.entry("update: IllegalStateException", target.failedUpdates.get()));
    assertThat(r.errorCount()).isEqualTo(target.failedReads.get() + target.failedUpdates.get()).isPositive();
    long measured = r.run().ops().get(OpType.READ).count() + r.run().ops().get(OpType.UPDATE).count();
    assertThat(measured + r.errorCount()).isEqualTo(1_400);
    assertThat(r.run().operations()).isEqualTo(measured);
  }

  @Test
  void percentilesAreThoseOfTheRecordedLatencies() {
    Histogram h = new Histogram(1, 600_000_000L, 3);
    for (int micros = 1; micros <= 10_000; micros++) {
      h.recordValue(micros);
    }
    Bench.OpStats s = Bench.OpStats.of(h);
    assertThat(s.count()).isEqualTo(10_000);
    assertThat(s.p50()).isCloseTo(5_000, org.assertj.core.data.Offset.offset(5.0));
    assertThat(s.p95()).isCloseTo(9_500, org.assertj.core.data.Offset.offset(10.0));
    assertThat(s.p99()).isCloseTo(9_900, org.assertj.core.data.Offset.offset(10.0));
    assertThat(s.p999()).isCloseTo(9_990, org.assertj.core.data.Offset.offset(10.0));
    assertThat(s.max()).isCloseTo(10_000, org.assertj.core.data.Offset.offset(10.0));
    assertThat(Bench.OpStats.of(new Histogram(3)).count()).isZero();
  }

  @Test
  void aPhaseSupplierCutsTheRunAndEndsItWithNull() {
    CountingTarget target = new CountingTarget();
    Bench.Options o = new Bench.Options(Workload.C, 100, 0, Duration.ofMinutes(5), 2, 16, Workload.Distribution.UNIFORM, Duration.ZERO, 3);
    AtomicInteger ticks = new AtomicInteger();
    List<String> names = new ArrayList<>(List.of("before", "before", "during", "after"));
    Bench bench = new Bench(o);
    Bench.Result r = bench.run(target, bench.load(target, Bench.Listener.NONE),
        () -> ticks.getAndIncrement() < names.size() ? names.get(ticks.get() - 1) : null, Bench.Listener.NONE);
    assertThat(r.phases()).extracting(Bench.Phase::name).containsExactly("before", "during", "after");
    assertThat(r.phases().stream().mapToLong(Bench.Phase::operations).sum()).isEqualTo(r.run().operations());
    assertThat(r.run().seconds()).isLessThan(60);
  }

  @Test
  void workloadMixesFollowYcsbsProportions() {
    Random random = new Random(11);
    long[] counts = new long[OpType.values().length];
    for (int i = 0; i < 100_000; i++) {
      counts[Workload.B.pick(random.nextDouble()).ordinal()]++;
    }
    assertThat(counts[OpType.READ.ordinal()] / 100_000.0).isCloseTo(0.95, org.assertj.core.data.Offset.offset(0.005));
    assertThat(counts[OpType.UPDATE.ordinal()] / 100_000.0).isCloseTo(0.05, org.assertj.core.data.Offset.offset(0.005));
    assertThat(Workload.byName("D").defaultDistribution()).isEqualTo(Workload.Distribution.LATEST);
    assertThatThrownBy(() -> Workload.byName("g")).hasMessageContaining("valid: a, b, c, d, e, f");
    assertThatThrownBy(() -> options(Workload.A, 0, 10, 1)).hasMessageContaining("--records must be at least 1");
    assertThatThrownBy(() -> new Bench.Options(Workload.A, 10, 0, Duration.ZERO, 1, 10, Workload.Distribution.ZIPFIAN, Duration.ZERO, 1))
        .hasMessageContaining("--operations N or a positive --duration");
  }

  @Test
  void keyNamesSortAsTheirNumbersAndSplitPointsDivideTheSpaceEvenly() {
    assertThat(KeySpace.keyName(0)).hasSize(4 + KeySpace.DIGITS).startsWith("user");
    List<String> points = KeySpace.splitPoints(4);
    assertThat(points).hasSize(3).isSorted();
    int[] perRange = new int[4];
    for (long n = 0; n < 40_000; n++) {
      String key = KeySpace.keyName(n);
      int range = 0;
      while (range < points.size() && key.compareTo(points.get(range)) >= 0) {
        range++;
      }
      perRange[range]++;
    }
    for (int count : perRange) {
      assertThat(count).isBetween(9_000, 11_000);
    }
    KeySpace space = new KeySpace(10, 5, Workload.Distribution.LATEST);
    long n = space.nextInsert();
    assertThat(n).isEqualTo(10);
    for (int i = 0; i < 1_000; i++) {
      assertThat(space.choose()).isLessThan(10); // not acknowledged yet: never chosen
    }
    space.acknowledge(n);
    boolean seen = false;
    for (int i = 0; i < 1_000 && !seen; i++) {
      seen = space.choose() == 10;
    }
    assertThat(seen).as("the latest key is the most popular once acknowledged").isTrue();
  }
}
