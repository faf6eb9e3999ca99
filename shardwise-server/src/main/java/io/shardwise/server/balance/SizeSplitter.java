package io.shardwise.server.balance;

import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.SplitShardRequest;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.ShardSplits;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dynamic partitioning by size, run by the balancer's leader between plans: every few seconds it
 * reads each owner's estimate of its shards' stored bytes ({@code NodeStats}: RocksDB's estimate,
 * no scan), and splits the range or hashrange shard furthest past its table's split size ({@link
 * RebalanceRecords#splitBytesOf}) by size, one shard per look. A split changes only the map; the
 * halves stay on their node, and the planner then spreads shards as it does any others.
 *
 * <p>Never while a plan runs (a split would make a planned move's shard disappear). A shard that
 * cannot split by size — one partition key holds it — is remembered and not asked again: that is
 * a hot or large key, for the hotspot tools.
 */
final class SizeSplitter {

  private static final Logger LOG = LoggerFactory.getLogger(SizeSplitter.class);
  private static final Duration STATS_DEADLINE = Duration.ofSeconds(2);

  private final Peers peers;
  private final ShardSplits splits;
  private final long everyMillis;
  private final Counter splitCount;
  private final Set<ShardId> unsplittable = new HashSet<>();
  private long lastLookMillis;

  SizeSplitter(Coordinator coordinator, Peers peers, Duration every, MeterRegistry metrics) {
    this.peers = peers;
    this.splits = new ShardSplits(coordinator, peers);
    this.everyMillis = every.toMillis();
    this.splitCount = Counter.builder("shardwise.balancer.size.splits").description("shards the balancer's leader split by size")
        .register(metrics);
  }

  /** Splits at most one oversized shard if it is time to look; true if the map changed. */
  boolean maybeSplit(BalancerSettings settings, ShardMap map, Map<NodeId, NodeInfo> live, long nowMillis) {
    if (nowMillis - lastLookMillis < everyMillis) {
      return false;
    }
    lastLookMillis = nowMillis;
    boolean anyPolicy = map.tables().values().stream()
        .anyMatch(t -> t.layout().splittable() && RebalanceRecords.splitBytesOf(settings, t.name()) > 0);
    if (!anyPolicy) {
      return false;
    }
    unsplittable.removeIf(id -> map.table(id.table()).flatMap(t -> t.shard(id.number())).isEmpty());
    ShardInfo furthest = null;
    double furthestRatio = 1;
    for (NodeStatsResponse node : NodeStatsPoll.ask(peers, live.values(), false, STATS_DEADLINE).answers()) {
      for (ShardInfo s : node.getShardsList()) {
        Table t = map.table(s.getTable()).orElse(null);
        if (t == null || !t.layout().splittable() || t.shard(s.getNumber()).isEmpty()
            || unsplittable.contains(new ShardId(t.name(), s.getNumber()))) {
          continue;
        }
        long limit = RebalanceRecords.splitBytesOf(settings, t.name());
        double ratio = limit > 0 ? (double) s.getApproximateBytes() / limit : 0;
        if (ratio > furthestRatio) {
          furthest = s;
          furthestRatio = ratio;
        }
      }
    }
    if (furthest == null) {
      return false;
    }
    ShardId id = new ShardId(furthest.getTable(), furthest.getNumber());
    try {
      ShardMap after = splits.split(SplitShardRequest.newBuilder().setTable(id.table()).setShard(id.number()).build(), map);
      splitCount.increment();
      LOG.info("balancer: shard {} holds about {} bytes, past its split size of {}: split by size (map epoch {}, {} shards in {})", id,
          furthest.getApproximateBytes(), RebalanceRecords.splitBytesOf(settings, id.table()), after.epoch(),
          after.table(id.table()).map(t -> t.shards().size()).orElse(0), id.table());
      return true;
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == io.grpc.Status.Code.FAILED_PRECONDITION) {
        unsplittable.add(id);
      }
      LOG.info("balancer: shard {} is past its split size but was not split: {}", id, e.getStatus().getDescription());
      return false;
    }
  }
}
