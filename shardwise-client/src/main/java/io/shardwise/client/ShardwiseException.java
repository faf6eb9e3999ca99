package io.shardwise.client;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** A request failed: the gRPC status code and the server's message naming the problem. */
public class ShardwiseException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final Status.Code code;

  public ShardwiseException(StatusRuntimeException cause) {
    super(cause.getStatus().getCode() + ": " + cause.getStatus().getDescription(), cause);
    this.code = cause.getStatus().getCode();
  }

  public ShardwiseException(Status.Code code, String message) {
    super(code + ": " + message);
    this.code = code;
  }

  public Status.Code code() {
    return code;
  }
}
