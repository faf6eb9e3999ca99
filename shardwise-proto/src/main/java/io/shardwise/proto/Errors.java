package io.shardwise.proto;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.shardwise.proto.v1.ErrorInfo;
import java.util.Optional;

/**
 * Shardwise errors as gRPC statuses: a status code, a message naming the problem, and an
 * {@link ErrorInfo} trailer that says what the caller can do (refresh its map and retry, go to the
 * owner named, …). Stateless.
 */
public final class Errors {

  public static final Metadata.Key<ErrorInfo> ERROR_INFO = ProtoUtils.keyForProto(ErrorInfo.getDefaultInstance());

  private Errors() {}

  public static StatusRuntimeException of(Status status, String message, ErrorInfo info) {
    Metadata trailers = new Metadata();
    trailers.put(ERROR_INFO, info);
    return status.withDescription(message).asRuntimeException(trailers);
  }

  /** Another node owns the key's shard. FAILED_PRECONDITION: retrying here will not help. */
  public static StatusRuntimeException wrongShard(long mapEpoch, String shard, String owner, String ownerAddress) {
    return of(
        Status.FAILED_PRECONDITION,
        "WRONG_SHARD: shard " + shard + " belongs to " + owner + " at map epoch " + mapEpoch,
        ErrorInfo.newBuilder()
            .setCode(ErrorInfo.Code.WRONG_SHARD)
            .setMapEpoch(mapEpoch)
            .setOwnerNode(owner)
            .setOwnerAddress(ownerAddress)
            .build());
  }

  /**
   * The shard the caller named is not in this node's map: a split or a merge replaced it since the
   * caller's map. WRONG_SHARD, without an owner: the caller refreshes its map and routes again.
   */
  public static StatusRuntimeException shardReplaced(long mapEpoch, String shard) {
    return of(
        Status.FAILED_PRECONDITION,
        "WRONG_SHARD: shard " + shard + " is not in the map at epoch " + mapEpoch + " (it was split or merged)",
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.WRONG_SHARD).setMapEpoch(mapEpoch).build());
  }

  /**
   * A replicated shard refused a write before writing anything: fewer in-sync replicas than its
   * table needs ({@code NOT_ENOUGH_REPLICAS}), or a new leader still committing its log ({@code
   * LEADER_NOT_READY}). UNAVAILABLE: retry shortly; the client knows nothing was written.
   */
  public static StatusRuntimeException replicasUnavailable(ErrorInfo.Code code, String message, long mapEpoch) {
    return of(Status.UNAVAILABLE, code.name() + ": " + message, ErrorInfo.newBuilder().setCode(code).setMapEpoch(mapEpoch).build());
  }

  /** This node no longer leads a replicated shard (its map is catching up). Nothing was done: refresh and retry. */
  public static StatusRuntimeException notLeader(String message, long mapEpoch) {
    return of(Status.UNAVAILABLE, "NOT_LEADER: " + message,
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.NOT_LEADER).setMapEpoch(mapEpoch).build());
  }

  /** This node's map is older than the caller's. UNAVAILABLE: retry shortly. */
  public static StatusRuntimeException mapBehind(long mapEpoch, long requestEpoch) {
    return of(
        Status.UNAVAILABLE,
        "MAP_BEHIND: this node's map is at epoch " + mapEpoch + ", the request's at " + requestEpoch,
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.MAP_BEHIND).setMapEpoch(mapEpoch).build());
  }

  /** Fenced: this node lost its ZooKeeper session and has not re-read the map yet. */
  public static StatusRuntimeException notServing(String node, long mapEpoch) {
    return of(
        Status.UNAVAILABLE,
        "NOT_SERVING: node " + node + " lost its ZooKeeper session and accepts no writes until it has re-read the shard map",
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.NOT_SERVING).setMapEpoch(mapEpoch).build());
  }

  public static StatusRuntimeException limit(String message) {
    return of(Status.INVALID_ARGUMENT, message, ErrorInfo.newBuilder().setCode(ErrorInfo.Code.LIMIT_EXCEEDED).build());
  }

  public static StatusRuntimeException versionMismatch(String message, long current) {
    return of(
        Status.FAILED_PRECONDITION,
        "VERSION_MISMATCH: " + message,
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.VERSION_MISMATCH).setCurrentVersion(current).build());
  }

  public static StatusRuntimeException noSuchTable(String table, long mapEpoch) {
    return of(
        Status.NOT_FOUND,
        "no table named '" + table + "'",
        ErrorInfo.newBuilder().setCode(ErrorInfo.Code.NO_SUCH_TABLE).setMapEpoch(mapEpoch).build());
  }

  public static StatusRuntimeException invalid(String message) {
    return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
  }

  /** The {@link ErrorInfo} of a failed call, if the server attached one. */
  public static Optional<ErrorInfo> info(Throwable t) {
    if (t instanceof StatusRuntimeException) {
      Metadata trailers = ((StatusRuntimeException) t).getTrailers();
      if (trailers != null && trailers.containsKey(ERROR_INFO)) {
        return Optional.of(trailers.get(ERROR_INFO));
      }
    }
    return Optional.empty();
  }

  /** The error code of a failed call, or CODE_UNSPECIFIED. */
  public static ErrorInfo.Code code(Throwable t) {
    return info(t).map(ErrorInfo::getCode).orElse(ErrorInfo.Code.CODE_UNSPECIFIED);
  }
}
