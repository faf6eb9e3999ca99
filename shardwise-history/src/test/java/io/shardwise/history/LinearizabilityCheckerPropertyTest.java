package io.shardwise.history;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.constraints.IntRange;

/**
 * The checker's search (memoised, unknown writes that cannot be told apart tried as one) against
 * a plain enumeration of every order of every subset of the unknown operations, on small random
 * histories: both must give the same answer. Histories come from a real execution of the model
 * (each operation takes effect at a random instant within its interval), some outcomes are turned
 * unknown, and some results are then corrupted, so both answers occur.
 */
class LinearizabilityCheckerPropertyTest {

  @Property(tries = 3000)
  void theSearchAgreesWithAnEnumerationOfEveryOrder(@ForAll long seed, @ForAll @IntRange(min = 1, max = 7) int size) {
    List<Op> history = history(new Random(seed), size);
    boolean search = LinearizabilityChecker.checkKey("k", history).isEmpty();
    Statistics.collect(search ? "linearizable" : "not linearizable");
    assertThat(search).as("seed %d, history %s", seed, history).isEqualTo(enumerate(history));
  }

  /** Executes {@code size} random operations of 3 clients against the model, then perturbs it. */
  private static List<Op> history(Random random, int size) {
    record Planned(int client, Op.Kind kind, String value, long invoked, long completed, long at) {}
    List<Planned> planned = new ArrayList<>();
    long[] clientFree = new long[3];
    for (int i = 0; i < size; i++) {
      int client = random.nextInt(3);
      long invoked = clientFree[client] + random.nextInt(4);
      long completed = invoked + 1 + random.nextInt(6);
      clientFree[client] = completed + 1;
      Op.Kind kind = Op.Kind.values()[random.nextInt(4)];
      String value = "v" + random.nextInt(3); // few values: some writes write the same one
      planned.add(new Planned(client, kind, value, invoked, completed, invoked + random.nextInt((int) (completed - invoked) + 1)));
    }
    planned.sort(java.util.Comparator.comparingLong(Planned::at));
    LinearizabilityChecker.State state = LinearizabilityChecker.State.INITIAL;
    List<Op> ops = new ArrayList<>();
    for (Planned p : planned) {
      boolean unknown = p.kind() != Op.Kind.GET && random.nextInt(3) == 0;
      boolean applied = !unknown || random.nextBoolean();
      Op op = switch (p.kind()) {
        case PUT -> Op.put(p.client(), p.value(), p.invoked(), p.completed(), Op.Outcome.OK, state.storedVersion() + 1);
        case PUT_IF_VERSION -> {
          long expected = random.nextBoolean() ? state.liveVersion() : random.nextInt(3);
          boolean matches = expected == state.liveVersion();
          yield Op.putIfVersion(p.client(), p.value(), expected, p.invoked(), p.completed(), matches ? Op.Outcome.OK : Op.Outcome.FAILED,
              matches ? state.storedVersion() + 1 : state.liveVersion());
        }
        case DELETE -> Op.delete(p.client(), p.invoked(), p.completed(), Op.Outcome.OK, state.live());
        case GET -> Op.get(p.client(), state.live() ? state.value() : null, state.liveVersion(), p.invoked(), p.completed());
      };
      if (applied) {
        state = state.apply(op);
      }
      if (unknown) {
        op = new Op(op.client(), op.kind(), op.value(), op.expected(), op.invoked(), op.completed(), Op.Outcome.UNKNOWN, 0, false);
      }
      ops.add(op);
    }
    if (random.nextInt(3) == 0) { // a wrong result: usually, not always, a violation
      int i = random.nextInt(ops.size());
      Op op = ops.get(i);
      ops.set(i, op.kind() == Op.Kind.GET
          ? Op.get(op.client(), op.found() ? null : "v0", op.found() ? 0 : 1, op.invoked(), op.completed())
          : new Op(op.client(), op.kind(), op.value(), op.expected(), op.invoked(), op.completed(), op.outcome(), op.version() + 1,
              !op.found()));
    }
    return ops;
  }

  /** Every order of every subset that holds all operations that must take effect, respecting real time. */
  private static boolean enumerate(List<Op> history) {
    List<Op> ops = history.stream()
        .filter(op -> !(op.outcome() == Op.Outcome.FAILED && op.kind() != Op.Kind.PUT_IF_VERSION))
        .toList();
    return extend(ops, new BitSet(), LinearizabilityChecker.State.INITIAL);
  }

  private static boolean extend(List<Op> ops, BitSet placed, LinearizabilityChecker.State state) {
    boolean allMustPlaced = true;
    for (int i = 0; i < ops.size(); i++) {
      if (!placed.get(i) && ops.get(i).mustLinearize()) {
        allMustPlaced = false;
      }
    }
    if (allMustPlaced) {
      return true;
    }
    for (int i = 0; i < ops.size(); i++) {
      if (placed.get(i) || !mayGoNext(ops, placed, i)) {
        continue;
      }
      LinearizabilityChecker.State next = state.apply(ops.get(i));
      if (next != null) {
        placed.set(i);
        boolean ok = extend(ops, placed, next);
        placed.clear(i);
        if (ok) {
          return true;
        }
      }
    }
    return false;
  }

  /** No unplaced operation completed before {@code i} was invoked. */
  private static boolean mayGoNext(List<Op> ops, BitSet placed, int i) {
    for (int j = 0; j < ops.size(); j++) {
      if (!placed.get(j) && j != i && ops.get(j).returned() < ops.get(i).invoked()) {
        return false;
      }
    }
    return true;
  }
}
