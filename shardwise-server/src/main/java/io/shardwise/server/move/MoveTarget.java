package io.shardwise.server.move;

import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * The destination of one move, as its source calls it: the node-to-node calls of the move
 * protocol. Over gRPC in a node ({@link GrpcMoveTarget}); direct calls with lost replies and
 * crashes in the move simulation. Any call may fail after the destination acted on it.
 */
interface MoveTarget {

  /** Opens the destination of a move; throws if the destination is not live. */
  interface Factory {
    MoveTarget open(MoveShardRequest request, ShardRef shard);
  }

  /**
   * Sends the shard's snapshot ({@code null}: the shard is empty); the destination replaces
   * whatever it held of the shard with it. {@code sent} hears the bytes of every chunk before it
   * is sent (and 0 while it waits for the destination to read), and may throw to stop.
   */
  void sendSnapshot(Path file, LongConsumer sent);

  /** Sends the current stored values (absent: deleted) of keys written since the snapshot. */
  void applyChanges(List<ShardEngine.StoredValue> values);

  /**
   * Asks the destination to drop its copy of an abandoned move; it drops it only if the map it
   * reads shows the shard still at {@code plannedEpoch} elsewhere.
   */
  void dropCopy(long plannedEpoch);
}
