package io.shardwise.server.balance;

import com.google.protobuf.InvalidProtocolBufferException;
import io.shardwise.proto.v1.ScheduledAction;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.Coordinator;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Actions scheduled for a given time, before a known event: {@code /shardwise/balancer/schedule/s-N},
 * one {@link ScheduledAction} each. The operator adds, lists and cancels them ({@code rebalance
 * schedule}); the balancer's leader runs each once its time has come ({@link Balancer}), and
 * records what it did. Every change is a compare-and-set, so a cancel and a run never both win.
 */
public final class Schedule {

  public static final String PATH = RebalanceRecords.ROOT + "/schedule";

  /** Finished actions beyond the newest this many are deleted. */
  static final int KEEP = 100;

  /** The most actions waiting at once. */
  public static final int MAX_WAITING = 1_000;

  private final Coordinator coordinator;

  public Schedule(Coordinator coordinator) {
    this.coordinator = coordinator;
  }

  /**
   * Stores a new waiting action and returns it with its id.
   *
   * @throws IllegalStateException if {@link #MAX_WAITING} actions already wait
   */
  public ScheduledAction add(ScheduledAction action) {
    long waiting = list().stream().filter(a -> a.getState() == ScheduledAction.State.WAITING).count();
    if (waiting >= MAX_WAITING) {
      throw new IllegalStateException(waiting + " actions are waiting already, the most there may be; cancel some first");
    }
    ScheduledAction stored = action.toBuilder().clearId().setState(ScheduledAction.State.WAITING)
        .setCreatedMillis(System.currentTimeMillis()).build();
    String id = coordinator.createSequential(PATH + "/s-", stored.toByteArray());
    return stored.toBuilder().setId(id).build();
  }

  /** Every action, oldest first. */
  public List<ScheduledAction> list() {
    List<ScheduledAction> out = new ArrayList<>();
    for (String id : coordinator.children(PATH)) {
      get(id).ifPresent(out::add);
    }
    return out;
  }

  public Optional<ScheduledAction> get(String id) {
    checkId(id);
    return coordinator.read(PATH + "/" + id).map(r -> parse(id, r.data()));
  }

  /** Cancels a waiting action. @throws IllegalStateException if it is not waiting (it ran, or was cancelled) */
  public ScheduledAction cancel(String id) {
    java.util.concurrent.atomic.AtomicReference<ScheduledAction.State> before = new java.util.concurrent.atomic.AtomicReference<>();
    ScheduledAction after = update(id, a -> {
      before.set(a.getState()); // the last attempt's, if the compare-and-set was retried
      return a.getState() == ScheduledAction.State.WAITING ? a.toBuilder().setState(ScheduledAction.State.CANCELLED).build() : a;
    });
    if (before.get() != ScheduledAction.State.WAITING) {
      throw new IllegalStateException("action " + id + " is " + after.getState().name().toLowerCase(java.util.Locale.ROOT)
          + ", not waiting: there is nothing to cancel");
    }
    return after;
  }

  /** The earliest action whose time has come, waiting or left running by a previous leader, if any. */
  Optional<ScheduledAction> due(long nowMillis) {
    return list().stream().filter(a -> (a.getState() == ScheduledAction.State.WAITING || a.getState() == ScheduledAction.State.RUNNING)
        && a.getAtMillis() <= nowMillis).min(java.util.Comparator.comparingLong(ScheduledAction::getAtMillis));
  }

  /** Takes a due action to run (compare-and-set to running): false if a cancel came first. */
  boolean claim(String id) {
    return update(id, a -> a.getState() == ScheduledAction.State.WAITING ? a.toBuilder().setState(ScheduledAction.State.RUNNING).build() : a)
        .getState() == ScheduledAction.State.RUNNING;
  }

  /** Records how a run ended, and deletes old finished actions. */
  void finish(String id, ScheduledAction.State state, String result) {
    update(id, a -> a.toBuilder().setState(state).setResult(result).setRanMillis(System.currentTimeMillis()).build());
    List<ScheduledAction> all = list();
    for (int i = 0; i < all.size() - KEEP; i++) {
      if (all.get(i).getState() != ScheduledAction.State.WAITING) {
        coordinator.delete(PATH + "/" + all.get(i).getId());
      }
    }
  }

  private ScheduledAction update(String id, java.util.function.UnaryOperator<ScheduledAction> change) {
    checkId(id);
    if (get(id).isEmpty()) {
      throw new IllegalArgumentException("no scheduled action " + id);
    }
    return parse(id, coordinator.update(PATH + "/" + id, data -> change.apply(parse(id, data)).toBuilder().clearId().build().toByteArray()));
  }

  /** @throws IllegalArgumentException for what is not an action's id */
  public static void checkId(String id) {
    if (!id.matches("s-[0-9]{1,10}")) {
      throw new IllegalArgumentException("'" + id + "' is not a scheduled action's id (they look like s-0000000003)");
    }
  }

  private static ScheduledAction parse(String id, byte[] data) {
    try {
      return ScheduledAction.parseFrom(data).toBuilder().setId(id).build();
    } catch (InvalidProtocolBufferException e) {
      throw new CoordinationException("a scheduled action in ZooKeeper is not readable: " + e.getMessage(), e);
    }
  }
}
