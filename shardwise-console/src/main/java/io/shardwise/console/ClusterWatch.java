package io.shardwise.console;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * What the live page shows: the map, the nodes, the balancer and its plans from ZooKeeper, and per
 * shard the reads, writes, keys and bytes that each node reports. Read on demand, never in the
 * background: a console nobody looks at costs the cluster nothing, and many open pages cost it no
 * more than one, because a view younger than {@link #FRESH_NANOS} is shared.
 *
 * <p>Rates come from two readings of the owners' counters ({@code NodeStats}): requests per second
 * over the time between them. Keys and bytes take a scan of each shard, so they are read at most
 * every {@link #SIZES_NANOS} and marked with their age.
 */
final class ClusterWatch {

  static final long FRESH_NANOS = TimeUnit.MILLISECONDS.toNanos(900);
  static final long SIZES_NANOS = TimeUnit.SECONDS.toNanos(10);
  /** Hot keys shown per shard (each node samples them on its request path). */
  private static final int HOT_KEYS = 3;

  private static final java.time.Duration NODE_DEADLINE = java.time.Duration.ofSeconds(2);
  /** A node is marked as carrying too much when it has this much more than the average. */
  static final double SKEW = 1.25;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Coordinator coordinator;
  private final Peers peers;
  private final RebalanceRecords records;
  private final LongSupplier nanos;

  // Guarded by this.
  private ObjectNode view;
  private long viewAt;
  private final Map<String, Reading> readings = new HashMap<>();
  private final Map<String, long[]> sizes = new HashMap<>();
  private long sizesAt = Long.MIN_VALUE;

  /** One reading of a shard's counters, at its owner. */
  private record Reading(String owner, long reads, long writes, long at, double readRate, double writeRate) {}

  /** Seconds of each shard's rates a poll asks for: enough for the sudden / gradual / steady call (three 10 s windows and more). */
  private static final int TREND_SECONDS = 60;

  /** The previous poll's answers and when they were taken: hotspots are found between two polls. */
  private List<NodeStatsResponse> lastAnswers;
  private long lastAnswersAt;

  ClusterWatch(Coordinator coordinator, Peers peers, LongSupplier nanos) {
    this.coordinator = coordinator;
    this.peers = peers;
    this.records = new RebalanceRecords(coordinator);
    this.nanos = nanos;
  }

  /** The current view, read again if it is older than a second. */
  synchronized ObjectNode view() {
    long now = nanos.getAsLong();
    if (view == null || now - viewAt > FRESH_NANOS) {
      view = read(now);
      viewAt = now;
    }
    return view;
  }

  /** Makes the next {@link #view()} read afresh (after an approval, say). */
  synchronized void invalidate() {
    view = null;
  }

  /** At most this many shards short of replicas are listed (the count is always whole). */
  private static final int REPLICATION_LIST = 50;

  private static ArrayNode names(List<NodeId> nodes) {
    ArrayNode out = JSON.createArrayNode();
    nodes.forEach(n -> out.add(n.value()));
    return out;
  }

  /**
   * What is wrong with a replicated shard's replicas, worst first, or null: its leader's node is
   * down (it waits for a failover), fewer replicas are in sync than writes need (writes are
   * refused), or fewer are in sync than the table keeps (a failure away from refusing; some may
   * still be rebuilt elsewhere).
   */
  private static String replicationProblem(ShardAssignment s, io.shardwise.core.map.Replication r, Map<NodeId, NodeInfo> live) {
    int inSync = s.inSync().size() + 1;
    if (!live.containsKey(s.owner())) {
      return "leader down";
    }
    if (inSync < r.minInSync()) {
      return "writes refused: " + inSync + " in sync, " + r.minInSync() + " needed";
    }
    if (inSync < r.factor()) {
      return "under-replicated: " + inSync + " of " + r.factor() + " in sync" + (s.replicas().size() < r.factor()
          ? ", " + (r.factor() - s.replicas().size()) + " replica(s) to rebuild" : "");
    }
    return null;
  }

  private ObjectNode read(long now) {
    ShardMap map = coordinator.readMap().map();
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    Set<NodeId> drains = records.drains();
    BalancerSettings settings = records.settings();
    List<PlanRecord> plans = records.plans();
    Optional<String> leader = records.leader();

    boolean readSizes = sizesAt == Long.MIN_VALUE || now - sizesAt > SIZES_NANOS;
    NodeStatsPoll.Answers polled = NodeStatsPoll.ask(peers, live.values(), io.shardwise.proto.v1.NodeStatsRequest.newBuilder()
        .setSkipSizes(!readSizes).setHotKeys(HOT_KEYS).setHistorySeconds(TREND_SECONDS).build(), NODE_DEADLINE);
    // Hotspots as `shardwise hotspots` finds them, between this poll and the one before.
    Map<String, io.shardwise.server.hot.HotspotReport.Shard> hot = new HashMap<>();
    List<String> findings = List.of();
    if (lastAnswers != null && now > lastAnswersAt) {
      Map<String, io.shardwise.server.hot.HotspotReport.TableShape> shapes = new HashMap<>();
      map.tables().values().forEach(t -> shapes.put(t.name(), new io.shardwise.server.hot.HotspotReport.TableShape(t.shards().size(),
          t.layout().strategy().name().toLowerCase(java.util.Locale.ROOT))));
      List<io.shardwise.server.hot.HotspotReport.Shard> report = io.shardwise.server.hot.HotspotReport.shards(lastAnswers, polled.answers(),
          shapes, (now - lastAnswersAt) / 1e9);
      report.forEach(h -> hot.put(h.name(), h));
      findings = io.shardwise.server.hot.HotspotReport.findings(report);
    }
    lastAnswers = polled.answers();
    lastAnswersAt = now;
    Map<String, ArrayNode> hotKeys = new java.util.HashMap<>();
    Set<String> unreachable = polled.unreachable();
    Map<String, long[]> trash = new java.util.HashMap<>();
    for (NodeStatsResponse stats : polled.answers()) {
      trash.put(stats.getNode(), new long[] {stats.getTrashCount(), stats.getTrashList().stream().mapToLong(t -> t.getBytes()).sum()});
      for (ShardInfo s : stats.getShardsList()) {
        String key = s.getTable() + "/" + s.getNumber();
        Reading before = readings.get(key);
        double readRate = 0;
        double writeRate = 0;
        if (before != null && before.owner.equals(s.getOwner()) && s.getReads() >= before.reads && s.getWrites() >= before.writes) {
          double seconds = (now - before.at) / 1e9;
          if (seconds > 0) {
            readRate = (s.getReads() - before.reads) / seconds;
            writeRate = (s.getWrites() - before.writes) / seconds;
          }
        }
        readings.put(key, new Reading(s.getOwner(), s.getReads(), s.getWrites(), now, readRate, writeRate));
        ArrayNode keys = JSON.createArrayNode();
        io.shardwise.core.map.Table table = map.table(s.getTable()).orElse(null);
        for (io.shardwise.proto.v1.HotKey k : s.getHotKeysList()) {
          ObjectNode o = keys.addObject().put("key", io.shardwise.core.key.ByteStrings.toDisplay(k.getKey().toByteArray()))
              .put("keyBase64", java.util.Base64.getEncoder().encodeToString(k.getKey().toByteArray()))
              .put("share", s.getHotSampled() == 0 ? 0 : round((double) k.getCount() / s.getHotSampled(), 3));
          HotRemedy.of(table, s, k).ifPresent(r -> o.put("remedy", r.kind()).put("finding", r.finding()));
        }
        hotKeys.put(key, keys);
        if (readSizes) {
          sizes.put(key, new long[] {s.getKeys(), s.getBytes()});
        }
      }
    }
    if (readSizes) {
      sizesAt = now;
    }

    ObjectNode root = JSON.createObjectNode();
    root.put("mapEpoch", map.epoch());
    root.put("sizesAgeSeconds", Math.round((now - sizesAt) / 1e9));

    // Shards, and per node the sums over the shards the map gives it.
    Map<NodeId, double[]> perNode = new TreeMap<>(); // shards, keys, bytes, reads/s, writes/s
    for (NodeId id : live.keySet()) {
      perNode.put(id, new double[5]);
    }
    ArrayNode shards = JSON.createArrayNode();
    ArrayNode tables = JSON.createArrayNode();
    ArrayNode replication = JSON.createArrayNode(); // shards of replicated tables short of replicas
    int replicationIssues = 0;
    Map<NodeId, Integer> follows = new TreeMap<>();
    int shardCount = 0;
    for (Table t : map.tables().values()) {
      ObjectNode to = tables.addObject().put("name", t.name()).put("strategy", t.spec().strategy().id()).put("shards", t.shards().size());
      List<String> members = t.layout().ringMembers();
      if (!members.isEmpty()) {
        to.set("ringMembers", JSON.valueToTree(members)); // simulate's nodes 0, 1, … in order
      }
      if (t.layout().splittable()) {
        PlanJson.policy(to.putObject("resizePolicy"), settings, t.name());
      }
      to.put("format", t.format().label());
      ArrayNode indexes = to.putArray("indexes"); // as the map has them: field, scope, building or ready
      t.indexes().forEach(i -> indexes.addObject().put("field", i.field()).put("scope", i.scope().label()).put("state", i.state().label()));
      long largestBytes = 0;
      double busiest = 0;
      int underReplicated = 0;
      int writesRefused = 0;
      io.shardwise.core.map.Replication r0 = t.replication();
      if (r0.replicated()) {
        to.put("replicas", r0.factor()).put("minInSync", r0.minInSync());
      }
      for (ShardAssignment s : t.shards()) {
        shardCount++;
        String key = t.name() + "/" + s.id().number();
        Reading r = readings.get(key);
        boolean current = r != null && r.owner.equals(s.owner().value());
        double readRate = current ? r.readRate : 0;
        double writeRate = current ? r.writeRate : 0;
        long[] size = sizes.getOrDefault(key, new long[2]);
        ObjectNode so = shards.addObject().put("table", t.name()).put("number", s.id().number()).put("owner", s.owner().value());
        if (r0.replicated()) {
          so.set("followers", names(s.followers()));
          so.set("inSync", names(s.inSync()));
          s.followers().forEach(f -> follows.merge(f, 1, Integer::sum));
          String problem = replicationProblem(s, r0, live);
          if (problem != null) {
            underReplicated += s.inSync().size() + 1 < r0.factor() ? 1 : 0;
            writesRefused += s.inSync().size() + 1 < r0.minInSync() || !live.containsKey(s.owner()) ? 1 : 0;
            if (replicationIssues++ < REPLICATION_LIST) {
              replication.addObject().put("shard", key).put("leader", s.owner().value()).put("leaderLive", live.containsKey(s.owner()))
                  .put("replicas", r0.factor()).put("minInSync", r0.minInSync()).put("problem", problem)
                  .<ObjectNode>set("followers", names(s.followers())).set("inSync", names(s.inSync()));
            }
          }
        }
        so.put("epoch", s.epoch()).put("keys", size[0]).put("bytes", size[1])
            .put("reads", current ? r.reads : 0).put("writes", current ? r.writes : 0)
            .put("readsPerSecond", round(readRate)).put("writesPerSecond", round(writeRate))
            .put("requestsPerSecond", round(readRate + writeRate))
            .set("hotKeys", current ? hotKeys.getOrDefault(key, JSON.createArrayNode()) : JSON.createArrayNode());
        io.shardwise.server.hot.HotspotReport.Shard h = hot.get(key);
        if (current && h != null && h.timesAverage() >= io.shardwise.server.hot.HotspotReport.HOT) {
          // A hot shard: its share of its table's requests per second (the page draws it), and how it got there.
          so.put("timesTableAverage", round(h.timesAverage())).put("trend", io.shardwise.server.hot.HotspotReport.trend(h.shareHistory()));
          ArrayNode shares = so.putArray("shareHistory");
          for (double share : h.shareHistory()) {
            shares.add(round(share, 3));
          }
        }
        largestBytes = Math.max(largestBytes, size[1]);
        busiest = Math.max(busiest, readRate + writeRate);
        double[] n = perNode.computeIfAbsent(s.owner(), id -> new double[5]);
        n[0]++;
        n[1] += size[0];
        n[2] += size[1];
        n[3] += readRate;
        n[4] += writeRate;
      }
      to.put("largestShardBytes", largestBytes).put("busiestShardRequestsPerSecond", round(busiest));
      if (r0.replicated()) {
        to.put("underReplicated", underReplicated).put("writesRefused", writesRefused);
      }
    }
    root.put("tables", map.tables().size());
    root.put("shards", shardCount);

    // Averages over the nodes that can hold shards (up and not draining), for the skew marks.
    double[] sum = new double[5];
    int holders = 0;
    for (Map.Entry<NodeId, double[]> e : perNode.entrySet()) {
      if (live.containsKey(e.getKey()) && !drains.contains(e.getKey())) {
        holders++;
        for (int i = 0; i < 5; i++) {
          sum[i] += e.getValue()[i];
        }
      }
    }
    double[] peak = new double[4];
    ArrayNode nodes = JSON.createArrayNode();
    for (Map.Entry<NodeId, double[]> e : perNode.entrySet()) {
      NodeId id = e.getKey();
      double[] n = e.getValue();
      NodeInfo info = live.get(id);
      String state = info == null ? "down" : drains.contains(id) ? "draining" : unreachable.contains(id.value()) ? "unreachable" : "up";
      ObjectNode o = nodes.addObject().put("id", id.value()).put("address", info == null ? "" : info.getAddress()).put("state", state)
          .put("shards", (long) n[0]).put("follows", follows.getOrDefault(id, 0)).put("keys", (long) n[1]).put("bytes", (long) n[2])
          .put("readsPerSecond", round(n[3])).put("writesPerSecond", round(n[4])).put("requestsPerSecond", round(n[3] + n[4]));
      long[] t = trash.get(id.value());
      if (t != null) { // copies the node keeps but does not serve; unknown for a node that did not answer
        o.put("trashEntries", t[0]).put("trashBytes", t[1]);
      }
      ObjectNode labels = o.putObject("labels");
      if (info != null) {
        new TreeMap<>(info.getLabelsMap()).forEach(labels::put);
      }
      ArrayNode skewed = o.putArray("skewed");
      String[] names = {"shards", "keys", "bytes", "requests"};
      double[] values = {n[0], n[1], n[2], n[3] + n[4]};
      double[] sums = {sum[0], sum[1], sum[2], sum[3] + sum[4]};
      for (int i = 0; i < names.length; i++) {
        double average = holders == 0 ? 0 : sums[i] / holders;
        if (average > 0 && values[i] > SKEW * average && values[i] - average >= 1) {
          skewed.add(names[i]);
        }
        if (info != null && !drains.contains(id)) {
          peak[i] = Math.max(peak[i], values[i]);
        }
      }
    }
    root.put("nodes", live.size());
    root.set("nodeList", nodes);
    ObjectNode balance = root.putObject("balance");
    String[] names = {"shards", "keys", "bytes", "requests"};
    double[] sums = {sum[0], sum[1], sum[2], sum[3] + sum[4]};
    for (int i = 0; i < names.length; i++) {
      double average = holders == 0 ? 0 : sums[i] / holders;
      balance.put(names[i] + "PeakToAverage", average == 0 ? 0 : round(peak[i] / average, 3));
    }
    root.set("tableList", tables);
    root.set("shardList", shards);
    ArrayNode findingList = root.putArray("hotspotFindings");
    findings.forEach(findingList::add);
    root.set("replicationList", replication);
    root.put("replicationIssues", replicationIssues);

    ObjectNode balancer = root.putObject("balancer");
    PlanJson.settings(balancer, settings);
    balancer.put("leader", leader.orElse(""));
    PlanRecord pending = null;
    PlanRecord active = null;
    PlanRecord last = null;
    ArrayNode pendingList = JSON.createArrayNode(); // an operator's plan and the balancer's suggestions may wait together
    for (PlanRecord p : plans) { // oldest first: the last of each kind wins
      switch (p.getState()) {
        case PENDING -> {
          pending = p;
          pendingList.add(PlanJson.plan(p));
        }
        case APPROVED, RUNNING -> active = p;
        case DONE, FAILED, CANCELLED -> last = p;
        default -> { }
      }
    }
    balancer.put("state", active != null ? "running " + active.getId()
        : pending != null ? "waiting for approval of " + pending.getId()
        : settings.getPaused() ? "paused" : "idle");
    ObjectNode plansNode = root.putObject("plans");
    plansNode.set("pending", pending == null ? null : PlanJson.plan(pending));
    plansNode.set("pendingList", pendingList);
    plansNode.set("active", active == null ? null : PlanJson.plan(active));
    plansNode.set("last", last == null ? null : PlanJson.plan(last));
    root.set("recentResizes", recentResizes(plans));
    return root;
  }

  /** The most recent splits and merges listed. */
  static final int RECENT_RESIZES = 20;

  /** The splits and merges of finished plans, newest first: what dynamic partitioning did lately. */
  private static ArrayNode recentResizes(List<PlanRecord> plans) {
    ArrayNode out = JSON.createArrayNode();
    for (int i = plans.size() - 1; i >= 0 && out.size() < RECENT_RESIZES; i--) {
      PlanRecord p = plans.get(i);
      if (p.getFinishedMillis() == 0) {
        continue;
      }
      for (int j = p.getResizesCount() - 1; j >= 0 && out.size() < RECENT_RESIZES; j--) {
        io.shardwise.proto.v1.ResizeRecord r = p.getResizes(j);
        if (r.getState() != io.shardwise.proto.v1.ResizeRecord.State.DONE) {
          continue;
        }
        ArrayNode made = JSON.createArrayNode();
        r.getResultNumbersList().forEach(made::add);
        out.addObject().put("plan", p.getId()).put("finishedMillis", p.getFinishedMillis())
            .put("kind", r.getKind().name().toLowerCase(java.util.Locale.ROOT))
            .put("shard", r.getTable() + "/" + r.getNumber() + (r.getKind() == io.shardwise.proto.v1.ResizeRecord.Kind.MERGE
                ? "+" + r.getRightNumber() : ""))
            .put("owner", r.getOwner()).put("why", r.getWhy()).set("resultShards", made);
      }
    }
    return out;
  }

  /** The busiest shards first, by {@code sort} (requests, reads, writes, bytes or keys), at most {@code limit}. */
  static ArrayNode busiest(ObjectNode view, String sort, int limit) {
    String field = switch (sort) {
      case "requests" -> "requestsPerSecond";
      case "reads" -> "readsPerSecond";
      case "writes" -> "writesPerSecond";
      case "bytes" -> "bytes";
      case "keys" -> "keys";
      default -> throw new IllegalArgumentException("sort must be requests, reads, writes, bytes or keys, not '" + sort + "'");
    };
    if (limit < 1 || limit > 10_000) {
      throw new IllegalArgumentException("limit must be in [1, 10000], not " + limit);
    }
    List<ObjectNode> all = new ArrayList<>();
    view.withArray("shardList").forEach(n -> all.add((ObjectNode) n));
    all.sort(Comparator.comparingDouble((ObjectNode n) -> n.get(field).asDouble()).reversed()
        .thenComparing(n -> n.get("table").asText()).thenComparingLong(n -> n.get("number").asLong()));
    ArrayNode out = JSON.createArrayNode();
    all.stream().limit(limit).forEach(out::add);
    return out;
  }

  private static double round(double value) {
    return round(value, 1);
  }

  private static double round(double value, int places) {
    double scale = Math.pow(10, places);
    return Math.round(value * scale) / scale;
  }
}
