package io.shardwise.server.storage;

/** RocksDB failed; the operation did not take effect (RocksDB writes are atomic per batch). */
public final class StorageException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final boolean closed;

  public StorageException(String message, Throwable cause) {
    this(message, cause, false);
  }

  private StorageException(String message, Throwable cause, boolean closed) {
    super(message, cause);
    this.closed = closed;
  }

  /** The store was closed (the node is stopping) before the operation touched it. */
  static StorageException closedStore() {
    return new StorageException("the shard store is closed: the node is stopping", null, true);
  }

  /** True if the store was closed before the operation touched it: nothing happened, and another node may serve it. */
  public boolean storeClosed() {
    return closed;
  }
}
