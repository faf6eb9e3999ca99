package io.shardwise.server.rpc;

import com.google.protobuf.ByteString;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.proto.TxnCodec;
import io.shardwise.proto.v1.BatchGetRequest;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.proto.v1.TxnPrepareRequest;
import io.shardwise.proto.v1.TxnPrepareResponse;
import io.shardwise.proto.v1.TxnRecordRequest;
import io.shardwise.proto.v1.TxnRecordResponse;
import io.shardwise.proto.v1.TxnResolveRequest;
import io.shardwise.server.txn.Participants;
import java.util.List;

/**
 * A coordinator's reach into the shards of its transaction, through this process's data service:
 * each step is routed as a batch is — served here for the shards this node holds, forwarded to the
 * owners of the others.
 */
final class RoutedParticipants implements Participants {

  private static final RequestHeader FORWARD = RequestHeader.newBuilder().setForward(true).build();

  private final DataServiceImpl data;

  RoutedParticipants(DataServiceImpl data) {
    this.data = data;
  }

  @Override
  public Prepared prepare(String table, List<TxnItem> items, byte[] txnId, byte[] meta) {
    TxnPrepareRequest.Builder b = TxnPrepareRequest.newBuilder().setHeader(FORWARD).setTable(table).setTxnId(ByteString.copyFrom(txnId))
        .setMeta(ByteString.copyFrom(meta));
    items.forEach(i -> b.addItems(TxnCodec.item(i)));
    return prepared(data.prepare(b.build()));
  }

  private static Prepared prepared(TxnPrepareResponse r) {
    if (r.getFailedItem() < 0) {
      long[] versions = new long[r.getVersionsCount()];
      for (int i = 0; i < versions.length; i++) {
        versions[i] = r.getVersions(i);
      }
      return Prepared.ok(versions);
    }
    if (r.getConditionFailed()) {
      return Prepared.conditionFailed(r.getFailedItem(), r.getCurrentVersion());
    }
    return Prepared.locked(r.getFailedItem(), r.getHolderTxnId().toByteArray(), r.getHolderMeta().toByteArray());
  }

  /** The wire form of a shard's answer ({@link #prepared} reads it back). */
  static TxnPrepareResponse response(Prepared p) {
    TxnPrepareResponse.Builder b = TxnPrepareResponse.newBuilder().setFailedItem(p.failedItem());
    if (p.ok()) {
      for (long v : p.versions()) {
        b.addVersions(v);
      }
    } else if (p.conditionFailed()) {
      b.setConditionFailed(true).setCurrentVersion(p.currentVersion());
    } else {
      b.setHolderTxnId(ByteString.copyFrom(p.holderTxnId())).setHolderMeta(ByteString.copyFrom(p.holderMeta()));
    }
    return b.build();
  }

  @Override
  public List<Read> read(String table, List<Key> keys) {
    BatchGetRequest.Builder b = BatchGetRequest.newBuilder().setHeader(FORWARD).setTable(table);
    keys.forEach(k -> b.addKeys(TxnCodec.key(k)));
    GetResponse[] results = new GetResponse[keys.size()];
    data.readAtLeaders(b.build(), keys, results);
    List<Read> out = new java.util.ArrayList<>(results.length);
    for (GetResponse r : results) {
      out.add(r.getFound() ? new Read(r.getValue().toByteArray(), r.getVersion()) : new Read(null, 0));
    }
    return out;
  }

  @Override
  public boolean oneShard(List<TxnItem> items) {
    return data.oneShard(items);
  }

  @Override
  public OnePhase onePhase(String table, List<TxnItem> items, byte[] txnId, Key anchor, byte[] pending) {
    TxnPrepareRequest.Builder b = TxnPrepareRequest.newBuilder().setHeader(FORWARD).setTable(table).setTxnId(ByteString.copyFrom(txnId))
        .setOnePhase(true).setAnchor(TxnCodec.key(anchor)).setRecord(ByteString.copyFrom(pending));
    items.forEach(i -> b.addItems(TxnCodec.item(i)));
    TxnPrepareResponse r = data.prepare(b.build());
    if (r.getNotOneShard()) {
      return new OnePhase(null, true, null);
    }
    if (!r.getRecord().isEmpty()) {
      return new OnePhase(null, false, r.getRecord().toByteArray());
    }
    return new OnePhase(prepared(r), false, null);
  }

  @Override
  public void resolve(String table, List<Key> keys, byte[] txnId, boolean commit) {
    TxnResolveRequest.Builder b = TxnResolveRequest.newBuilder().setHeader(FORWARD).setTable(table).setTxnId(ByteString.copyFrom(txnId))
        .setCommit(commit);
    keys.forEach(k -> b.addKeys(TxnCodec.key(k)));
    data.resolve(b.build());
  }

  @Override
  public byte[] record(String table, Key anchor, byte[] txnId, RecordStep step, byte[] proposed) {
    TxnRecordRequest.Builder b = TxnRecordRequest.newBuilder().setHeader(FORWARD).setTable(table).setAnchor(TxnCodec.key(anchor))
        .setTxnId(ByteString.copyFrom(txnId)).setStep(TxnRecordRequest.Step.valueOf(step.name()));
    if (proposed != null) {
      b.setRecord(ByteString.copyFrom(proposed));
    }
    TxnRecordResponse r = data.record(b.build());
    return r.getRecord().isEmpty() ? null : r.getRecord().toByteArray();
  }
}
