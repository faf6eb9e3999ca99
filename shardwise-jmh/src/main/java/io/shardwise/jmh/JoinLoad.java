package io.shardwise.jmh;

import io.micrometer.core.instrument.DistributionSummary;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.Partitioner;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.ShardwiseNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * What a fourth node joining three costs, per strategy, in one process (three nodes on RocksDB,
 * embedded ZooKeeper, gRPC on loopback): the share of keys that changed owner against the minimum
 * 1/(N+1), for {@code ring} and {@code tokens} whether the cluster moved exactly the keys {@code
 * simulate} moves (its partitioner for 3 and 4 nodes, key by key), the bytes the plans moved, and
 * how many map changes the cutovers took (moves cut over together share one compare-and-set).
 *
 * <pre>java -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.JoinLoad [KEYS per table, default 20000]</pre>
 */
public final class JoinLoad {

  private static final byte[] VALUE = new byte[100];
  private static final Map<String, TableSpec> TABLES = Map.of(
      "ring", TableSpec.builder("ring").vnodes(64).build(),
      "tokens", TableSpec.builder("tokens").tokens(16).build(),
      "slots", TableSpec.builder("slots").slots(256).build(),
      "hashrange", TableSpec.builder("hashrange").shards(24).build());

  private JoinLoad() {}

  public static void main(String[] args) throws Exception {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int movesPerNode = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    new Random(1).nextBytes(VALUE);
    Path dir = Files.createTempDirectory("shardwise-join");
    List<ShardwiseNode> nodes = new ArrayList<>();
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"))) {
      for (int i = 1; i <= 3; i++) {
        nodes.add(RebalanceLoad.node(dir, zk, i));
      }
      try (Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(5));
          ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(List.of(nodes.get(0).address())).build()) {
        RebalanceRecords records = new RebalanceRecords(c);
        records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
        List<String> names = List.of("ring", "tokens", "slots", "hashrange");
        for (String name : names) {
          client.createTable(name, TABLES.get(name));
          List<Map.Entry<Key, byte[]>> batch = new ArrayList<>();
          for (int i = 0; i < keys; i++) {
            batch.add(new AbstractMap.SimpleEntry<>(RebalanceLoad.key(i), VALUE));
            if (batch.size() == 1000 || i == keys - 1) {
              client.batchPut(name, batch);
              batch.clear();
            }
          }
        }
        ShardMap before = c.readMapSynced().map();
        Set<String> known = new HashSet<>();
        records.plans().forEach(p -> known.add(p.getId()));
        long started = System.nanoTime();
        records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
            .setMaxMovesPerNode(movesPerNode).build());
        nodes.add(RebalanceLoad.node(dir, zk, 4));
        List<PlanRecord> plans = settle(records, c, known);
        double seconds = (System.nanoTime() - started) / 1e9;
        ShardMap after = c.readMapSynced().map();
        double[] cutoversBefore = cutovers(nodes);
        System.out.printf(Locale.ROOT, "3 -> 4 nodes, %,d keys of %d bytes in each table, %d moves per node at most: %s in %.1f s;"
            + " map epoch %d -> %d; %s%n", keys, VALUE.length, movesPerNode, moved(plans), seconds, before.epoch(), after.epoch(),
            perChange(cutoversBefore));
        System.out.printf(Locale.ROOT, "%-10s %8s %8s %10s %10s %s%n", "table", "shards", "after", "moved", "minimum", "as simulate");
        for (String name : names) {
          report(name, keys, before.table(name).orElseThrow(), after.table(name).orElseThrow());
        }

        // The other way: the new node drained, one source sending to three destinations at once.
        records.plans().forEach(p -> known.add(p.getId()));
        long drainEpoch = after.epoch();
        started = System.nanoTime();
        records.drain(NodeId.of("n4"));
        plans = settle(records, c, known);
        seconds = (System.nanoTime() - started) / 1e9;
        double[] total = cutovers(nodes);
        System.out.printf(Locale.ROOT, "drain n4, 4 -> 3: %s in %.1f s; map epoch %d -> %d; %s%n", moved(plans), seconds, drainEpoch,
            c.readMapSynced().map().epoch(), perChange(new double[] {total[0] - cutoversBefore[0], total[1] - cutoversBefore[1]}));
      }
    } finally {
      for (int i = nodes.size() - 1; i >= 0; i--) {
        nodes.get(i).close();
      }
    }
  }

  private static String moved(List<PlanRecord> plans) {

    long moves = 0;
    long movedBytes = 0;
    for (PlanRecord p : plans) {
      for (MoveRecord m : p.getMovesList()) {
        if (m.getState() == MoveRecord.State.DONE) {
          moves++;
          movedBytes += m.getProgress().getTotalBytes();
        }
      }
    }
    return String.format(Locale.ROOT, "%d plans, %d moves, %.1f MB moved", plans.size(), moves, movedBytes / 1e6);
  }

  /** {map changes made by cutovers, cutovers} summed over the nodes. */
  private static double[] cutovers(List<ShardwiseNode> nodes) {
    double[] sum = new double[2];
    for (ShardwiseNode n : nodes) {
      DistributionSummary s = n.metrics().find("shardwise.move.cutovers.per.change").summary();
      if (s != null) {
        sum[0] += s.count();
        sum[1] += s.totalAmount();
      }
    }
    return sum;
  }

  private static String perChange(double[] c) {
    return String.format(Locale.ROOT, "the cutovers took %.0f map changes for %.0f moves (%.2f per change)", c[0], c[1],
        c[0] == 0 ? 0 : c[1] / c[0]);
  }

  /** The keys of one table that changed owner, against 1/4, and for rings whether they are the keys simulate moves. */
  private static void report(String name, int keys, Table before, Table after) {
    int moved = 0;
    int asSimulate = 0;
    boolean ring = !after.layout().ringMembers().isEmpty();
    Partitioner three = after.spec().create(3, KeySample.empty());
    Partitioner four = after.spec().create(4, KeySample.empty());
    List<String> members = after.layout().ringMembers();
    for (int i = 0; i < keys; i++) {
      byte[] pk = RebalanceLoad.key(i).partitionKey();
      NodeId was = before.shardFor(pk).owner();
      NodeId is = after.shardFor(pk).owner();
      boolean changed = !was.equals(is);
      moved += changed ? 1 : 0;
      if (ring) {
        boolean simulated = three.nodeFor(pk) != four.nodeFor(pk);
        boolean sameNode = members.get(four.nodeFor(pk)).equals(is.value());
        asSimulate += simulated == changed && sameNode ? 1 : 0;
      }
    }
    System.out.printf(Locale.ROOT, "%-10s %8d %8d %9.1f%% %9.1f%% %s%n", name, before.shards().size(), after.shards().size(),
        100.0 * moved / keys, 100.0 / 4, ring ? String.format(Locale.ROOT, "%,d of %,d keys", asSimulate, keys) : "-");
  }

  /** Waits until the plans made after {@code known} have finished and no new one came for 5 s; returns them. */
  private static List<PlanRecord> settle(RebalanceRecords records, Coordinator c, Set<String> known) throws InterruptedException {
    long quietSince = System.nanoTime();
    long epoch = -1;
    while (true) {
      List<PlanRecord> fresh = records.plans().stream().filter(p -> !known.contains(p.getId())).toList();
      boolean running = fresh.stream().anyMatch(p -> !RebalanceRecords.finished(p.getState()));
      long now = c.readMap().map().epoch();
      if (running || now != epoch || fresh.isEmpty()) {
        quietSince = System.nanoTime();
        epoch = now;
      } else if (System.nanoTime() - quietSince > 5_000_000_000L) {
        return fresh;
      }
      Thread.sleep(50);
    }
  }
}
