package io.shardwise.server.balance;

import com.google.protobuf.ByteString;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.SplitShardRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Isolating a hot partition key: its shard is cut at the key and just after it, so that the key
 * has a shard of its own, and that shard goes to the node its requests load least — the seeds'
 * remedy for a key too hot to share a shard, which no split point can divide (all of its requests
 * land on one side). A range shard is cut at the key and at the key followed by a zero byte (the
 * first partition key after it); a hash-range shard at the key's hash and the next hash (the key's
 * shard then holds that one hash). Only the map changes; the move is an ordinary move of the
 * isolated shard (of its lead and replica, for a replicated table).
 *
 * <p>Where it goes: among the live nodes that are not draining — only those labelled {@code
 * role=hot} if any node is — the one with the fewest requests per second, if the key's requests
 * there leave it below what its present node serves now (else the isolated shard stays where it is:
 * moving it would only move the hotspot). The forecast is in requests per second, from each shard's
 * rates over the last seconds and the key's guaranteed share of its shard's sampled requests.
 */
public final class Isolation {

  private Isolation() {}

  /** A key whose guaranteed share of its shard's sampled requests is at least this is isolated by the load policy. */
  public static final double HOT_KEY_SHARE = io.shardwise.server.hot.HotspotReport.ONE_KEY;

  /** The node label that reserves nodes for isolated hot keys: {@code role=hot}. */
  public static final String ROLE_LABEL = "role";

  public static final String HOT_ROLE = "hot";

  /**
   * The cuts that leave {@code partitionKey} alone in its shard {@code s} of {@code t}, in order (each
   * a split of the shard holding the key as the one before leaves it; table and shard not set): none
   * if it is alone already.
   *
   * @throws IllegalArgumentException if the table's shards do not split
   */
  public static List<SplitShardRequest> cuts(Table t, byte[] partitionKey) {
    ShardLayout layout = t.layout();
    if (!layout.splittable()) {
      throw new IllegalArgumentException("table " + t.name() + " is " + layout.strategy().id() + "; " + ShardLayout.SPLITTABLE
          + ", so a key is isolated only in those");
    }
    int position = t.positionOf(t.shardFor(partitionKey).id());
    List<SplitShardRequest> out = new ArrayList<>();
    if (layout.strategy() == Strategy.RANGE) {
      List<byte[]> points = layout.splitPoints();
      byte[] start = position == 0 ? new byte[0] : points.get(position - 1);
      byte[] end = position + 1 < t.shards().size() ? points.get(position) : null;
      byte[] after = Arrays.copyOf(partitionKey, partitionKey.length + 1); // the first partition key after it
      if (Arrays.compareUnsigned(partitionKey, start) > 0) {
        out.add(SplitShardRequest.newBuilder().setAtPartitionKey(ByteString.copyFrom(partitionKey)).build());
      }
      if (end == null || Arrays.compareUnsigned(after, end) < 0) {
        out.add(SplitShardRequest.newBuilder().setAtPartitionKey(ByteString.copyFrom(after)).build());
      }
      return out;
    }
    long hash = layout.hashFunction().hash(partitionKey);
    if (Long.compareUnsigned(hash, layout.hashRangeFirst(position)) > 0) {
      out.add(SplitShardRequest.newBuilder().setHasAtHash(true).setAtHash(hash).build());
    }
    if (Long.compareUnsigned(hash, layout.hashRangeLast(position)) < 0) {
      out.add(SplitShardRequest.newBuilder().setHasAtHash(true).setAtHash(hash + 1).build());
    }
    return out;
  }

  /** Whether {@code partitionKey} has a shard of its own in {@code t} (for a hash range: the shard holds its hash alone). */
  public static boolean isolated(Table t, byte[] partitionKey) {
    return t.layout().splittable() && cuts(t, partitionKey).isEmpty();
  }

  /** Requests per second served by each node, and by each shard, averaged over the last {@code seconds} of their rates. */
  record Loads(Map<NodeId, Double> nodes, Map<String, Double> shards) {

    static Loads of(List<NodeStatsResponse> stats, int seconds) {
      Map<NodeId, Double> nodes = new HashMap<>();
      Map<String, Double> shards = new HashMap<>();
      for (NodeStatsResponse n : stats) {
        double sum = 0;
        for (ShardInfo s : n.getShardsList()) {
          double rate = rate(s, seconds);
          shards.put(s.getTable() + "/" + s.getNumber(), rate);
          sum += rate;
        }
        nodes.put(NodeId.of(n.getNode()), sum);
      }
      return new Loads(nodes, shards);
    }

    double node(NodeId id) {
      return nodes.getOrDefault(id, 0.0);
    }
  }

  /** A shard's mean requests per second over its last {@code seconds} seconds of history (all it has, if fewer). */
  static double rate(ShardInfo s, int seconds) {
    int n = s.getReadsHistoryCount();
    int from = Math.max(0, n - seconds);
    long sum = 0;
    for (int i = from; i < n; i++) {
      sum += (long) s.getReadsHistory(i) + s.getWritesHistory(i);
    }
    return n == from ? 0 : (double) sum / (n - from);
  }

  /** The guaranteed share of {@code s}'s sampled requests that {@code partitionKey} took (0 if it is not among its hot keys). */
  static double keyShare(ShardInfo s, byte[] partitionKey) {
    if (s.getHotSampled() == 0) {
      return 0;
    }
    for (HotKey k : s.getHotKeysList()) {
      if (Arrays.equals(k.getKey().toByteArray(), partitionKey)) {
        return Math.min(1.0, (double) (k.getCount() - k.getError()) / s.getHotSampled());
      }
    }
    return 0;
  }

  /**
   * A plan step that isolates {@code partitionKey} of {@code table}, with its forecast.
   *
   * @param stats every live node's {@code NodeStats}, with each shard's rate history and hot keys
   * @param seconds the seconds of history the rates are averaged over
   * @param to where the isolated shard goes; empty: the least-loaded node that helps, if any
   * @param cause why, for the record ("operator", "load: ...")
   * @throws IllegalArgumentException if the table does not exist or does not split, the key is alone
   *     in a shard on a node that suits it already, or {@code to} cannot take it
   */
  public static ResizeRecord plan(ShardMap map, String table, byte[] partitionKey, Map<NodeId, NodeInfo> live, Set<NodeId> draining,
      List<NodeStatsResponse> stats, int seconds, Optional<NodeId> to, String cause) {
    Table t = map.table(table).orElseThrow(() -> new IllegalArgumentException("no table '" + table + "'"));
    List<SplitShardRequest> cuts = cuts(t, partitionKey);
    ShardAssignment s = t.shardFor(partitionKey);
    NodeId owner = s.owner();
    Loads loads = Loads.of(stats, seconds);
    ShardInfo info = shardInfo(stats, t.name(), s.id().number());
    double shardRate = loads.shards().getOrDefault(t.name() + "/" + s.id().number(), 0.0);
    double share = info == null ? 0 : keyShare(info, partitionKey);
    double keyRate = share * shardRate;
    NodeId target = to.map(n -> checkTarget(n, owner, live, draining)).orElseGet(() -> leastLoaded(owner, keyRate, live, draining, loads));
    String key = ByteStrings.toDisplay(partitionKey);
    if (cuts.isEmpty() && target == null) {
      throw new IllegalArgumentException("key '" + key + "' has shard " + s.id() + " to itself already, on " + owner
          + ", and no other node would serve its requests with less load than " + owner + " has now");
    }
    ResizeRecord.Builder r = ResizeRecord.newBuilder().setKind(ResizeRecord.Kind.ISOLATE).setTable(t.name()).setTableId(t.id())
        .setNumber(s.id().number()).setOwner(owner.value()).setHotKey(ByteString.copyFrom(partitionKey))
        .setRequestsPerSecond(Math.round(shardRate)).setKeyRequestsPerSecond(Math.round(keyRate))
        .setFromRequestsPerSecond(Math.round(loads.node(owner))).setState(ResizeRecord.State.WAITING);
    if (info != null) {
      r.setBytes(info.getApproximateBytes());
    }
    StringBuilder why = new StringBuilder(cause).append(": key '").append(key).append("'");
    why.append(share > 0 ? String.format(Locale.ROOT, " takes at least %.0f%% of shard %s's requests (about %,.0f of %,.0f/s)", 100 * share,
        s.id(), keyRate, shardRate) : " (not among shard " + s.id() + "'s sampled hot keys now)");
    why.append(cuts.isEmpty() ? "; it has the shard to itself already"
        : cuts.size() == 2 ? "; cut before and after it" : atTheKey(t, partitionKey, cuts.get(0)) ? "; cut before it" : "; cut after it");
    if (target != null) {
      r.setIsolateTo(target.value()).setToRequestsPerSecond(Math.round(loads.node(target)));
      why.append(String.format(Locale.ROOT, ", and move its shard from %s (about %,.0f -> %,.0f requests/s) to %s (%,.0f -> %,.0f)", owner,
          loads.node(owner), Math.max(0, loads.node(owner) - keyRate), target, loads.node(target), loads.node(target) + keyRate));
    } else {
      why.append(String.format(Locale.ROOT, "; its shard stays on %s (no other node would be less loaded with it)", owner));
    }
    return r.setWhy(why.toString()).build();
  }

  /** Whether {@code cut} is at the key itself (its shard starts there), not just after it. */
  private static boolean atTheKey(Table t, byte[] partitionKey, SplitShardRequest cut) {
    return cut.getHasAtHash() ? cut.getAtHash() == t.layout().hashFunction().hash(partitionKey)
        : Arrays.equals(cut.getAtPartitionKey().toByteArray(), partitionKey);
  }

  private static ShardInfo shardInfo(List<NodeStatsResponse> stats, String table, long number) {
    for (NodeStatsResponse n : stats) {
      for (ShardInfo s : n.getShardsList()) {
        if (s.getTable().equals(table) && s.getNumber() == number) {
          return s;
        }
      }
    }
    return null;
  }

  private static NodeId checkTarget(NodeId to, NodeId owner, Map<NodeId, NodeInfo> live, Set<NodeId> draining) {
    if (!live.containsKey(to)) {
      throw new IllegalArgumentException("node " + to + " is not live (live: " + live.keySet() + ")");
    }
    if (draining.contains(to)) {
      throw new IllegalArgumentException("node " + to + " is draining; it takes no shards");
    }
    return to.equals(owner) ? null : to;
  }

  /**
   * The live node, not draining, with the fewest requests per second (among the {@code role=hot}
   * ones, if any node has that label), if the key's requests would leave it below {@code owner}'s
   * load now; else null. A hot node is taken even if it is busier: it is there for hot keys.
   */
  static NodeId leastLoaded(NodeId owner, double keyRate, Map<NodeId, NodeInfo> live, Set<NodeId> draining, Loads loads) {
    return leastLoaded(owner, keyRate, live, draining, loads, true);
  }

  /**
   * {@link #leastLoaded(NodeId, double, Map, Set, Loads)}; {@code hotKey} false: for load that is not
   * a hot key (a split's half), so {@code role=hot} nodes are not preferred.
   */
  static NodeId leastLoaded(NodeId owner, double keyRate, Map<NodeId, NodeInfo> live, Set<NodeId> draining, Loads loads, boolean hotKey) {
    boolean anyHot = hotKey && live.values().stream().anyMatch(n -> HOT_ROLE.equals(n.getLabelsMap().get(ROLE_LABEL)));
    Optional<NodeId> best = live.entrySet().stream()
        .filter(e -> !draining.contains(e.getKey()))
        .filter(e -> !anyHot || HOT_ROLE.equals(e.getValue().getLabelsMap().get(ROLE_LABEL)))
        .map(Map.Entry::getKey)
        .min(Comparator.comparingDouble(loads::node).thenComparing(NodeId::value));
    if (best.isEmpty() || best.get().equals(owner)) {
      return null;
    }
    if (anyHot) {
      return best.get();
    }
    return keyRate > 0 && loads.node(best.get()) + keyRate < loads.node(owner) ? best.get() : null;
  }
}
