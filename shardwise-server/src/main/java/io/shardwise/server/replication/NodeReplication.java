package io.shardwise.server.replication;

import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.server.shard.ReplicatedData;
import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.VersionMismatchException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * The {@link Replicator} as a node's request handlers use it ({@link ReplicatedData}): they wait,
 * at most the write timeout, and every way a replicated request can end becomes what the client
 * understands — a refusal before anything was written carries its error code (the client retries
 * at once, knowing nothing happened); a write whose fate this node cannot know is UNAVAILABLE
 * without one (the client retries under the same write id, which answers the first outcome).
 */
public final class NodeReplication implements ReplicatedData {

  private final Replicator replicator;
  private final ReplicationConfig config;
  private final LongSupplier mapEpoch;
  private final Runnable beforeWaiting;

  /**
   * @param beforeWaiting runs before a read waits for its barrier (a leader without a read lease):
   *     on a thread that must not wait, it throws, and the request runs again where it may
   */
  public NodeReplication(Replicator replicator, ReplicationConfig config, LongSupplier mapEpoch, Runnable beforeWaiting) {
    this.replicator = replicator;
    this.config = config;
    this.mapEpoch = mapEpoch;
    this.beforeWaiting = beforeWaiting;
  }

  @Override
  public java.util.Map<ShardRef, long[]> write(java.util.Map<ShardRef, List<Mutation>> parts) throws VersionMismatchException {
    java.util.Map<ShardRef, CompletableFuture<long[]>> started = replicator.write(parts);
    java.util.Map<ShardRef, long[]> out = new java.util.LinkedHashMap<>();
    for (var e : started.entrySet()) {
      out.put(e.getKey(), await(e.getValue(), "the write to shard " + e.getKey()));
    }
    return out;
  }

  @Override
  public boolean leaderReadsWait() {
    return config.readLease().isZero();
  }

  @Override
  public void readBarrier(java.util.Collection<ShardRef> shards) {
    List<CompletableFuture<Void>> started = new java.util.ArrayList<>(shards.size());
    if (leaderReadsWait()) {
      beforeWaiting.run(); // without read leases a leader read takes a round to the followers
    }
    shards.forEach(shard -> started.add(replicator.readBarrier(shard)));
    if (started.stream().anyMatch(f -> !f.isDone())) {
      beforeWaiting.run(); // a lease ran out: a round to the followers (the barriers started here are answered and dropped)
    }
    try {
      await(CompletableFuture.allOf(started.toArray(CompletableFuture[]::new)), "the read of shards " + shards);
    } catch (VersionMismatchException e) {
      throw new IllegalStateException("a read barrier cannot mismatch", e);
    }
  }

  @Override
  public <T> java.util.Optional<T> readAsFollower(ShardRef shard, java.time.Duration maxStaleness, java.util.function.Supplier<T> read) {
    return replicator.readAsFollower(shard, maxStaleness.toNanos(), read);
  }

  private <T> T await(CompletableFuture<T> f, String what) throws VersionMismatchException {
    try {
      return f.get(config.writeTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw io.grpc.Status.UNAVAILABLE.withDescription(what + " was not committed within " + config.writeTimeout()
          + " (its in-sync replicas did not all answer): its outcome is unknown; retry it under the same write id").asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw io.grpc.Status.UNAVAILABLE.withDescription(what + " was interrupted: its outcome is unknown").asRuntimeException();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException && e.getCause().getCause() != null
          ? e.getCause().getCause() : e.getCause();
      if (cause instanceof VersionMismatchException mismatch) {
        throw mismatch;
      }
      if (cause instanceof Replica.NotApplied refused) {
        throw switch (refused.reason) {
          case NOT_LEADER -> Errors.notLeader(refused.getMessage(), mapEpoch.getAsLong());
          case NOT_READY -> Errors.replicasUnavailable(ErrorInfo.Code.LEADER_NOT_READY, refused.getMessage(), mapEpoch.getAsLong());
          case NOT_ENOUGH_REPLICAS -> Errors.replicasUnavailable(ErrorInfo.Code.NOT_ENOUGH_REPLICAS, refused.getMessage(),
              mapEpoch.getAsLong());
        };
      }
      if (cause instanceof Replica.OutcomeUnknown unknown) {
        throw io.grpc.Status.UNAVAILABLE.withDescription(unknown.getMessage()).asRuntimeException();
      }
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(cause);
    }
  }
}
