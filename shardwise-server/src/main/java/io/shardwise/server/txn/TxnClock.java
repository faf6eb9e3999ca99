package io.shardwise.server.txn;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Time as a transaction's coordinator sees it: the clock its deadlines are read on, and its pauses
 * while it waits for another transaction. On a node, the system clock and {@code Thread.sleep}; in
 * a simulation, a clock the schedule advances, so that a wait takes no real time and every run of a
 * seed is the same.
 */
public interface TxnClock {

  /** The system clock; pauses sleep for a random part of what is asked (jitter, so waiters do not move in step). */
  TxnClock SYSTEM = new TxnClock() {
    @Override
    public long millis() {
      return System.currentTimeMillis();
    }

    @Override
    public void pause(long upToMillis) {
      try {
        Thread.sleep(upToMillis / 2 + ThreadLocalRandom.current().nextLong(upToMillis / 2 + 1));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while a transaction waited", e);
      }
    }
  };

  long millis();

  /** Waits about {@code upToMillis} (at most that). */
  void pause(long upToMillis);
}
