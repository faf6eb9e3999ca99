package io.shardwise.server.storage;

/** A conditional write expected one version and found another; nothing was written. */
public final class VersionMismatchException extends Exception {

  private static final long serialVersionUID = 1L;

  private final long expected;
  private final long actual;
  private final int index;

  public VersionMismatchException(long expected, long actual) {
    this(expected, actual, -1);
  }

  /** The mismatch of the {@code index}th mutation of a batch (-1: not told). */
  public VersionMismatchException(long expected, long actual, int index) {
    super("expected " + (expected == Mutation.EXISTS ? "the key to exist" : "version " + expected) + " but the current version is "
        + actual + (actual == 0 ? " (absent)" : ""));
    this.expected = expected;
    this.actual = actual;
    this.index = index;
  }

  /** Which mutation of its batch did not match (-1: not told). */
  public int index() {
    return index;
  }

  public long expected() {
    return expected;
  }

  /** The current version; 0 when the key is absent. */
  public long actual() {
    return actual;
  }
}
