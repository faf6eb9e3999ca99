package io.shardwise.server.storage;

/** A conditional write expected one version and found another; nothing was written. */
public final class VersionMismatchException extends Exception {

  private static final long serialVersionUID = 1L;

  private final long expected;
  private final long actual;

  public VersionMismatchException(long expected, long actual) {
    super("expected version " + expected + " but the current version is " + actual + (actual == 0 ? " (absent)" : ""));
    this.expected = expected;
    this.actual = actual;
  }

  public long expected() {
    return expected;
  }

  /** The current version; 0 when the key is absent. */
  public long actual() {
    return actual;
  }
}
