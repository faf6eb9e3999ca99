package io.shardwise.bench;

import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.time.Duration;

/**
 * Requests each shard of a table served, read from its owner's counters ({@code NodeStats}, the
 * cheap kind without sizes) before and after a run: how evenly the workload spread over shards and
 * nodes. Counts keys served (a scan of 50 rows is one read of the shard it started in).
 */
public final class ClusterTraffic {

  /** Requests per shard ("table/number") and the node that served them; every node that answered (those without a shard of the table too). */
  public record Reading(Map<String, Long> perShard, Map<String, String> owner, java.util.Set<String> nodes) {}

  /** Requests per shard and per node between two readings, with their peak-to-average. */
  public record Spread(Map<String, Long> perShard, Map<String, Long> perNode) {
    public double shardPeakToAverage() {
      return peakToAverage(perShard.values());
    }

    public double nodePeakToAverage() {
      return peakToAverage(perNode.values());
    }

    private static double peakToAverage(Collection<Long> values) {
      long sum = 0;
      long max = 0;
      for (long v : values) {
        sum += v;
        max = Math.max(max, v);
      }
      return sum == 0 ? 0 : max / ((double) sum / values.size());
    }
  }

  private ClusterTraffic() {}

  /** Reads the counters (reads and writes) of {@code table}'s shards from every node. */
  public static Reading read(Peers peers, Collection<NodeInfo> nodes, String table) {
    return read(peers, nodes, table, false);
  }

  /** {@link #read}, counting only writes if {@code writesOnly}. */
  public static Reading read(Peers peers, Collection<NodeInfo> nodes, String table, boolean writesOnly) {
    Map<String, Long> perShard = new TreeMap<>();
    Map<String, String> owner = new TreeMap<>();
    java.util.Set<String> answered = new java.util.TreeSet<>();
    for (NodeStatsResponse stats : NodeStatsPoll.ask(peers, nodes, false, Duration.ofSeconds(5)).answers()) {
      answered.add(stats.getNode());
      for (ShardInfo s : stats.getShardsList()) {
        if (s.getTable().equals(table)) {
          String key = s.getTable() + "/" + s.getNumber();
          perShard.put(key, (writesOnly ? 0 : s.getReads()) + s.getWrites());
          owner.put(key, stats.getNode());
        }
      }
    }
    return new Reading(perShard, owner, answered);
  }

  /**
   * What was served between two readings. A shard that changed owner in between (a move) counts
   * what its new owner served. A node that answered the later reading and served none of the
   * table's requests counts 0 (so one busy shard of three nodes is 3× the average, not 1×).
   */
  public static Spread between(Reading before, Reading after) {
    Map<String, Long> perShard = new TreeMap<>();
    Map<String, Long> perNode = new TreeMap<>();
    after.nodes().forEach(n -> perNode.put(n, 0L));
    after.perShard().forEach((shard, count) -> {
      boolean sameOwner = after.owner().get(shard).equals(before.owner().get(shard));
      long served = sameOwner ? count - before.perShard().getOrDefault(shard, 0L) : count;
      perShard.put(shard, served);
      perNode.merge(after.owner().get(shard), served, Long::sum);
    });
    return new Spread(perShard, perNode);
  }
}
