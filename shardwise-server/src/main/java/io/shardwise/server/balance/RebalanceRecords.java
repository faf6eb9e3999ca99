package io.shardwise.server.balance;

import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.Coordinator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * The balancer's records in ZooKeeper, shared by the balancer (on whichever node leads it) and
 * the operator's commands:
 *
 * <pre>
 *   /shardwise/balancer/settings     BalancerSettings: mode, limits, paused
 *   /shardwise/balancer/leader       the leader election (Curator LeaderLatch)
 *   /shardwise/balancer/plans/p-N    PlanRecord, one per plan, N rising
 *   /shardwise/balancer/drains/{id}  one empty znode per node an operator is draining
 *   /shardwise/balancer/resized/{t}  ResizedShards: table t's shards made by the balancer's splits and merges
 * </pre>
 *
 * Every change is a compare-and-set, so the operator and the balancer never overwrite each other.
 */
public final class RebalanceRecords {

  public static final String ROOT = Coordinator.ROOT + "/balancer";
  public static final String SETTINGS = ROOT + "/settings";
  public static final String LEADER = ROOT + "/leader";
  public static final String PLANS = ROOT + "/plans";
  public static final String DRAINS = ROOT + "/drains";
  public static final String RESIZED = ROOT + "/resized";

  public static final int DEFAULT_MAX_MOVES_PER_NODE = 2;
  public static final double DEFAULT_AUTO_MAX_FRACTION = 0.25;
  public static final Duration DEFAULT_ABSENT_GRACE = Duration.ofMinutes(10);
  /** Attempts per move, with backoff from 0.5 s doubling to 30 s: about two minutes. */
  public static final int DEFAULT_MAX_MOVE_ATTEMPTS = 8;

  private final Coordinator coordinator;

  public RebalanceRecords(Coordinator coordinator) {
    this.coordinator = coordinator;
  }

  /** The settings, with defaults filled in. */
  public BalancerSettings settings() {
    return withDefaults(coordinator.read(SETTINGS).map(r -> parseSettings(r.data())).orElse(BalancerSettings.getDefaultInstance()));
  }

  public BalancerSettings updateSettings(UnaryOperator<BalancerSettings> change) {
    byte[] stored = coordinator.update(SETTINGS,
        data -> change.apply(withDefaults(data == null ? BalancerSettings.getDefaultInstance() : parseSettings(data))).toByteArray());
    return parseSettings(stored);
  }

  static BalancerSettings withDefaults(BalancerSettings s) {
    BalancerSettings.Builder b = s.toBuilder();
    if (s.getMode() == BalancerSettings.Mode.MODE_UNSPECIFIED) {
      b.setMode(BalancerSettings.Mode.SUGGEST);
    }
    if (s.getMaxMovesPerNode() == 0) {
      b.setMaxMovesPerNode(DEFAULT_MAX_MOVES_PER_NODE);
    }
    if (s.getAutoMaxFraction() == 0) {
      b.setAutoMaxFraction(DEFAULT_AUTO_MAX_FRACTION);
    }
    if (s.getAbsentGraceSeconds() == 0) {
      b.setAbsentGraceSeconds(DEFAULT_ABSENT_GRACE.toSeconds());
    }
    if (s.getMaxMoveAttempts() == 0) {
      b.setMaxMoveAttempts(DEFAULT_MAX_MOVE_ATTEMPTS);
    }
    return b.build();
  }

  /** The mode that applies to {@code table}: its override, else the cluster's. */
  public static BalancerSettings.Mode modeOf(BalancerSettings settings, String table) {
    return settings.getTableModesOrDefault(table, settings.getMode());
  }

  /** The split size when the settings name none: 512 MiB, as HBase's and MongoDB's defaults are of that order. */
  public static final long DEFAULT_SPLIT_BYTES = 512L << 20;

  /** The stored size past which a range or hashrange shard of {@code table} is split by size, or -1: never. */
  public static long splitBytesOf(BalancerSettings settings, String table) {
    long bytes = settings.getTableSplitBytesOrDefault(table, settings.getSplitBytes());
    return bytes == 0 ? DEFAULT_SPLIT_BYTES : bytes < 0 ? -1 : bytes;
  }

  /** The split rate when the settings name none: 2,500 requests per second, CockroachDB's default. */
  public static final long DEFAULT_SPLIT_RPS = 2_500;

  /** How long a shard's requests must stay above its split rate, when the settings name no window. */
  public static final int DEFAULT_SPLIT_RPS_SECONDS = 10;

  /** The merge fraction when the settings name none. */
  public static final double DEFAULT_MERGE_FRACTION = 0.25;

  /** The highest merge fraction allowed: above it, a merged shard would be close to splitting again. */
  public static final double MAX_MERGE_FRACTION = 0.45;

  /** How long two shards must stay under the merge fraction, when the settings name no window. */
  public static final int DEFAULT_MERGE_SECONDS = 60;

  /** The longest window of either policy: the seconds of request rates a node keeps. */
  public static final int MAX_WINDOW_SECONDS = io.shardwise.server.hot.ShardRates.SECONDS;

  /** The request rate above which a range or hashrange shard of {@code table} is split by load, or -1: never. */
  public static long splitRpsOf(BalancerSettings settings, String table) {
    long rps = settings.getTableSplitRpsOrDefault(table, settings.getSplitRps());
    return rps == 0 ? DEFAULT_SPLIT_RPS : rps < 0 ? -1 : rps;
  }

  /** The seconds a shard's rate must stay above its split rate. */
  public static int splitRpsSeconds(BalancerSettings settings) {
    return settings.getSplitRpsSeconds() == 0 ? DEFAULT_SPLIT_RPS_SECONDS : settings.getSplitRpsSeconds();
  }

  /** The fraction of the split size and rate under which two neighbours merge, or -1: never. */
  public static double mergeFraction(BalancerSettings settings) {
    double f = settings.getMergeFraction();
    return f == 0 ? DEFAULT_MERGE_FRACTION : f < 0 ? -1 : f;
  }

  /** The seconds two neighbours must stay under the merge fraction. */
  public static int mergeSeconds(BalancerSettings settings) {
    return settings.getMergeSeconds() == 0 ? DEFAULT_MERGE_SECONDS : settings.getMergeSeconds();
  }

  /** The numbers of table {@code tableId}'s shards that the balancer's splits and merges made (some may be gone since). */
  public Set<Long> resized(long tableId) {
    return coordinator.read(RESIZED + "/" + tableId).map(r -> {
      try {
        return (Set<Long>) new TreeSet<>(io.shardwise.proto.v1.ResizedShards.parseFrom(r.data()).getNumbersList());
      } catch (InvalidProtocolBufferException e) {
        throw new CoordinationException("the record " + RESIZED + "/" + tableId + " is unreadable: " + e.getMessage(), e);
      }
    }).orElse(Set.of());
  }

  /** Records that the balancer made {@code made}; numbers no longer in {@code present} are forgotten. */
  public void addResized(long tableId, java.util.Collection<Long> made, Set<Long> present) {
    coordinator.update(RESIZED + "/" + tableId, data -> {
      TreeSet<Long> numbers = new TreeSet<>(made);
      if (data != null) {
        try {
          numbers.addAll(io.shardwise.proto.v1.ResizedShards.parseFrom(data).getNumbersList());
        } catch (InvalidProtocolBufferException e) {
          throw new CoordinationException("the record " + RESIZED + "/" + tableId + " is unreadable: " + e.getMessage(), e);
        }
      }
      numbers.retainAll(present);
      return io.shardwise.proto.v1.ResizedShards.newBuilder().addAllNumbers(numbers).build().toByteArray();
    });
  }

  /** Every plan, oldest first. */
  public List<PlanRecord> plans() {
    List<PlanRecord> out = new ArrayList<>();
    for (String id : coordinator.children(PLANS)) {
      plan(id).ifPresent(out::add);
    }
    return out;
  }

  public Optional<PlanRecord> plan(String id) {
    checkId(id);
    return coordinator.read(PLANS + "/" + id).map(r -> parsePlan(id, r.data()));
  }

  /** Stores a new plan and returns it with its id (the name of its sequential znode). */
  public PlanRecord create(PlanRecord plan) {
    String id = coordinator.createSequential(PLANS + "/p-", plan.toBuilder().clearId().build().toByteArray());
    return plan.toBuilder().setId(id).build();
  }

  /**
   * Changes a plan with a compare-and-set.
   *
   * @throws IllegalArgumentException if there is no such plan, or from {@code change}
   */
  public PlanRecord update(String id, UnaryOperator<PlanRecord> change) {
    checkId(id);
    if (plan(id).isEmpty()) {
      throw new IllegalArgumentException("no plan " + id);
    }
    return parsePlan(id, coordinator.update(PLANS + "/" + id,
        data -> change.apply(parsePlan(id, data)).toBuilder().clearId().build().toByteArray()));
  }

  /** Deletes finished plans beyond the newest {@code keep} plans, so the history stays bounded. */
  public void prune(List<PlanRecord> plans, int keep) {
    for (int i = 0; i < plans.size() - keep; i++) {
      if (finished(plans.get(i).getState())) {
        coordinator.delete(PLANS + "/" + plans.get(i).getId());
      }
    }
  }

  /**
   * The node leading the balancer, if any: the participant of the leader latch with the lowest
   * sequence number (the latch's own rule), read without joining it.
   */
  public Optional<String> leader() {
    List<String> latches = new ArrayList<>(coordinator.children(LEADER));
    latches.sort(java.util.Comparator.comparing(RebalanceRecords::sequenceOf));
    for (String latch : latches) {
      Optional<Coordinator.Record> r = coordinator.read(LEADER + "/" + latch);
      if (r.isPresent()) {
        return Optional.of(new String(r.get().data(), java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    return Optional.empty();
  }

  private static String sequenceOf(String latchNode) {
    int dash = latchNode.lastIndexOf('-');
    return dash < 0 ? latchNode : latchNode.substring(dash + 1);
  }

  /** Nodes an operator is draining. */
  public Set<NodeId> drains() {
    Set<NodeId> out = new TreeSet<>();
    coordinator.children(DRAINS).forEach(n -> out.add(NodeId.of(n)));
    return out;
  }

  public void drain(NodeId node) {
    coordinator.ensure(DRAINS + "/" + node.value());
  }

  public void undrain(NodeId node) {
    coordinator.delete(DRAINS + "/" + node.value());
  }

  private static void checkId(String id) {
    if (!id.matches("p-[0-9]{1,10}")) {
      throw new IllegalArgumentException("'" + id + "' is not a plan id (they look like p-0000000003)");
    }
  }

  private static BalancerSettings parseSettings(byte[] data) {
    try {
      return BalancerSettings.parseFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException("the balancer settings in ZooKeeper are not readable: " + e.getMessage(), e);
    }
  }

  /** A stored plan; its id is not stored inside but is its znode's name. */
  private static PlanRecord parsePlan(String id, byte[] data) {
    try {
      return PlanRecord.parseFrom(data).toBuilder().setId(id).build();
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException("a plan in ZooKeeper is not readable: " + e.getMessage(), e);
    }
  }

  /** True for states that never change again. */
  public static boolean finished(PlanRecord.State state) {
    return state == PlanRecord.State.DONE || state == PlanRecord.State.FAILED || state == PlanRecord.State.REJECTED
        || state == PlanRecord.State.CANCELLED || state == PlanRecord.State.STALE;
  }
}
