package io.shardwise.history;

import static io.shardwise.history.Op.Outcome.FAILED;
import static io.shardwise.history.Op.Outcome.OK;
import static io.shardwise.history.Op.Outcome.UNKNOWN;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Known histories, linearizable and not, each named after what it pins. */
class LinearizabilityCheckerTest {

  private static boolean linearizable(Op... ops) {
    return LinearizabilityChecker.checkKey("k", List.of(ops)).isEmpty();
  }

  @Test
  void aKeyWithALongHistoryIsCheckedWithoutRunningOutOfStack() {
    // One frame per placed operation: 50,000 sequential puts and reads went past a default stack (a SIGSTOP fault run did).
    List<Op> history = new java.util.ArrayList<>();
    long t = 0;
    for (int v = 1; v <= 25_000; v++) {
      history.add(Op.put(1, "v" + v, t++, t++, OK, v));
      history.add(Op.get(2, "v" + v, v, t++, t++));
    }
    assertThat(LinearizabilityChecker.checkKey("k", history)).isEmpty();
    history.add(Op.get(2, "v1", 1, t++, t++));
    assertThat(LinearizabilityChecker.checkKey("k", history)).isPresent();
  }

  @Test
  void theLongestHistorySearchedOnTheCallersThreadFitsASmallStack() throws InterruptedException {
    // Histories of up to SHALLOW_OPS operations skip the search's own thread; 500 frames must fit a
    // stack well below any thread's default (1 MiB on Linux x64): here 256 KiB, interpreted or not.
    List<Op> history = new java.util.ArrayList<>();
    long t = 0;
    for (int v = 1; v <= 250; v++) {
      history.add(Op.put(1, "v" + v, t++, t++, OK, v));
      history.add(Op.get(2, "v" + v, v, t++, t++));
    }
    Object[] result = new Object[1];
    Thread small = new Thread(null, () -> {
      try {
        result[0] = LinearizabilityChecker.checkKey("k", history);
      } catch (Throwable e) {
        result[0] = e;
      }
    }, "small-stack", 256 * 1024);
    small.start();
    small.join();
    assertThat(result[0]).isEqualTo(java.util.Optional.empty());
  }

  @Test
  void anOperationThatCompletedBeforeItWasInvokedIsRefusedAsAMalformedHistory() {
    // The search relies on every operation returning after its invocation; a recorder that breaks it is named.
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> linearizable(Op.put(1, "a", 5, 4, OK, 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("completed before it was invoked");
  }

  @Test
  void aSequentialHistoryThatFollowsTheModelPasses() {
    assertThat(linearizable(
        Op.put(1, "a", 0, 1, OK, 1),
        Op.get(2, "a", 1, 2, 3),
        Op.putIfVersion(1, "b", 1, 4, 5, OK, 2),
        Op.putIfVersion(2, "c", 1, 6, 7, FAILED, 2),
        Op.delete(1, 8, 9, OK, true),
        Op.get(2, null, 0, 10, 11),
        Op.delete(1, 12, 13, OK, false),
        Op.put(2, "d", 14, 15, OK, 4))).isTrue(); // the delete's tombstone kept version 3
  }

  @Test
  void anAcknowledgedWriteThatAReadLaterMissesIsALostWrite() {
    assertThat(linearizable(Op.put(1, "a", 0, 1, OK, 1), Op.get(2, null, 0, 2, 3))).isFalse();
  }

  @Test
  void aReadOfAnOverwrittenValueAfterTheOverwriteCompletedIsStale() {
    assertThat(linearizable(Op.put(1, "a", 0, 1, OK, 1), Op.put(1, "b", 2, 3, OK, 2), Op.get(2, "a", 1, 4, 5))).isFalse();
  }

  @Test
  void aReadConcurrentWithAWriteMaySeeEitherSide() {
    assertThat(linearizable(Op.put(1, "a", 0, 10, OK, 1), Op.get(2, "a", 1, 2, 3))).isTrue();
    assertThat(linearizable(Op.put(1, "a", 0, 10, OK, 1), Op.get(2, null, 0, 2, 3))).isTrue();
    assertThat(linearizable(Op.put(1, "a", 0, 10, OK, 1), Op.get(2, "a", 1, 2, 3), Op.get(3, null, 0, 4, 5)))
        .as("but once one read saw it, a later read must too").isFalse();
  }

  @Test
  void anUnknownWriteMayHaveHappenedOrNot() {
    assertThat(linearizable(Op.put(1, "a", 0, 1, UNKNOWN, 0), Op.get(2, "a", 1, 5, 6))).isTrue();
    assertThat(linearizable(Op.put(1, "a", 0, 1, UNKNOWN, 0), Op.get(2, null, 0, 5, 6))).isTrue();
    assertThat(linearizable(Op.put(1, "a", 0, 1, UNKNOWN, 0), Op.get(2, "a", 1, 5, 6), Op.get(2, null, 0, 7, 8))).isFalse();
  }

  @Test
  void aRetriedWriteAppliedTwiceShowsAsAVersionTooHigh() {
    // One put, answered with version 2: it was applied twice (issue 11, path 4).
    assertThat(linearizable(Op.put(1, "a", 0, 10, OK, 2))).isFalse();
  }

  @Test
  void aConditionalPutThatReportsAMismatchMustSeeAnotherVersion() {
    assertThat(linearizable(Op.putIfVersion(1, "a", 0, 0, 1, FAILED, 0))).as("absent, expected 0: it must have matched").isFalse();
    assertThat(linearizable(Op.put(2, "x", 0, 1, OK, 1), Op.putIfVersion(1, "a", 0, 2, 3, FAILED, 1))).isTrue();
  }

  @Test
  void definiteFailuresOfPlainWritesNeverHappened() {
    assertThat(linearizable(Op.put(1, "a", 0, 1, FAILED, 0), Op.get(2, null, 0, 2, 3))).isTrue();
  }

  @Test
  void theViolationNamesTheKeyAndTheOperationsItCouldNotPlace() {
    var v = LinearizabilityChecker.check(Map.of("user-7", List.of(Op.put(1, "a", 0, 1, OK, 1), Op.get(2, null, 0, 2, 3))));
    assertThat(v).isPresent();
    assertThat(v.get().key()).isEqualTo("user-7");
    assertThat(v.get().toString()).contains("user-7").contains("get() -> ok absent");
  }

  @Test
  void manyOverlappingOperationsAreSearchedQuickly() {
    // 8 clients, 40 rounds, every round's operations overlapping each other: a realistic worst case.
    List<Op> ops = new java.util.ArrayList<>();
    long version = 0;
    for (int round = 0; round < 40; round++) {
      long t = round * 100L;
      for (int c = 0; c < 7; c++) {
        ops.add(Op.get(c, version == 0 ? null : "v" + version, version, t, t + 50 + c));
      }
      version++;
      ops.add(Op.put(7, "v" + version, t + 1, t + 60, OK, version));
    }
    // The reads were invoked before the put was and completed after it started: each may see either.
    assertThat(LinearizabilityChecker.checkKey("k", ops)).isEmpty();
  }

  /**
   * A node down for seconds leaves many unknown writes on its keys (the wrong-zookeeper campaign:
   * 18 on one key). None took effect, as the versions after show. The search must find that
   * quickly instead of trying every subset first — it used to run out of states and call the
   * history "not linearizable".
   */
  @Test
  void manyUnknownWritesThatNeverTookEffectAreDecidedQuickly() {
    List<Op> ops = new java.util.ArrayList<>();
    ops.add(Op.put(0, "a", 0, 1, OK, 1));
    for (int i = 0; i < 24; i++) {
      long at = 10 + i;
      ops.add(switch (i % 3) {
        case 0 -> Op.putIfVersion(1 + i % 4, "u" + i, 1, at, 0, UNKNOWN, 0);
        case 1 -> Op.put(1 + i % 4, "p" + i, at, 0, UNKNOWN, 0);
        default -> Op.delete(1 + i % 4, at, 0, UNKNOWN, false);
      });
    }
    ops.add(Op.putIfVersion(3, "b", 1, 100, 110, OK, 2));
    ops.add(Op.get(0, "b", 2, 120, 121));
    long started = System.nanoTime();
    assertThat(LinearizabilityChecker.checkKey("k", ops)).isEmpty();
    assertThat(System.nanoTime() - started).as("decided without a long search").isLessThan(5_000_000_000L);
  }

  @Test
  void unknownWritesNoReadCanTellApartAreTriedAsOne() {
    // 30 unknown puts of values no read returned, then a read at version 20: some 19 of them took
    // effect, then one more — which 19 cannot be told apart, so the search need not try them all.
    List<Op> ops = new java.util.ArrayList<>();
    for (int i = 0; i < 30; i++) {
      ops.add(Op.put(i % 4, "p" + i, i, 0, UNKNOWN, 0));
    }
    ops.add(Op.put(4, "last", 40, 50, UNKNOWN, 0));
    ops.add(Op.get(5, "last", 20, 100, 101));
    assertThat(LinearizabilityChecker.checkKey("k", ops)).isEmpty();
    ops.set(ops.size() - 1, Op.get(5, "last", 40, 100, 101));
    assertThat(LinearizabilityChecker.checkKey("k", ops)).as("only 31 writes: version 40 is out of reach").isPresent()
        .get().extracting(LinearizabilityChecker.Violation::undecided).isEqualTo(false);
  }

  @Test
  void unknownWritesAReadCanTellApartAreNotMerged() {
    // Two unknown puts; a read saw "a" after "b" completed... neither completed, so either order is
    // open — but a read of "a" at version 1 rules out "b" first, and one of "b" at version 2 then
    // needs "a" before "b".
    assertThat(linearizable(Op.put(1, "a", 0, 0, UNKNOWN, 0), Op.put(2, "b", 1, 0, UNKNOWN, 0),
        Op.get(3, "a", 1, 5, 6), Op.get(3, "b", 2, 7, 8))).isTrue();
    assertThat(linearizable(Op.put(1, "a", 0, 0, UNKNOWN, 0), Op.put(2, "b", 1, 0, UNKNOWN, 0),
        Op.get(3, "b", 1, 5, 6), Op.get(3, "a", 1, 7, 8))).as("a read of b at v1 then a at v1").isFalse();
  }

  @Test
  void aSearchThatRunsOutOfStatesSaysUndecidedNotViolation() {
    // 24 unknown puts each of a value some read returned — so none are interchangeable — and reads
    // at a version no order reaches: a true violation, but only after trying every subset, more
    // than the search is given here (the default budget, 2,000,000 states, takes some 15 s).
    List<Op> ops = new java.util.ArrayList<>();
    for (int i = 0; i < 24; i++) {
      ops.add(Op.put(i % 4, "p" + i, i, 0, UNKNOWN, 0));
    }
    for (int i = 0; i < 24; i++) {
      ops.add(Op.get(0, "p" + i, 100, 100 + 2 * i, 101 + 2 * i));
    }
    var v = LinearizabilityChecker.checkKey("k", ops, 50_000);
    assertThat(v).isPresent();
    assertThat(v.get().undecided()).isTrue();
    assertThat(v.get().toString()).startsWith("history of key 'k' could not be decided within 50000 search states");
  }
}
