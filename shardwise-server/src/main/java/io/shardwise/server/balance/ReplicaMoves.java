package io.shardwise.server.balance;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Retries;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a plan's move of a replicated shard: only map changes, each a compare-and-set that checks
 * the shard is still as the step expects, while the shard's leader does the copying.
 *
 * <p>A replica moves from {@code from} to {@code to} in four steps:
 *
 * <ol>
 *   <li>{@code to} becomes a follower ({@link ShardMapDelta.AddFollower}); the leader builds it
 *       (a snapshot, then its log) as for any new follower;
 *   <li>wait until the leader has taken {@code to} into the in-sync set (it has every acknowledged
 *       write, from the store the map grants it);
 *   <li>if {@code from} leads, the lead passes to {@code to} ({@link ShardMapDelta.ChangeLeader}: an
 *       in-sync follower only, so nothing acknowledged is lost; writes pause while the new leader
 *       commits what it inherited). It is a handover at one log position when it can be: the
 *       leader quiesces the shard first, and {@code from} stays in sync ({@link Handovers}); else
 *       (the leader cannot quiesce it in time) {@code from} leaves the in-sync set and rejoins once
 *       it has caught up;
 *   <li>{@code from} stops being a replica ({@link ShardMapDelta.RemoveFollower}); its copy goes to
 *       its trash after the drop grace, with its log.
 * </ol>
 *
 * <p>The shard has one replica more than its factor between steps 1 and 4, never fewer. Every step
 * looks at the map first, so a move run again (after a failure, or by the next controller) goes on
 * from where the map is. Replica repair leaves shards with a move under way alone (it would remove
 * the extra replica), and takes over if the move is given up: the extra replica goes, out-of-sync
 * ones first. A lead-only move is step 3 alone.
 */
final class ReplicaMoves {

  private static final Logger LOG = LoggerFactory.getLogger(ReplicaMoves.class);
  private static final Duration POLL = Duration.ofMillis(100);

  /** A planned handover of a shard's lead at one log position ({@link io.shardwise.server.rpc.ShardSplits#handOver}). */
  interface Handovers {
    void handOver(long tableId, long number, NodeId from, NodeId to);
  }

  private final Coordinator coordinator;
  private final Handovers handovers;

  ReplicaMoves(Coordinator coordinator, Handovers handovers) {
    this.coordinator = coordinator;
    this.handovers = handovers;
  }

  /** Whether the map shows the move done: {@code to} holds a replica and {@code from} none (or, for a lead, {@code to} leads). */
  static boolean landed(ShardMap map, MoveRecord m) {
    Optional<ShardAssignment> s = map.shard(m.getTableId(), m.getNumber());
    if (s.isEmpty()) {
      return false;
    }
    NodeId to = NodeId.of(m.getTo());
    if (m.getLeadership()) {
      return s.get().owner().equals(to);
    }
    return s.get().isReplica(to) && !s.get().isReplica(NodeId.of(m.getFrom()));
  }

  /** Whether a lead-only move can start: its {@code to} is an in-sync follower now. */
  static boolean leadReady(ShardMap map, MoveRecord m) {
    return map.shard(m.getTableId(), m.getNumber()).map(s -> s.inSync().contains(NodeId.of(m.getTo()))).orElse(false);
  }

  /**
   * Runs the move to its end.
   *
   * @param inSyncWithin how long the new follower may take to catch up before the move fails
   * @param cancelled asked between steps; the move stops (failing) once it holds
   * @throws IllegalStateException if the shard changed in a way the move cannot go on from, or a
   *     step timed out
   */
  MoveProgress run(MoveRecord m, Duration inSyncWithin, BooleanSupplier cancelled) {
    NodeId from = NodeId.of(m.getFrom());
    NodeId to = NodeId.of(m.getTo());
    String what = m.getTable() + "/" + m.getNumber();
    if (!m.getLeadership()) {
      change(m, s -> {
        if (s.isReplica(to)) {
          return Optional.empty(); // step 1 done already
        }
        requireReplica(s, from, what);
        return Optional.of(new ShardMapDelta.AddFollower(s.id(), to));
      });
      boolean inSync = Retries.poll(inSyncWithin, POLL, () -> {
        ShardAssignment s = shard(coordinator.readMap().map(), m, what);
        if (!s.isReplica(to)) {
          throw new IllegalStateException("shard " + what + ": " + to + " is no longer a replica (removed while it caught up)");
        }
        return s.inSyncReplicas().contains(to) || cancelled.getAsBoolean();
      });
      if (cancelled.getAsBoolean()) {
        throw new IllegalStateException("cancelled while " + to + " caught up");
      }
      if (!inSync) {
        throw new IllegalStateException("shard " + what + ": " + to + " did not catch up within " + inSyncWithin.toSeconds() + " s");
      }
    }
    ShardAssignment before = shard(coordinator.readMap().map(), m, what);
    if (before.owner().equals(from) && before.inSync().contains(to)) {
      try {
        handovers.handOver(m.getTableId(), m.getNumber(), from, to); // from stays in sync: no window with one fewer in-sync replica
      } catch (RuntimeException e) {
        LOG.info("balancer: the lead of shard {} did not pass to {} at one log position ({}); it passes as a failover does, {} catching"
            + " up afterwards", what, to, e.getMessage(), from);
      }
    }
    change(m, s -> {
      if (!s.owner().equals(from)) {
        if (m.getLeadership() && s.owner().equals(to)) {
          return Optional.empty();
        }
        if (m.getLeadership()) {
          throw new IllegalStateException("shard " + what + " is led by " + s.owner() + ", not " + from);
        }
        return Optional.empty(); // from does not lead (any more): nothing to pass
      }
      if (!s.inSync().contains(to)) {
        throw new IllegalStateException("shard " + what + ": " + to + " is not an in-sync follower " + s.inSync());
      }
      return Optional.of(new ShardMapDelta.ChangeLeader(s.id(), from, to, false));
    });
    if (!m.getLeadership()) {
      change(m, s -> {
        if (!s.isReplica(from)) {
          return Optional.empty();
        }
        if (s.owner().equals(from)) {
          throw new IllegalStateException("shard " + what + " is led by " + from + " again; its replica is not removed");
        }
        if (!s.isReplica(to)) {
          throw new IllegalStateException("shard " + what + ": " + to + " is no longer a replica; " + from + " keeps its replica");
        }
        return Optional.of(new ShardMapDelta.RemoveFollower(s.id(), from));
      });
    }
    LOG.info("balancer: {} of shard {} moved from {} to {}", m.getLeadership() ? "the lead" : "a replica", what, from, to);
    return MoveProgress.newBuilder().setPhase(MoveProgress.Phase.DONE).setKeys(m.getKeys()).setTotalBytes(m.getBytes())
        .setNewEpoch(coordinator.readMap().map().epoch()).build();
  }

  private interface Step {
    Optional<ShardMapDelta.Change> next(ShardAssignment s);
  }

  /** One step as a compare-and-set against the stored map: {@code step} decides from the shard as stored. */
  private void change(MoveRecord m, Step step) {
    String what = m.getTable() + "/" + m.getNumber();
    coordinator.updateMap(map -> step.next(shard(map, m, what)).map(c -> ShardMapDelta.on(map).add(c).build()));
  }

  private static ShardAssignment shard(ShardMap map, MoveRecord m, String what) {
    ShardAssignment s = map.shard(m.getTableId(), m.getNumber())
        .orElseThrow(() -> new IllegalStateException("shard " + what + " is gone (split, merged or dropped)"));
    if (!s.isReplica(NodeId.of(m.getFrom())) && !s.isReplica(NodeId.of(m.getTo()))) {
      throw new IllegalStateException("shard " + what + " is on neither " + m.getFrom() + " nor " + m.getTo());
    }
    return s;
  }

  private static void requireReplica(ShardAssignment s, NodeId node, String what) {
    if (!s.isReplica(node)) {
      throw new IllegalStateException("shard " + what + " has no replica on " + node + " any more");
    }
  }
}
