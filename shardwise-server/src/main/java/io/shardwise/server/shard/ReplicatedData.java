package io.shardwise.server.shard;

import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.VersionMismatchException;
import java.util.List;

/**
 * The data path of the shards of replicated tables, as {@link LocalShards} uses it: a write goes
 * through the shard's replication log and returns once every in-sync replica holds it; a read waits
 * behind the leader's read barrier. The replication package implements it; a node without
 * replicated tables never calls it.
 */
public interface ReplicatedData {

  /** For nodes and tests without replication: every call refuses. */
  ReplicatedData NONE = new ReplicatedData() {
    @Override
    public long[] write(ShardRef shard, List<Mutation> batch) {
      throw new IllegalStateException("shard " + shard + " is replicated but this node has no replication");
    }

    @Override
    public void readBarrier(ShardRef shard) {
      throw new IllegalStateException("shard " + shard + " is replicated but this node has no replication");
    }
  };

  /**
   * Writes {@code batch} (every mutation in {@code shard}) through the shard's log and blocks until
   * it is committed and applied here.
   *
   * @return what {@link io.shardwise.server.storage.ShardEngine#apply} returns
   * @throws VersionMismatchException as {@code apply}, once this node is known to lead the shard
   * @throws io.grpc.StatusRuntimeException a refusal before anything was written (with its error
   *     code), or an outcome this node cannot know (UNAVAILABLE without one: the client retries
   *     under the same write id)
   */
  long[] write(ShardRef shard, List<Mutation> batch) throws VersionMismatchException;

  /** Blocks until a read of {@code shard} here is linearizable; throws like {@link #write} when this node does not lead it. */
  void readBarrier(ShardRef shard);
}
