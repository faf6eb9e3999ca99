package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.MapCodec;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * What a map change costs in a real ZooKeeper (an embedded server on this machine), as the map
 * grows to 100,000 shards in one table and in ten: per shard move, the bytes written to ZooKeeper
 * (new chunks plus the root), the time {@code updateMap} takes (read, plan, write, CAS), and the
 * time until a second process watching the map holds the new one (notification, chunk fetch,
 * rebuild); and the time a process that has never read the map takes to read all of it.
 *
 * <p>Run: {@code java -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.MapStoreScale}
 */
public final class MapStoreScale {

  private MapStoreScale() {}

  private static final int MOVES = 41;

  public static void main(String[] args) throws Exception {
    System.out.printf(Locale.ROOT, "%-9s %-7s %14s %12s %12s %12s %12s %12s%n", "shards", "tables", "one-piece B", "move KB",
        "move ms p50", "watch ms p50", "watch ms p99", "cold read ms");
    for (int[] size : new int[][] {{1_000, 1}, {10_000, 1}, {50_000, 5}, {100_000, 10}, {100_000, 1}}) {
      run(size[0], size[1]);
    }
  }

  private static void run(int shards, int tables) throws Exception {
    Path dir = Files.createTempDirectory("mapstorescale");
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
        Coordinator writer = Coordinator.connect(zk.connectString(), Duration.ofSeconds(30), Duration.ofSeconds(30));
        Coordinator watcher = Coordinator.connect(zk.connectString(), Duration.ofSeconds(30), Duration.ofSeconds(30))) {
      List<NodeId> nodes = new ArrayList<>();
      for (int i = 1; i <= 10; i++) {
        nodes.add(NodeId.of("n" + i));
      }
      for (int t = 0; t < tables; t++) {
        String name = "t" + t;
        writer.updateMap(map -> Optional.of(create(map, name, shards / tables, nodes)));
      }
      ConcurrentHashMap<Long, Long> seenAt = new ConcurrentHashMap<>();
      watcher.watchMap(map -> seenAt.put(map.epoch(), System.nanoTime()));
      Random random = new Random(42);
      double[] moveMs = new double[MOVES];
      double[] watchMs = new double[MOVES];
      long bytesWritten = 0;
      for (int i = 0; i < MOVES; i++) {
        Set<String> before = new HashSet<>(writer.children(Coordinator.ROOT + "/map-chunks"));
        String table = "t" + random.nextInt(tables);
        int position = random.nextInt(shards / tables);
        long start = System.nanoTime();
        ShardMap after = writer.updateMap(map -> Optional.of(move(map, table, position, nodes)));
        long stored = System.nanoTime();
        moveMs[i] = (stored - start) / 1e6;
        while (!seenAt.containsKey(after.epoch())) {
          LockSupport.parkNanos(50_000);
        }
        watchMs[i] = (seenAt.get(after.epoch()) - stored) / 1e6;
        for (String chunk : writer.children(Coordinator.ROOT + "/map-chunks")) {
          if (!before.contains(chunk)) {
            bytesWritten += writer.read(Coordinator.ROOT + "/map-chunks/" + chunk).orElseThrow().data().length;
          }
        }
        bytesWritten += writer.read(Coordinator.ROOT + "/map-root").orElseThrow().data().length;
      }
      ShardMap map = writer.readMap().map();
      int onePiece = MapCodec.toProto(map).getSerializedSize();
      double[] cold = new double[5];
      for (int i = 0; i < cold.length; i++) {
        try (Coordinator fresh = Coordinator.connect(zk.connectString(), Duration.ofSeconds(30), Duration.ofSeconds(30))) {
          long start = System.nanoTime();
          fresh.readMap();
          cold[i] = (System.nanoTime() - start) / 1e6;
        }
      }
      Arrays.sort(moveMs);
      Arrays.sort(watchMs);
      Arrays.sort(cold);
      System.out.printf(Locale.ROOT, "%-9s %-7d %14s %12.1f %12.2f %12.2f %12.2f %12.1f%n", String.format(Locale.ROOT, "%,d", shards), tables,
          String.format(Locale.ROOT, "%,d", onePiece), bytesWritten / 1024.0 / MOVES, moveMs[MOVES / 2], watchMs[MOVES / 2],
          watchMs[(int) Math.ceil(MOVES * 0.99) - 1], cold[cold.length / 2]);
    } finally {
      try (var walk = Files.walk(dir)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static ShardMapDelta create(ShardMap map, String name, int shards, List<NodeId> nodes) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).hash(HashFunctions.murmur3_128()).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, shards, nodes.size(), KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int owner : initial.owners()) {
      owners.add(nodes.get(owner));
    }
    return ShardMapDelta.on(map).createTable(name, spec, initial.layout(), owners).build();
  }

  private static ShardMapDelta move(ShardMap map, String table, int position, List<NodeId> nodes) {
    ShardAssignment s = map.table(table).orElseThrow().shards().get(position);
    NodeId to = s.owner().equals(nodes.get(0)) ? nodes.get(1) : nodes.get(0);
    return ShardMapDelta.on(map).moveShard(s.id(), s.owner(), to).build();
  }
}
