package io.shardwise.server.rpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Key;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.CounterOp;
import io.shardwise.proto.v1.ErrorInfo;
import java.util.function.UnaryOperator;

/** A request's counter operation ({@link CounterOp}) as the transform of a key's value that the owner applies ({@link Counters}). */
final class CounterOps {

  private CounterOps() {}

  /**
   * The transform {@code op} asks for on {@code key}.
   *
   * @throws StatusRuntimeException ({@code INVALID_ARGUMENT}) for an operation that cannot apply to
   *     such a key at all: a salt of a sub-key, a seal of a key that is not one, a fanout out of range
   */
  static UnaryOperator<byte[]> transform(CounterOp op, Key key) {
    boolean subKey = Counters.isSubKey(key.partitionKey());
    switch (op.getOpCase()) {
      case INCREMENT: {
        long delta = op.getIncrement();
        return value -> Counters.increment(value, delta);
      }
      case SALT: {
        if (subKey) {
          throw Errors.invalid("a salted key's sub-key is not salted itself");
        }
        int generation = op.getSalt().getGeneration();
        int fanout = op.getSalt().getFanout();
        try {
          Counters.checkFanout(fanout);
        } catch (IllegalArgumentException e) {
          throw Errors.invalid(e.getMessage());
        }
        return value -> Counters.salt(value, generation, fanout);
      }
      case SEAL:
        if (!subKey) {
          throw Errors.invalid("only a salted key's sub-key is sealed");
        }
        return Counters::seal;
      case FOLD: {
        if (subKey) {
          throw Errors.invalid("sub-keys fold into their salted key, not into another sub-key");
        }
        CounterOp.Fold f = op.getFold();
        return value -> Counters.fold(value, f.getGeneration(), f.getIndex(), f.getValue());
      }
      default:
        throw Errors.invalid("a counter operation is one of increment, salt, seal or fold");
    }
  }

  /** A refused counter operation as the status the client reads: nothing was written. */
  static StatusRuntimeException refused(Counters.CounterException e) {
    ErrorInfo.Code code = e.refusal() == Counters.Refusal.SEALED ? ErrorInfo.Code.COUNTER_SEALED : ErrorInfo.Code.NOT_A_COUNTER;
    return Errors.of(Status.FAILED_PRECONDITION, e.getMessage(), ErrorInfo.newBuilder().setCode(code).build());
  }
}
