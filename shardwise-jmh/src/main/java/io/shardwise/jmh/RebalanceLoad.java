package io.shardwise.jmh;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.client.TableSpec;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.NodeConfig;
import io.shardwise.server.node.ShardwiseNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Rebalance throughput and its cost to the foreground, in one process: three nodes (RocksDB,
 * embedded ZooKeeper, gRPC on loopback), a {@code slots} table of {@code KEYS} 100-byte values,
 * then a fourth node joins with the balancer in auto mode.
 *
 * <p>Reports the plan's moved keys and bytes over its wall time (keys/s, MB/s), the longest write
 * pause of a cutover, foreground GET p50/p99 for a window before and during the moves (one
 * client, {@code READERS} threads), and in the same run a key-by-key copy (one read and one put per
 * key, the way a MIGRATE-per-key mover works) of the same number of keys for a fixed time, as the
 * ratio to beat.
 *
 * <pre>java -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.RebalanceLoad [KEYS] [READERS] [MB/S per move, 0: none] [MOVES PER NODE, default 2]</pre>
 */
public final class RebalanceLoad {

  private static final byte[] VALUE = new byte[100];

  private RebalanceLoad() {}

  public static void main(String[] args) throws Exception {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int readers = args.length > 1 ? Integer.parseInt(args[1]) : 4;
    long bandwidth = args.length > 2 ? Math.round(Double.parseDouble(args[2]) * 1_000_000) : 0;
    int movesPerNode = args.length > 3 ? Integer.parseInt(args[3]) : 2;
    new Random(1).nextBytes(VALUE);
    Path dir = Files.createTempDirectory("shardwise-rebalance");
    List<ShardwiseNode> nodes = new ArrayList<>();
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"))) {
      for (int i = 1; i <= 3; i++) {
        nodes.add(node(dir, zk, i));
      }
      try (Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5));
          ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(List.of(nodes.get(0).address())).build()) {
        RebalanceRecords records = new RebalanceRecords(c);
        records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.MANUAL).build());
        client.createTable("bench", TableSpec.builder("slots").slots(12).build());
        long loadStart = System.nanoTime();
        List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
          batch.add(new AbstractMap.SimpleEntry<>(key(i), VALUE));
          if (batch.size() == 1000) {
            client.batchPut("bench", batch);
            batch.clear();
          }
        }
        if (!batch.isEmpty()) {
          client.batchPut("bench", batch);
        }
        System.out.printf(Locale.ROOT, "loaded %,d keys of %d bytes in %.1f s%n", keys, VALUE.length, (System.nanoTime() - loadStart) / 1e9);

        Recorder recorder = new Recorder(3);
        AtomicBoolean stop = new AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong errors = new java.util.concurrent.atomic.AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < readers; t++) {
          Thread th = new Thread(() -> {
            while (!stop.get()) {
              long start = System.nanoTime();
              try {
                client.get("bench", key(ThreadLocalRandom.current().nextInt(keys)));
              } catch (RuntimeException e) {
                errors.incrementAndGet();
              }
              recorder.recordValue((System.nanoTime() - start) / 1_000);
            }
          });
          th.setDaemon(true);
          th.start();
          threads.add(th);
        }
        Thread.sleep(3_000);
        records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
            .setMaxMovesPerNode(movesPerNode).setBandwidthBytesPerSecond(bandwidth).build());
        // Round 1 runs the move code for the first time in this JVM (class loading, JIT); rounds 2
        // and 3 move the same shards back and forth with warm code.
        double[] round1 = round("3 -> 4 nodes (cold)", recorder, records, readers, () -> nodes.add(node(dir, zk, 4)));
        round("drain n4, 4 -> 3 (warm)", recorder, records, readers, () -> records.drain(NodeId.of("n4")));
        double[] round3 = round("undrain n4, 3 -> 4 (warm)", recorder, records, readers, () -> records.undrain(NodeId.of("n4")));
        System.out.printf(Locale.ROOT, "failed reads: %d%n", errors.get());
        stop.set(true);
        for (Thread th : threads) {
          th.join();
        }

        // The baseline in the same run: copy keys one by one (read, then put) into a scratch table.
        client.createTable("keybykey", TableSpec.builder("slots").slots(12).build());
        long copyStart = System.nanoTime();
        int copied = 0;
        while (System.nanoTime() - copyStart < 10_000_000_000L && copied < keys) {
          Key k = key(copied);
          byte[] v = client.get("bench", k).orElseThrow().value();
          client.put("keybykey", k, v);
          copied++;
        }
        double copySeconds = (System.nanoTime() - copyStart) / 1e9;
        System.out.printf(Locale.ROOT, "key-by-key copy: %,d keys in %.1f s -> %,.0f keys/s; the snapshot move is %.0fx (cold) and %.0fx (warm) faster%n",
            copied, copySeconds, copied / copySeconds, round1[0] / (copied / copySeconds), round3[0] / (copied / copySeconds));
      }
    } finally {
      for (int i = nodes.size() - 1; i >= 0; i--) {
        nodes.get(i).close();
      }
    }
  }

  /**
   * Measures GETs for 10 s, runs {@code change}, waits for the balancer's plan to finish, and
   * prints the move's figures and the GET latency before and during it; returns {keys/s, p99 ratio}.
   */
  private static double[] round(String name, Recorder recorder, RebalanceRecords records, int readers, Runnable change)
      throws InterruptedException {
    recorder.getIntervalHistogram();
    Thread.sleep(10_000);
    Histogram before = recorder.getIntervalHistogram();
    java.util.Set<String> known = new java.util.HashSet<>();
    records.plans().forEach(p -> known.add(p.getId()));
    change.run();
    PlanRecord plan = null;
    while (plan == null) {
      plan = records.plans().stream().filter(p -> p.getMovesCount() > 0 && !known.contains(p.getId())).findFirst().orElse(null);
      Thread.sleep(5);
    }
    long moveStart = System.nanoTime();
    recorder.getIntervalHistogram(); // a node's start and the planning (which reads every shard's size) are not the move
    while (!RebalanceRecords.finished(records.plan(plan.getId()).orElseThrow().getState())) {
      Thread.sleep(5);
    }
    double seconds = (System.nanoTime() - moveStart) / 1e9;
    Histogram during = recorder.getIntervalHistogram();
    plan = records.plan(plan.getId()).orElseThrow();
    long movedKeys = 0;
    long movedBytes = 0;
    long maxPause = 0;
    for (MoveRecord m : plan.getMovesList()) {
      movedKeys += m.getProgress().getKeys();
      movedBytes += m.getProgress().getTotalBytes();
      maxPause = Math.max(maxPause, m.getProgress().getPauseMicros());
    }
    double ratio = (double) during.getValueAtPercentile(99) / before.getValueAtPercentile(99);
    System.out.printf(Locale.ROOT, "%s: plan %s %s, %d moves, %,d keys, %.1f MB in %.2f s -> %,.0f keys/s, %.1f MB/s; longest write pause %.1f ms%n",
        name, plan.getId(), plan.getState(), plan.getMovesCount(), movedKeys, movedBytes / 1e6, seconds, movedKeys / seconds,
        movedBytes / 1e6 / seconds, maxPause / 1000.0);
    System.out.printf(Locale.ROOT, "  GET (%d threads) before: p50 %d µs, p99 %d µs, %,d reads | during: p50 %d µs, p99 %d µs, %,d reads; p99 ratio %.2f%n",
        readers, before.getValueAtPercentile(50), before.getValueAtPercentile(99), before.getTotalCount(),
        during.getValueAtPercentile(50), during.getValueAtPercentile(99), during.getTotalCount(), ratio);
    return new double[] {movedKeys / seconds, ratio};
  }

  /** Node {@code n<i>} of an in-process benchmark cluster: a fast balancer tick and a short drop grace. */
  static ShardwiseNode node(Path dir, EmbeddedZooKeeper zk, int i) {
    return ShardwiseNode.start(NodeConfig.of(dir.resolve("n" + i), zk.connectString()).withId("n" + i)
        .withBalancerTick(Duration.ofMillis(100)).withDropGrace(Duration.ofSeconds(5)));
  }

  static Key key(int i) {
    return Key.of(String.format(Locale.ROOT, "user%010d", i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }
}
