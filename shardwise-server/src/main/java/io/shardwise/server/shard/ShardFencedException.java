package io.shardwise.server.shard;

import io.shardwise.server.storage.ShardRef;
import java.time.Duration;

/**
 * A request reached a shard this node does not serve right now: paused for the last step of a
 * move, handed off to another node, or not held here at all. Nothing was read or written. The
 * caller waits for {@link #awaitOpen} and routes again on the map it has then: by that time the
 * shard either belongs to another node or the move was abandoned.
 */
public final class ShardFencedException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient LocalShard shard;

  ShardFencedException(ShardRef ref, LocalShard shard, String why) {
    super("shard " + ref + " " + why, null, false, false);
    this.shard = shard;
  }

  /** Waits (at most {@code timeout}) until the shard is no longer paused; true if it is not. */
  public boolean awaitOpen(Duration timeout) {
    return shard == null || shard.awaitOpen(timeout);
  }
}
