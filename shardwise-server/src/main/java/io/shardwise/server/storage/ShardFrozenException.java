package io.shardwise.server.storage;

/**
 * A write (or, during a cutover, a read) reached a shard that is paused for the last step of a
 * move. Nothing was written. The caller waits for {@link ChangeLog#awaitOpen} and routes again: by
 * then the shard either belongs to another node or the move was abandoned.
 */
public final class ShardFrozenException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient ChangeLog log;

  ShardFrozenException(ShardRef shard, ChangeLog log) {
    super("shard " + shard + " is pausing writes for a move", null, false, false);
    this.log = log;
  }

  /** The change log of the move that paused the shard. */
  public ChangeLog log() {
    return log;
  }
}
