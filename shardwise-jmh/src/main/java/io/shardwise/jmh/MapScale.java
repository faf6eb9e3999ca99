package io.shardwise.jmh;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.MapCodec;
import io.shardwise.proto.v1.TableShardChanges;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the shard map costs as it grows (issue 12's baseline): the map as one protobuf image, the
 * way ZooKeeper stores it and clients fetch it, for 1,000 to 100,000 shards. For each size:
 * encoded bytes, and the median time to encode it, decode it, and apply one shard move; then what a
 * client that holds the map pays to catch up with that move: the bytes of the changes a node sends
 * (the changed shards of the changed table), the node's time to find them, and the client's time to
 * apply them to its copy of the table.
 *
 * <p>Run: {@code java -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.MapScale}
 */
public final class MapScale {

  private MapScale() {}

  /** ZooKeeper's default limit on one znode's data (jute.maxbuffer). */
  private static final int ZNODE_LIMIT = 1 << 20;

  public static void main(String[] args) {
    List<NodeId> nodes = new ArrayList<>();
    for (int i = 1; i <= 10; i++) {
      nodes.add(NodeId.of("n" + i));
    }
    System.out.printf(Locale.ROOT, "%-10s %-9s %12s %9s %12s %12s %12s %14s %12s %12s %12s%n", "shards", "tables", "image bytes", "fits 1MiB",
        "encode ms", "decode ms", "1 move ms", "refresh bytes", "refresh ms", "apply ms", "node ms");
    for (int shards : new int[] {1_000, 10_000, 50_000, 100_000}) {
      ShardMap map = ShardMap.EMPTY;
      int tables = Math.max(1, shards / 10_000);
      for (int t = 0; t < tables; t++) {
        PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).hash(HashFunctions.murmur3_128()).build();
        ShardLayout.Initial initial = ShardLayout.initial(spec, shards / tables, nodes.size(), KeySample.empty());
        List<NodeId> owners = new ArrayList<>();
        for (int owner : initial.owners()) {
          owners.add(nodes.get(owner));
        }
        map = map.apply(ShardMapDelta.on(map).createTable("t" + t, spec, initial.layout(), owners).build());
      }
      ShardMap built = map;
      byte[] image = MapCodec.toProto(built).toByteArray();
      double encode = median(() -> MapCodec.toProto(built).toByteArray());
      double decode = median(() -> MapCodec.fromBytes(image));
      ShardAssignment first = built.table("t0").orElseThrow().shards().get(0);
      NodeId to = first.owner().equals(nodes.get(0)) ? nodes.get(1) : nodes.get(0);
      double move = median(() -> built.apply(ShardMapDelta.on(built).moveShard(first.id(), first.owner(), to).build()));
      // A client's refresh after that move: the node sends the changed shards of the changed table.
      ShardMap moved = built.apply(ShardMapDelta.on(built).moveShard(first.id(), first.owner(), to).build());
      Table movedTable = moved.table("t0").orElseThrow();
      Table clientCopy = built.table("t0").orElseThrow();
      TableShardChanges changes = MapCodec.shardChanges(movedTable, built.epoch());
      double build = median(() -> MapCodec.shardChanges(movedTable, built.epoch()));
      double apply = median(() -> MapCodec.applyShardChanges(clientCopy, changes).orElseThrow());
      // A node's own work on that move: bringing its local shards in line with the new map.
      double node = nodeApply(built, nodes.get(0), nodes);
      System.out.printf(Locale.ROOT, "%-10s %-9d %12s %9s %12.2f %12.2f %12.2f %14d %12.2f %12.2f %12.2f%n", String.format(Locale.ROOT, "%,d", shards),
          tables, String.format(Locale.ROOT, "%,d", image.length), image.length <= ZNODE_LIMIT ? "yes" : "NO", encode, decode, move,
          changes.getSerializedSize(), build, apply, node);
    }
  }

  /**
   * The median time {@code LocalShards.apply} takes on {@code node} for one shard move, over 31
   * successive moves of different shards of table t0 starting from {@code before} (its shards
   * already in line with it). The store is a real one in a temporary directory; applying a map does
   * not touch it.
   */
  private static double nodeApply(ShardMap before, NodeId node, List<NodeId> nodes) {
    List<ShardMap> chain = new ArrayList<>();
    chain.add(before);
    for (int i = 0; i < 31; i++) {
      ShardMap m = chain.get(chain.size() - 1);
      ShardAssignment s = m.table("t0").orElseThrow().shards().get(i * 7);
      NodeId to = s.owner().equals(nodes.get(0)) ? nodes.get(1) : nodes.get(0);
      chain.add(m.apply(ShardMapDelta.on(m).moveShard(s.id(), s.owner(), to).build()));
    }
    try {
      java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("mapscale");
      try (io.shardwise.server.storage.ShardStore store = io.shardwise.server.storage.ShardStore.open(dir, false)) {
        io.shardwise.server.shard.LocalShards shards = new io.shardwise.server.shard.LocalShards(store);
        shards.apply(ShardMap.EMPTY, before, node);
        double[] ms = new double[chain.size() - 1];
        for (int i = 1; i < chain.size(); i++) {
          long start = System.nanoTime();
          shards.apply(chain.get(i - 1), chain.get(i), node);
          ms[i - 1] = (System.nanoTime() - start) / 1e6;
        }
        java.util.Arrays.sort(ms);
        return ms[ms.length / 2];
      } finally {
        try (var walk = java.nio.file.Files.walk(dir)) {
          walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The median of 21 timed runs after 10 untimed ones, in milliseconds. */
  private static double median(Runnable r) {
    for (int i = 0; i < 10; i++) {
      r.run();
    }
    double[] ms = new double[21];
    for (int i = 0; i < ms.length; i++) {
      long start = System.nanoTime();
      r.run();
      ms[i] = (System.nanoTime() - start) / 1e6;
    }
    java.util.Arrays.sort(ms);
    return ms[ms.length / 2];
  }
}
