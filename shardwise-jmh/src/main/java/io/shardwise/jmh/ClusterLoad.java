package io.shardwise.jmh;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.client.TableSpec;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import io.shardwise.server.node.ShardwiseRouter;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.HdrHistogram.Recorder;

/**
 * A simple closed-loop load: {@code threads} requests in flight, each a blocking get or put of a
 * random key among {@code records}, 100-byte values, through each routing mode of an in-process dev
 * cluster (embedded ZooKeeper, 3 nodes, a router), and the same loop against one in-process
 * RocksDB shard store, in the same run. Prints throughput and latency percentiles.
 *
 * <p>Run: {@code java -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.ClusterLoad [records]
 * [threads] [warmupSeconds] [measureSeconds] [zk]}. With a fifth argument, a ZooKeeper connect
 * string, it skips RocksDB and the in-process cluster and loads the running cluster found there
 * (for example {@code ./shardwise dev}) in client mode, from this separate process. The full
 * harness is {@code shardwise bench}.
 */
public final class ClusterLoad {

  private static final byte[] VALUE = new byte[100];

  private ClusterLoad() {}

  interface Op {
    void run(int key) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 50;
    int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    int measure = args.length > 3 ? Integer.parseInt(args[3]) : 10;
    Path dir = Files.createTempDirectory("shardwise-load");
    System.out.printf(Locale.ROOT, "%d records, %d in flight, 100-byte values, warm-up %d s, measured %d s%n%n", records, threads, warmup, measure);
    System.out.printf(Locale.ROOT, "%-18s %10s %9s %9s %9s%n", "target", "ops/s", "p50 ms", "p99 ms", "p99.9 ms");

    if (args.length > 4) {
      loadRunningCluster(args[4], records, threads, warmup, measure);
      return;
    }
    try (ShardStore raw = ShardStore.open(dir.resolve("raw"), false)) {
      ShardRef shard = new ShardRef(1, 0);
      for (int i = 0; i < records; i++) {
        raw.put(shard, key(i).encode(), VALUE);
      }
      run("rocksdb get", threads, warmup, measure, records, k -> raw.get(shard, key(k).encode()));
      run("rocksdb put", threads, warmup, measure, records, k -> raw.put(shard, key(k).encode(), VALUE));
    }

    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"))) {
      List<ShardwiseNode> nodes = new ArrayList<>();
      List<String> addresses = new ArrayList<>();
      for (int i = 1; i <= 3; i++) {
        ShardwiseNode n = ShardwiseNode.start(NodeConfig.of(dir.resolve("n" + i), zk.connectString()).withId("n" + i));
        nodes.add(n);
        addresses.add(n.address());
      }
      try (ShardwiseRouter router = ShardwiseRouter.start("router-1", "127.0.0.1", 0, zk.connectString(), Limits.DEFAULT)) {
        Map<Routing, ShardwiseClient> clients = Map.of(
            Routing.CLIENT, ShardwiseClient.builder().routing(Routing.CLIENT).seeds(addresses).build(),
            Routing.ROUTER, ShardwiseClient.builder().routing(Routing.ROUTER).seeds(List.of(router.address())).build(),
            Routing.NODE, ShardwiseClient.builder().routing(Routing.NODE).seeds(addresses).build());
        preload(clients.get(Routing.CLIENT), records);
        for (Routing routing : List.of(Routing.CLIENT, Routing.ROUTER, Routing.NODE)) {
          ShardwiseClient c = clients.get(routing);
          String mode = routing.name().toLowerCase(Locale.ROOT);
          run(mode + " get", threads, warmup, measure, records, k -> c.get("load", key(k)));
          run(mode + " put", threads, warmup, measure, records, k -> c.put("load", key(k), VALUE));
        }
        clients.values().forEach(ShardwiseClient::close);
      } finally {
        nodes.forEach(ShardwiseNode::close);
      }
    }
  }

  private static void loadRunningCluster(String zk, int records, int threads, int warmup, int measure) throws Exception {
    List<String> addresses = new ArrayList<>();
    try (io.shardwise.server.coordination.Coordinator c =
        io.shardwise.server.coordination.Coordinator.connect(zk, java.time.Duration.ofSeconds(10), java.time.Duration.ofSeconds(10))) {
      c.liveNodesNow().values().forEach(n -> addresses.add(n.getAddress()));
    }
    try (ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(addresses).build()) {
      preload(client, records);
      run("client get", threads, warmup, measure, records, k -> client.get("load", key(k)));
      run("client put", threads, warmup, measure, records, k -> client.put("load", key(k), VALUE));
      runAsync("client get async", threads, warmup, measure, records, k -> client.getAsync("load", key(k)));
      runAsync("client put async", threads, warmup, measure, records, k -> client.putAsync("load", key(k), VALUE));
    }
  }

  /** The same closed loop with {@code inFlight} requests kept in flight by one thread, asynchronously. */
  private static void runAsync(String name, int inFlight, int warmup, int measure, int records,
      java.util.function.IntFunction<java.util.concurrent.CompletableFuture<?>> op) throws Exception {
    Recorder recorder = new Recorder(3);
    java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(inFlight);
    java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
    AtomicBoolean measuring = new AtomicBoolean();
    AtomicBoolean stop = new AtomicBoolean();
    Thread driver = new Thread(() -> {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      while (!stop.get()) {
        slots.acquireUninterruptibly();
        long start = System.nanoTime();
        op.apply(random.nextInt(records)).whenComplete((r, e) -> {
          if (measuring.get() && e == null) {
            recorder.recordValue((System.nanoTime() - start) / 1000);
            done.incrementAndGet();
          }
          slots.release();
        });
      }
    });
    driver.start();
    double seconds = measureWindow(recorder, measuring, warmup, measure);
    stop.set(true);
    driver.join(60_000);
    slots.acquire(inFlight);
    report(name, done.get(), seconds, recorder);
  }

  /** Waits out the warm-up, then records for {@code measure} seconds; returns the measured seconds. */
  private static double measureWindow(Recorder recorder, AtomicBoolean measuring, int warmup, int measure) throws InterruptedException {
    Thread.sleep(warmup * 1000L);
    recorder.reset();
    measuring.set(true);
    long begin = System.nanoTime();
    Thread.sleep(measure * 1000L);
    measuring.set(false);
    return (System.nanoTime() - begin) / 1e9;
  }

  private static void report(String name, long operations, double seconds, Recorder recorder) {
    var histogram = recorder.getIntervalHistogram();
    System.out.printf(Locale.ROOT, "%-18s %,10.0f %9.2f %9.2f %9.2f%n", name, operations / seconds,
        histogram.getValueAtPercentile(50) / 1000.0, histogram.getValueAtPercentile(99) / 1000.0, histogram.getValueAtPercentile(99.9) / 1000.0);
  }

  /** Creates the {@code load} table if needed and writes every record, 1000 per batch. */
  private static void preload(ShardwiseClient client, int records) {
    if (client.listTables().stream().noneMatch(t -> t.name().equals("load"))) {
      client.createTable("load", TableSpec.builder("slots").build());
    }
    List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
    for (int i = 0; i < records; i++) {
      batch.add(new AbstractMap.SimpleEntry<>(key(i), VALUE));
      if (batch.size() == 1000 || i == records - 1) {
        client.batchPut("load", batch);
        batch.clear();
      }
    }
  }

  private static Key key(int i) {
    return Key.of(String.format(Locale.ROOT, "user%010d", i));
  }

  private static void run(String name, int threads, int warmup, int measure, int records, Op op) throws Exception {
    Recorder recorder = new Recorder(3);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicBoolean measuring = new AtomicBoolean();
    long[] counts = new long[threads];
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int slot = t;
      workers.add(pool.submit(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (!stop.get()) {
          long start = System.nanoTime();
          op.run(random.nextInt(records));
          if (measuring.get()) {
            recorder.recordValue((System.nanoTime() - start) / 1000);
            counts[slot]++;
          }
        }
        return null;
      }));
    }
    double seconds = measureWindow(recorder, measuring, warmup, measure);
    stop.set(true);
    for (Future<?> w : workers) {
      w.get(1, TimeUnit.MINUTES);
    }
    pool.shutdown();
    long total = 0;
    for (long c : counts) {
      total += c;
    }
    report(name, total, seconds, recorder);
  }
}
