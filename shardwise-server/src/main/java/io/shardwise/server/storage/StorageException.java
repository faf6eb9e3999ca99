package io.shardwise.server.storage;

/** RocksDB failed; the operation did not take effect (RocksDB writes are atomic per batch). */
public final class StorageException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public StorageException(String message, Throwable cause) {
    super(message, cause);
  }
}
