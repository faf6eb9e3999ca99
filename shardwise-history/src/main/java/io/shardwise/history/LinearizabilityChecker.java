package io.shardwise.history;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether the history of each key is linearizable against Shardwise's versioned register,
 * the way Knossos and Porcupine do (Wing &amp; Gong's search with Lowe's memoisation): find an order
 * of the operations that respects real time (an operation that completed before another was
 * invoked comes first) and in which every result is what the model gives.
 *
 * <p><b>The model</b> is a key's stored state: live or deleted, its value, and its stored version,
 * which every write raises by one — deletes too, since a delete leaves a tombstone that keeps the
 * version ({@code ShardStore}). A put returns the new version; a conditional put matches against
 * the live version (0 when absent) and otherwise reports it; a get returns the live value and
 * version; a delete of an absent key changes nothing.
 *
 * <p><b>Unknown outcomes</b> (timeouts, lost connections) are treated as "maybe applied": such an
 * operation never completes, so it may take effect at any point after its invocation, or never.
 * Definite failures other than a version mismatch never happened and are left out.
 *
 * <p><b>Interchangeable unknown writes.</b> A node that is down for seconds leaves tens of unknown
 * writes on one key, and a search over every subset of them is hopeless. Two unknown writes with
 * the same effect — same kind, same expected version, and the same value or values no read ever
 * returned (no operation can tell such values apart) — are interchangeable: swapping them in any
 * linearization gives another, because the earlier-invoked one may go wherever the later one may
 * (an operation that may go next stays eligible as others are placed). So of each such class only
 * the earliest-invoked unplaced member is tried, and the search is polynomial in the class sizes.
 *
 * <p>Per-key histories are searched independently (a key's history is small: tens to a few hundred
 * operations); the search is exponential only in the number of distinguishable operations that
 * overlap in time.
 */
public final class LinearizabilityChecker {

  /**
   * A violation: the key, and the operations the search could not get past, with their neighbours;
   * or, if {@code undecided}, a history the search gave up on after {@code budget} states.
   */
  public record Violation(String key, List<Op> stuckAt, List<Op> history, boolean undecided, int budget) {
    @Override
    public String toString() {
      StringBuilder b = new StringBuilder(undecided
          ? "history of key '" + key + "' could not be decided within " + budget + " search states (not shown to be a violation); deepest point:\n"
          : "history of key '" + key + "' is not linearizable; no order places any of:\n");
      stuckAt.forEach(op -> b.append("  ").append(op).append('\n'));
      b.append("full history (by invocation):\n");
      history.forEach(op -> b.append("  ").append(op).append('\n'));
      return b.toString();
    }
  }

  /** Stops a search that would take too long (pathological overlap); such a key is reported, not passed. */
  private static final int MAX_STATES = 2_000_000;

  private LinearizabilityChecker() {}

  /** The first key whose history is not linearizable, or empty if all are. */
  public static Optional<Violation> check(Map<String, List<Op>> historiesByKey) {
    for (Map.Entry<String, List<Op>> e : historiesByKey.entrySet()) {
      Optional<Violation> v = checkKey(e.getKey(), e.getValue());
      if (v.isPresent()) {
        return v;
      }
    }
    return Optional.empty();
  }

  /** Checks one key's history. */
  public static Optional<Violation> checkKey(String key, List<Op> history) {
    return checkKey(key, history, MAX_STATES);
  }

  /** Checks one key's history, giving up after {@code maxStates} search states. */
  static Optional<Violation> checkKey(String key, List<Op> history, int maxStates) {
    List<Op> ops = new ArrayList<>();
    for (Op op : history) {
      if (op.completed() < op.invoked() && op.outcome() != Op.Outcome.UNKNOWN) {
        throw new IllegalArgumentException("an operation on " + key + " completed before it was invoked: " + op);
      }
      boolean neverHappened = op.outcome() == Op.Outcome.FAILED && op.kind() != Op.Kind.PUT_IF_VERSION;
      if (!neverHappened) {
        ops.add(op);
      }
    }
    ops.sort(Comparator.comparingLong(Op::invoked));
    Search search = new Search(ops, maxStates);
    boolean linearizable = ops.size() <= SHALLOW_OPS ? search.run(new BitSet(ops.size()), 0, State.INITIAL)
        : deep(() -> search.run(new BitSet(ops.size()), 0, State.INITIAL));
    if (linearizable) {
      return Optional.empty();
    }
    List<Op> stuck = new ArrayList<>();
    for (int i : search.deepestFrontier) {
      stuck.add(ops.get(i));
    }
    return Optional.of(new Violation(key, stuck, ops, search.exhausted, maxStates));
  }

  /**
   * The search recurses once for every operation it places, so a key with a history of many
   * thousands of operations (a long fault run) goes deeper than a thread's default stack: it runs on
   * a thread of its own with this much stack (reserved, and used only as deep as it goes).
   */
  private static final long SEARCH_STACK_BYTES = 1L << 30;

  /**
   * A history this short searches on the caller's thread: its depth (one frame per operation) fits
   * any thread's default stack, and a thread of its own would cost more than the search (the
   * simulations check thousands of short histories).
   */
  private static final int SHALLOW_OPS = 500;

  private static boolean deep(java.util.function.BooleanSupplier search) {
    boolean[] found = new boolean[1];
    Throwable[] failed = new Throwable[1];
    Thread t = new Thread(null, () -> {
      try {
        found[0] = search.getAsBoolean();
      } catch (Throwable e) {
        failed[0] = e;
      }
    }, "linearizability-search", SEARCH_STACK_BYTES);
    t.start();
    try {
      t.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      t.interrupt();
      throw new IllegalStateException("interrupted while checking a history", e);
    }
    if (failed[0] instanceof RuntimeException r) {
      throw r;
    }
    if (failed[0] instanceof Error err) {
      throw err;
    }
    return found[0];
  }

  /** A key's stored state. */
  record State(boolean live, String value, long storedVersion) {
    static final State INITIAL = new State(false, null, 0);

    long liveVersion() {
      return live ? storedVersion : 0;
    }

    /** The state after {@code op}, or {@code null} if {@code op}'s result cannot happen in this state. */
    State apply(Op op) {
      boolean unknown = op.outcome() == Op.Outcome.UNKNOWN;
      switch (op.kind()) {
        case PUT -> {
          State next = new State(true, op.value(), storedVersion + 1);
          return unknown || op.version() == next.storedVersion ? next : null;
        }
        case PUT_IF_VERSION -> {
          boolean matches = op.expected() == liveVersion();
          if (unknown) {
            return matches ? new State(true, op.value(), storedVersion + 1) : this;
          }
          if (op.outcome() == Op.Outcome.FAILED) {
            return !matches && op.version() == liveVersion() ? this : null;
          }
          return matches && op.version() == storedVersion + 1 ? new State(true, op.value(), storedVersion + 1) : null;
        }
        case DELETE -> {
          State next = live ? new State(false, null, storedVersion + 1) : this;
          return unknown || op.found() == live ? next : null;
        }
        case GET -> {
          if (!op.found()) {
            return live ? null : this;
          }
          return live && op.value().equals(value) && op.version() == storedVersion ? this : null;
        }
        default -> throw new AssertionError(op.kind());
      }
    }
  }

  /**
   * A search state as memoised: the placed operations as the first unplaced one (all before it are
   * placed) and the placed ones from there on, and the model's state.
   */
  private record Visited(int firstUnplaced, BitSet placedFromThere, State state) {}

  /** Depth-first search over (operations placed, state), memoised. */
  private static final class Search {
    private final List<Op> ops;
    /** {@code ops} with the values no read returned replaced by one placeholder: what the model applies. */
    private final List<Op> effects;
    /** Per operation, its class of interchangeable unknown writes, or -1 (distinguishable). */
    private final int[] interchangeable;
    private final int mustPlace;
    private final int maxStates;
    private final Set<Object> seen = new HashSet<>();
    private int deepest = -1;
    private boolean exhausted;
    private List<Integer> deepestFrontier = List.of();

    Search(List<Op> ops, int maxStates) {
      this.ops = ops;
      this.maxStates = maxStates;
      this.mustPlace = (int) ops.stream().filter(Op::mustLinearize).count();
      Set<String> read = new HashSet<>();
      for (Op op : ops) {
        if (op.kind() == Op.Kind.GET && op.found()) {
          read.add(op.value());
        }
      }
      String unread = "<a value no read returned>";
      while (read.contains(unread)) {
        unread = unread + "'";
      }
      this.effects = new ArrayList<>(ops.size());
      this.interchangeable = new int[ops.size()];
      Map<List<Object>, Integer> classes = new HashMap<>();
      for (int i = 0; i < ops.size(); i++) {
        Op op = ops.get(i);
        Op effect = op.value() == null || read.contains(op.value()) || op.kind() == Op.Kind.GET
            ? op
            : new Op(op.client(), op.kind(), unread, op.expected(), op.invoked(), op.completed(), op.outcome(), op.version(), op.found());
        effects.add(effect);
        interchangeable[i] = op.mustLinearize()
            ? -1
            : classes.computeIfAbsent(Arrays.asList(effect.kind(), effect.value(), effect.expected()), c -> classes.size());
      }
    }

    /**
     * Whether the unplaced operations can follow {@code placed} from {@code state}; {@code
     * placedMust}: how many of the placed ones had to take effect. Each step costs the operations
     * concurrent with the first unplaced one, not the history's length: the operations before that
     * one are all placed, and none after the earliest unplaced return can go next.
     */
    boolean run(BitSet placed, int placedMust, State state) {
      if (placedMust == mustPlace) {
        return true;
      }
      if (seen.size() > maxStates) {
        exhausted = true;
        return false;
      }
      int first = placed.nextClearBit(0); // every operation before it is placed
      if (!seen.add(new Visited(first, placed.get(first, Math.max(first, placed.length())), state))) {
        return false;
      }
      // An operation may go next if no unplaced operation completed before it was invoked.
      long earliestReturn = Long.MAX_VALUE;
      for (int i = first; i < ops.size(); i = placed.nextClearBit(i + 1)) {
        Op op = ops.get(i);
        if (op.invoked() > earliestReturn) {
          break; // sorted by invocation, and none returns before it was invoked: no later one returns earlier
        }
        earliestReturn = Math.min(earliestReturn, op.returned());
      }
      List<Integer> frontier = new ArrayList<>();
      BitSet classesTried = new BitSet();
      for (int i = first; i < ops.size(); i = placed.nextClearBit(i + 1)) {
        Op op = ops.get(i);
        if (op.invoked() > earliestReturn) {
          break; // sorted by invocation: every later one is too late as well
        }
        int c = interchangeable[i];
        if (c >= 0) {
          if (classesTried.get(c)) {
            continue; // an earlier-invoked write with the same effect stands for this one
          }
          classesTried.set(c);
        }
        frontier.add(i);
      }
      // Operations that must take effect first, then those that may (unknown outcomes): a run of
      // unknown writes that never happened is then skipped at once instead of after every subset.
      List<Integer> order = new ArrayList<>(frontier);
      order.sort(Comparator.comparing((Integer i) -> !ops.get(i).mustLinearize()));
      for (int i : order) {
        State next = state.apply(effects.get(i));
        if (next != null) {
          placed.set(i);
          boolean ok = run(placed, placedMust + (ops.get(i).mustLinearize() ? 1 : 0), next);
          placed.clear(i);
          if (ok) {
            return true;
          }
        }
      }
      if (placedMust > deepest) {
        deepest = placedMust;
        deepestFrontier = frontier;
      }
      return false;
    }
  }
}
