package io.shardwise.server.coordination;

/** ZooKeeper could not be reached or did not accept a change. */
public final class CoordinationException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public CoordinationException(String message) {
    super(message);
  }

  public CoordinationException(String message, Throwable cause) {
    super(message, cause);
  }
}
