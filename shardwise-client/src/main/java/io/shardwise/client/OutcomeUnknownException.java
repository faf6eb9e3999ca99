package io.shardwise.client;

import io.grpc.StatusRuntimeException;

/**
 * A write whose outcome the client cannot know: an attempt failed in a way that may have come
 * after the owner applied it (a lost connection, a deadline), and every retry failed too. The
 * write was applied once or not at all — never twice, since every attempt carried the same write
 * id — so reading the key tells which; retrying it with the same call is not the same write.
 */
public final class OutcomeUnknownException extends ShardwiseException {

  private static final long serialVersionUID = 1L;

  OutcomeUnknownException(StatusRuntimeException last) {
    super(last);
  }
}
