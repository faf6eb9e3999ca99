package io.shardwise.testing;

import java.time.Duration;
import org.awaitility.Awaitility;
import org.awaitility.pollinterval.PollInterval;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestPlan;

/**
 * How every test waits for a condition, set once per test JVM before its first test (the JUnit
 * Platform loads this listener from {@code META-INF/services}, so no test has to ask for it).
 *
 * <p>Awaitility's defaults wait 100 ms before the first look and 100 ms between looks, so an
 * {@code await().until(c)} whose condition already holds still costs 100 ms, and one that holds
 * 5 ms later costs 200 ms. Here the first look is at once and the next ones follow after 4, 8, 16,
 * 32 and 64 ms, then every {@link #LONGEST_POLL}: a condition that holds soon is seen soon, and
 * one that takes seconds is looked at no more often than before. A test that sets its own poll
 * interval keeps it (and starts looking at once too).
 */
public final class AwaitDefaults implements TestExecutionListener {

  /** The poll interval a long wait settles at: Awaitility's own default. */
  static final Duration LONGEST_POLL = Duration.ofMillis(100);

  /** 4, 8, 16, 32, 64 ms, then {@link #LONGEST_POLL}. */
  static final PollInterval DOUBLING = (pollCount, previous) ->
      Duration.ofMillis(Math.min(LONGEST_POLL.toMillis(), 2L << Math.min(Math.max(pollCount, 1), 6)));

  @Override
  public void testPlanExecutionStarted(TestPlan testPlan) {
    Awaitility.setDefaultPollDelay(Duration.ZERO);
    Awaitility.setDefaultPollInterval(DOUBLING);
  }
}
