package io.shardwise.cli;

/** A command failed in a way that has its own exit code (see {@link Main}); the message is the one line shown. */
final class CliException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final int exitCode;

  CliException(int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  /** ZooKeeper, the cluster or a node could not be reached (exit 5). */
  static CliException unavailable(String message, Throwable cause) {
    return new CliException(Main.EXIT_UNAVAILABLE, message, cause);
  }

  /** What the command names does not exist (exit 3). */
  static CliException notFound(String message) {
    return new CliException(Main.EXIT_NOT_FOUND, message, null);
  }

  int exitCode() {
    return exitCode;
  }
}
