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
    public java.util.Map<ShardRef, long[]> write(java.util.Map<ShardRef, List<Mutation>> parts) {
      throw new IllegalStateException("shards " + parts.keySet() + " are replicated but this node has no replication");
    }

    @Override
    public void readBarrier(java.util.Collection<ShardRef> shards) {
      throw new IllegalStateException("shards " + shards + " are replicated but this node has no replication");
    }

    @Override
    public <T> java.util.Optional<T> readAsFollower(ShardRef shard, java.time.Duration maxStaleness, java.util.function.Supplier<T> read) {
      return java.util.Optional.empty();
    }

    @Override
    public boolean leaderReadsWait() {
      return false;
    }
  };

  /**
   * Writes each shard's part of a batch through that shard's log — all of them under way at once,
   * each atomic on its own — and blocks until every one is committed and applied here.
   *
   * @return per shard, what {@link io.shardwise.server.storage.ShardEngine#apply} returns for its part
   * @throws VersionMismatchException as {@code apply}, once this node is known to lead the shard
   * @throws io.grpc.StatusRuntimeException a refusal before anything was written (with its error
   *     code), or an outcome this node cannot know (UNAVAILABLE without one: the client retries
   *     under the same write ids)
   */
  java.util.Map<ShardRef, long[]> write(java.util.Map<ShardRef, List<Mutation>> parts) throws VersionMismatchException;

  /** Blocks until reads of every one of {@code shards} here are linearizable (their barriers all under way at once). */
  void readBarrier(java.util.Collection<ShardRef> shards);

  /**
   * A bounded-staleness read at a follower: {@code read}'s answer if this node follows {@code
   * shard} and its replica heard and applied its leader's commit within {@code maxStaleness};
   * empty if not (the leader must answer). {@code read} never returns null.
   */
  <T> java.util.Optional<T> readAsFollower(ShardRef shard, java.time.Duration maxStaleness, java.util.function.Supplier<T> read);

  /**
   * Whether a leader's read always waits for its followers here (this node has no read lease: every
   * {@link #readBarrier} takes a round to them), so a request that reads should leave a thread that
   * must not wait before it does any work; with a lease most barriers pass at once.
   */
  boolean leaderReadsWait();
}
