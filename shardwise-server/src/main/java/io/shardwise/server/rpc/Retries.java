package io.shardwise.server.rpc;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;
import java.util.function.Predicate;

/**
 * The server's retry loops, in one place: an action retried through brief refusals with
 * exponential backoff, and a condition polled until it holds. Both give up after a time budget,
 * never after a number of attempts, so how long an operator waits is what the caller names.
 */
public final class Retries {

  private static final long FIRST_WAIT_MILLIS = 50;
  private static final long LONGEST_WAIT_MILLIS = 1_000;

  private Retries() {}

  /**
   * Calls {@code attempt} (with the attempt's number, from 1) until it returns; a failure that
   * {@code transientFailure} accepts is retried after 50 ms, doubling up to 1 s, until {@code
   * budget} has passed; any other failure, or one after the budget, is thrown.
   */
  public static <T> T withBackoff(Duration budget, Predicate<RuntimeException> transientFailure, IntFunction<T> attempt) {
    long deadline = System.nanoTime() + budget.toNanos();
    for (int n = 1; ; n++) {
      try {
        return attempt.apply(n);
      } catch (RuntimeException e) {
        if (System.nanoTime() > deadline || !transientFailure.test(e)) {
          throw e;
        }
        sleep(Math.min(LONGEST_WAIT_MILLIS, FIRST_WAIT_MILLIS << Math.min(n - 1, 5)));
      }
    }
  }

  /**
   * Asks {@code done} every {@code every} until it holds or {@code budget} has passed; returns
   * whether it held. An interrupt ends the wait (false), the thread's interrupt flag kept.
   */
  public static boolean poll(Duration budget, Duration every, BooleanSupplier done) {
    long deadline = System.nanoTime() + budget.toNanos();
    while (true) {
      if (done.getAsBoolean()) {
        return true;
      }
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(every.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw io.grpc.Status.CANCELLED.withDescription("interrupted while retrying").asRuntimeException();
    }
  }
}
