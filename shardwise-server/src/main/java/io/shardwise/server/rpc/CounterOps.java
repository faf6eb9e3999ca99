package io.shardwise.server.rpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Key;
import io.shardwise.core.key.Lists;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.CounterOp;
import io.shardwise.proto.v1.ErrorInfo;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * A request's counter or list operation ({@link CounterOp}) as the transform of a key's value that
 * the owner applies ({@link Counters}, {@link Lists}).
 */
final class CounterOps {

  private CounterOps() {}

  /**
   * The transform {@code op} asks for on {@code key}; an append is stamped by {@code nowMicros} when
   * the owner applies it, and refused if the list would pass {@code maxValueBytes}.
   *
   * @throws StatusRuntimeException ({@code INVALID_ARGUMENT}) for an operation that cannot apply to
   *     such a key at all: a salt of a sub-key, a seal of a key that is not one, a fanout out of range
   */
  static UnaryOperator<byte[]> transform(CounterOp op, Key key, LongSupplier nowMicros, int maxValueBytes) {
    boolean subKey = Counters.isSubKey(key.partitionKey());
    boolean list = op.getList();
    switch (op.getOpCase()) {
      case INCREMENT: {
        long delta = op.getIncrement();
        return value -> Counters.increment(value, delta);
      }
      case APPEND: {
        byte[] element = op.getAppend().toByteArray();
        int origin = subKey ? Counters.subKeyIndex(key.partitionKey()) : Lists.KEY;
        return value -> Lists.append(value, element, nowMicros.getAsLong(), origin, maxValueBytes);
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
        return list ? value -> Lists.salt(value, generation, fanout) : value -> Counters.salt(value, generation, fanout);
      }
      case SEAL:
        if (!subKey) {
          throw Errors.invalid("only a salted key's sub-key is sealed");
        }
        return list ? Lists::seal : Counters::seal;
      case FOLD: {
        if (subKey) {
          throw Errors.invalid("sub-keys fold into their salted key, not into another sub-key");
        }
        CounterOp.Fold f = op.getFold();
        if (!list) {
          return value -> Counters.fold(value, f.getGeneration(), f.getIndex(), f.getValue());
        }
        java.util.List<Lists.Element> sealed;
        try {
          sealed = Lists.sealedElements(f.getElements().toByteArray());
        } catch (Counters.CounterException e) {
          throw Errors.invalid("a list's fold carries its sealed sub-key's value: " + e.getMessage());
        }
        return value -> Lists.fold(value, f.getGeneration(), f.getIndex(), sealed);
      }
      default:
        throw Errors.invalid("a counter operation is one of increment, append, salt, seal or fold");
    }
  }

  /** This node's wall clock in microseconds, which stamps appends (the system clock's resolution: microseconds on Linux). */
  static long nowMicros() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
  }

  /** A refused counter or list operation as the status the client reads: nothing was written. */
  static StatusRuntimeException refused(Counters.CounterException e) {
    if (e.refusal() == Counters.Refusal.TOO_LARGE) {
      return Errors.limit(e.getMessage());
    }
    ErrorInfo.Code code = switch (e.refusal()) {
      case SEALED -> ErrorInfo.Code.COUNTER_SEALED;
      case NOT_A_LIST -> ErrorInfo.Code.NOT_A_LIST;
      default -> ErrorInfo.Code.NOT_A_COUNTER;
    };
    return Errors.of(Status.FAILED_PRECONDITION, e.getMessage(), ErrorInfo.newBuilder().setCode(code).build());
  }
}
