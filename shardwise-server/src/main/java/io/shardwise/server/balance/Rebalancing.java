package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.plan.ShardSize;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.ShardSplits;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * What an operator does to plans (the CLI and the console call these): propose one now, approve
 * (= apply) it, reject it, cancel it. Every rule is checked against ZooKeeper's records at the
 * moment of the change, with a compare-and-set, so two operators (or an operator and the balancer)
 * cannot both win.
 */
public final class Rebalancing {

  private final Coordinator coordinator;
  private final RebalanceRecords records;

  public Rebalancing(Coordinator coordinator) {
    this.coordinator = coordinator;
    this.records = new RebalanceRecords(coordinator);
  }

  public RebalanceRecords records() {
    return records;
  }

  /**
   * Computes a plan for the cluster as it is and stores it as pending (superseding any pending
   * plan). A plan without moves is returned but not stored.
   *
   * @param extraDrains nodes to plan as drained without recording a drain (a what-if)
   */
  public PlanRecord propose(Peers peers, Set<NodeId> extraDrains, boolean store) {
    ShardMap map = coordinator.readMap().map();
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    Set<NodeId> drains = new TreeSet<>(records.drains());
    drains.addAll(extraDrains);
    if (store) {
      ShardMap joined = RingJoins.join(coordinator, new ShardSplits(coordinator, peers), map, live.keySet(), drains, t -> true);
      if (joined.epoch() != map.epoch()) {
        awaitSizes(peers, live, joined);
        map = joined;
      }
    }
    String reason = store ? "operator: rebalance plan"
        : extraDrains.isEmpty() ? "a preview: the plan the cluster would get now"
        : "a what-if: the plan if " + String.join(", ", extraDrains.stream().map(NodeId::value).toList()) + " were drained";
    PlanRecord plan = PlanMaker.make(map, live, drains, Set.of(), PlanMaker.sizes(peers, live), reason)
        .toBuilder().setState(PlanRecord.State.PENDING).build();
    if (!store || plan.getMovesCount() == 0) {
      return plan;
    }
    for (PlanRecord p : records.plans()) {
      if (p.getState() == PlanRecord.State.PENDING) {
        records.update(p.getId(), r -> r.getState() == PlanRecord.State.PENDING ? r.toBuilder().setState(PlanRecord.State.STALE)
            .setError("superseded by a newer plan").setFinishedMillis(System.currentTimeMillis()).build() : r);
      }
    }
    return records.create(plan);
  }

  /** The seconds of each shard's rates an operator's isolation plan is forecast from. */
  public static final int ISOLATION_WINDOW_SECONDS = 10;

  /**
   * Makes a plan that isolates {@code partitionKey} of {@code table} in a shard of its own
   * ({@link Isolation}) and stores it as pending, or approved with {@code approve}. Its forecast
   * comes from every live node's rates over the last {@link #ISOLATION_WINDOW_SECONDS} and hot keys.
   *
   * @param to where the key's shard goes; empty: the least-loaded node that helps, if any
   * @throws IllegalArgumentException if there is nothing to do, or it cannot be done
   * @throws IllegalStateException with {@code approve}, if another plan is approved or running
   */
  public PlanRecord isolate(Peers peers, String table, byte[] partitionKey, Optional<NodeId> to, boolean approve) {
    ShardMap map = coordinator.readMap().map();
    Map<NodeId, NodeInfo> live = coordinator.liveNodesNow();
    var request = io.shardwise.proto.v1.NodeStatsRequest.newBuilder().setSkipSizes(true).setHistorySeconds(ISOLATION_WINDOW_SECONDS)
        .setHotKeys(io.shardwise.server.hot.ShardHeat.KEYS_PER_SHARD).build();
    var stats = io.shardwise.server.rpc.NodeStatsPoll.ask(peers, live.values(), request, java.time.Duration.ofSeconds(5)).answers();
    var resize = Isolation.plan(map, table, partitionKey, live, records.drains(), stats, ISOLATION_WINDOW_SECONDS, to, "operator");
    PlanRecord plan = records.create(PlanRecord.newBuilder().setBaseEpoch(map.epoch()).setState(PlanRecord.State.PENDING)
        .setReason("operator: isolate a hot key").setCreatedMillis(System.currentTimeMillis()).addResizes(resize).build());
    return approve ? approve(plan.getId()) : plan;
  }

  /**
   * Makes a plan that merges shard {@code number} of {@code table} with the next one in order when
   * the two are apart — on two nodes; replicated: on other replicas or under another leader, which
   * {@code table merge} refuses — and stores it as pending, or approved with {@code approve}. The
   * smaller by bytes moves to the other's node(s) first (replicated: a replica at a time, each new
   * one built and in sync before the one it replaces goes), never onto a draining node; then the two
   * merge, as the balancer's merge policy does ({@link Resizer.Merge}).
   *
   * @throws IllegalArgumentException for no such table or shard, a table that does not merge, the
   *     last shard, neighbours already together (merge them directly) or that cannot be brought
   *     together (a change of the table's factor under way, both on draining nodes)
   * @throws IllegalStateException with {@code approve}, if another plan is approved or running
   */
  public PlanRecord merge(Peers peers, String table, long number, boolean approve) {
    ShardMap map = coordinator.readMapSynced().map();
    Table t = map.table(table).orElseThrow(() -> new IllegalArgumentException("no table '" + table + "'"));
    ShardAssignment left;
    ShardAssignment right;
    try {
      right = ShardSplits.nextInOrder(t, number, map.epoch());
      left = t.shard(number).orElseThrow();
    } catch (io.grpc.StatusRuntimeException e) {
      throw new IllegalArgumentException(e.getStatus().getDescription(), e);
    }
    if (left.replicas().size() != right.replicas().size()) {
      throw new IllegalArgumentException("shard " + left.id() + " has " + left.replicas().size() + " replicas and the next one, " + right.id()
          + ", " + right.replicas().size() + ": the table's replicas per shard are changing; merge them once both have the same number");
    }
    Map<ShardId, ShardSize> sizes = PlanMaker.sizes(peers, coordinator.liveNodesNow());
    Resizer.Merge merge = Resizer.Merge.of(t, left, right, bytesOf(sizes, left), bytesOf(sizes, right), records.drains());
    if (merge == null) {
      throw new IllegalArgumentException("shards " + left.id() + " and " + right.id() + " are both on draining nodes, and no move goes"
          + " to a draining node; undrain one first");
    }
    if (!merge.record().getMovesFirst()) {
      throw new IllegalArgumentException("shards " + left.id() + " and " + right.id() + " are together already"
          + " (shardwise table merge merges them at once)");
    }
    PlanRecord plan = records.create(PlanRecord.newBuilder().setBaseEpoch(map.epoch()).setState(PlanRecord.State.PENDING)
        .setReason("operator: merge shards apart").setCreatedMillis(System.currentTimeMillis())
        .addResizes(merge.record().setWhy("operator: table merge" + merge.movesFirst())).build());
    return approve ? approve(plan.getId()) : plan;
  }

  private static long bytesOf(Map<ShardId, ShardSize> sizes, ShardAssignment s) {
    ShardSize size = sizes.get(s.id());
    return size == null ? 0 : size.bytes();
  }

  /** How long a plan waits for the nodes to report the ranges a ring join made, before it counts them as empty. */
  private static final java.time.Duration JOIN_SIZES_WAIT = java.time.Duration.ofSeconds(5);

  /** Waits until the live nodes report a size for every shard of {@code map} they own (or {@link #JOIN_SIZES_WAIT} passes). */
  private static void awaitSizes(Peers peers, Map<NodeId, NodeInfo> live, ShardMap map) {
    io.shardwise.server.rpc.Retries.poll(JOIN_SIZES_WAIT, java.time.Duration.ofMillis(100), () -> {
      Map<io.shardwise.core.map.ShardId, io.shardwise.core.plan.ShardSize> sizes = PlanMaker.sizes(peers, live);
      return map.tables().values().stream().flatMap(t -> t.shards().stream())
          .allMatch(s -> !live.containsKey(s.owner()) || sizes.containsKey(s.id()));
    });
  }

  /** Approves a pending plan that abandons no data; see {@link #approve(String, boolean)}. */
  public PlanRecord approve(String id) {
    return approve(id, false);
  }

  /**
   * Approves a pending plan, which the balancer then runs.
   *
   * @param acceptDataLoss the operator accepts that shards of absent nodes are given to other nodes
   *     empty; a plan that does so is refused without it
   * @throws IllegalStateException if it is not pending, another plan is running, it abandons data
   *     and {@code acceptDataLoss} is false, or the map has changed since it was made (it is then
   *     marked stale: make a new one)
   */
  public PlanRecord approve(String id, boolean acceptDataLoss) {
    PlanRecord asked = records.plan(id).orElseThrow(() -> new IllegalArgumentException("no plan " + id));
    if (asked.getAbandonedShards() > 0 && !acceptDataLoss) {
      throw new IllegalStateException("plan " + id + " gives " + asked.getAbandonedShards() + " shards of absent nodes to other nodes"
          + " without their data (see its notes); approve it with --accept-data-loss, or bring the nodes back");
    }
    long epoch = coordinator.readMap().map().epoch();
    for (PlanRecord p : records.plans()) {
      if (!p.getId().equals(id) && (p.getState() == PlanRecord.State.APPROVED || p.getState() == PlanRecord.State.RUNNING)) {
        throw new IllegalStateException("plan " + p.getId() + " is " + p.getState().name().toLowerCase(Locale.ROOT)
            + "; wait for it (rebalance status --wait) or cancel it first");
      }
    }
    PlanRecord after = records.update(id, p -> {
      if (p.getState() != PlanRecord.State.PENDING) {
        return p;
      }
      if (p.getBaseEpoch() != epoch) {
        return p.toBuilder().setState(PlanRecord.State.STALE).setFinishedMillis(System.currentTimeMillis())
            .setError("made at map epoch " + p.getBaseEpoch() + "; the map is at " + epoch).build();
      }
      return p.toBuilder().setState(PlanRecord.State.APPROVED).setDataLossAccepted(acceptDataLoss && p.getAbandonedShards() > 0).build();
    });
    if (after.getState() == PlanRecord.State.STALE) {
      // Its own record says why: the map moved on, or a newer plan superseded it.
      String why = after.getError().isEmpty() ? "the map changed after it was made" : after.getError();
      throw new IllegalStateException("plan " + id + " is stale (" + why + "); run 'shardwise rebalance plan' again"
          + " (the balancer re-plans by itself in suggest mode)");
    }
    if (after.getState() != PlanRecord.State.APPROVED) {
      throw new IllegalStateException("plan " + id + " is " + describe(after.getState()) + ", not pending");
    }
    return after;
  }

  public PlanRecord reject(String id) {
    PlanRecord after = records.update(id, p -> p.getState() == PlanRecord.State.PENDING
        ? p.toBuilder().setState(PlanRecord.State.REJECTED).setFinishedMillis(System.currentTimeMillis()).build()
        : p);
    if (after.getState() != PlanRecord.State.REJECTED) {
      throw new IllegalStateException("plan " + id + " is " + describe(after.getState()) + ", not pending");
    }
    return after;
  }

  /**
   * Cancels a plan: a pending or approved one at once; a running one stops starting moves, and
   * cancels moves that have not cut over (those already cut over stay where they are).
   */
  public PlanRecord cancel(String id) {
    PlanRecord after = records.update(id, p -> {
      switch (p.getState()) {
        case PENDING:
        case APPROVED:
          PlanRecord.Builder b = p.toBuilder().setState(PlanRecord.State.CANCELLED).setFinishedMillis(System.currentTimeMillis());
          for (MoveRecord.Builder m : b.getMovesBuilderList()) {
            m.setState(MoveRecord.State.CANCELLED);
          }
          for (io.shardwise.proto.v1.ResizeRecord.Builder r : b.getResizesBuilderList()) {
            r.setState(io.shardwise.proto.v1.ResizeRecord.State.CANCELLED);
          }
          return b.build();
        case RUNNING:
          return p.toBuilder().setCancelRequested(true).build();
        default:
          return p;
      }
    });
    if (RebalanceRecords.finished(after.getState()) && after.getState() != PlanRecord.State.CANCELLED) {
      throw new IllegalStateException("plan " + id + " is " + describe(after.getState()) + "; there is nothing to cancel");
    }
    return after;
  }

  /** The plan that is approved or running, if any. */
  public Optional<PlanRecord> active() {
    return records.plans().stream()
        .filter(p -> p.getState() == PlanRecord.State.APPROVED || p.getState() == PlanRecord.State.RUNNING)
        .findFirst();
  }

  public static String describe(PlanRecord.State state) {
    return state.name().toLowerCase(Locale.ROOT);
  }
}
