package io.shardwise.proto;

import com.google.protobuf.ByteString;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.proto.v1.TransactResponse;
import io.shardwise.proto.v1.TxnCancellation;
import java.util.ArrayList;
import java.util.List;

/** Transactions' items and outcomes to and from their protobuf messages, for the client and the nodes alike. */
public final class TxnCodec {

  private TxnCodec() {}

  /**
   * {@code item}, with its key already checked and decoded as {@code key}.
   *
   * @throws IllegalArgumentException for an item that is not one (no table, an unknown operation or
   *     condition, a VERSION condition of 0, a check without a condition, a value on a delete)
   */
  public static TxnItem item(io.shardwise.proto.v1.TxnItem item, Key key) {
    TxnItem.Op op = switch (item.getOp()) {
      case PUT -> TxnItem.Op.PUT;
      case DELETE -> TxnItem.Op.DELETE;
      case CHECK -> TxnItem.Op.CHECK;
      default -> throw new IllegalArgumentException("unknown item operation " + item.getOpValue());
    };
    long expected = switch (item.getCondition()) {
      case NONE -> TxnItem.ANY;
      case EXISTS -> TxnItem.EXISTS;
      case ABSENT -> TxnItem.ABSENT;
      case VERSION -> {
        if (item.getExpectedVersion() < 1) {
          throw new IllegalArgumentException("a VERSION condition names a version of at least 1 (ABSENT is its own condition)");
        }
        yield item.getExpectedVersion();
      }
      default -> throw new IllegalArgumentException("unknown item condition " + item.getConditionValue());
    };
    if (item.getTable().isEmpty()) {
      throw new IllegalArgumentException("an item names its table");
    }
    return new TxnItem(item.getTable(), key, op, item.getValue().toByteArray(), expected);
  }

  public static io.shardwise.proto.v1.TxnItem item(TxnItem item) {
    io.shardwise.proto.v1.TxnItem.Builder b = io.shardwise.proto.v1.TxnItem.newBuilder().setTable(item.table()).setKey(key(item.key()))
        .setOp(io.shardwise.proto.v1.TxnItem.Op.valueOf(item.op().name())).setValue(ByteString.copyFrom(item.value()));
    long e = item.expectedVersion();
    if (e == TxnItem.EXISTS) {
      b.setCondition(io.shardwise.proto.v1.TxnItem.Condition.EXISTS);
    } else if (e == TxnItem.ABSENT) {
      b.setCondition(io.shardwise.proto.v1.TxnItem.Condition.ABSENT);
    } else if (e > 0) {
      b.setCondition(io.shardwise.proto.v1.TxnItem.Condition.VERSION).setExpectedVersion(e);
    }
    return b.build();
  }

  public static io.shardwise.proto.v1.Key key(Key k) {
    return io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(k.partitionKey()))
        .setSortKey(ByteString.copyFrom(k.sortKey())).build();
  }

  public static TransactResponse.Builder response(TxnOutcome o) {
    TransactResponse.Builder b = TransactResponse.newBuilder().setOutcome(TransactResponse.Outcome.valueOf(o.status().name()))
        .setTxnId(o.txnId()).setMessage(o.message());
    for (long v : o.versions()) {
      b.addVersions(v);
    }
    for (TxnOutcome.Cancellation c : o.cancellations()) {
      b.addCancellations(TxnCancellation.newBuilder().setItem(c.item()).setReason(c.reason()).setCurrentVersion(c.currentVersion()));
    }
    return b;
  }

  public static TxnOutcome outcome(TransactResponse r) {
    if (r.getOutcome() == TransactResponse.Outcome.OUTCOME_UNSPECIFIED || r.getOutcome() == TransactResponse.Outcome.UNRECOGNIZED) {
      throw new IllegalArgumentException("a transaction's answer without an outcome");
    }
    long[] versions = new long[r.getVersionsCount()];
    for (int i = 0; i < versions.length; i++) {
      versions[i] = r.getVersions(i);
    }
    List<TxnOutcome.Cancellation> cancellations = new ArrayList<>();
    r.getCancellationsList().forEach(c -> cancellations.add(new TxnOutcome.Cancellation(c.getItem(), c.getReason(), c.getCurrentVersion())));
    return new TxnOutcome(TxnOutcome.Status.valueOf(r.getOutcome().name()), versions, cancellations, r.getTxnId(), r.getMessage());
  }
}
