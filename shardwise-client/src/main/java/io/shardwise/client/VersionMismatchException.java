package io.shardwise.client;

import io.grpc.StatusRuntimeException;

/** A conditional put found another version; nothing was written. */
public final class VersionMismatchException extends ShardwiseException {

  private static final long serialVersionUID = 1L;

  private final long currentVersion;

  VersionMismatchException(StatusRuntimeException cause, long currentVersion) {
    super(cause);
    this.currentVersion = currentVersion;
  }

  /** The key's version now; 0 when absent. */
  public long currentVersion() {
    return currentVersion;
  }
}
