package io.shardwise.client;

import io.grpc.StatusRuntimeException;

/** An increment sent to a salted key's sub-key that was sealed (the key is being demoted): not applied. */
final class CounterSealedException extends ShardwiseException {

  private static final long serialVersionUID = 1L;

  CounterSealedException(StatusRuntimeException cause) {
    super(cause);
  }
}
