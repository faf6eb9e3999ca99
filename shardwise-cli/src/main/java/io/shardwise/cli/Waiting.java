package io.shardwise.cli;

import java.util.concurrent.CountDownLatch;

/** Keeps a server command running until Ctrl-C (or SIGTERM), then closes what it started. */
final class Waiting {

  private Waiting() {}

  static void untilInterrupted(AutoCloseable... started) {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      System.err.println("shardwise: stopping…");
      for (AutoCloseable c : started) {
        try {
          c.close();
        } catch (Exception e) {
          System.err.println("shardwise: while stopping: " + e.getMessage());
        }
      }
      stopped.countDown();
    }, "shardwise-shutdown"));
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
