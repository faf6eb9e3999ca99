package io.shardwise.server.move;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.DropCopyRequest;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.MoveShardRequest;
import io.shardwise.proto.v1.ReceiveShardResponse;
import io.shardwise.proto.v1.ShardChanges;
import io.shardwise.proto.v1.ShardChunk;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.server.rpc.ClusterContext;
import io.shardwise.server.rpc.FileUpload;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * A move's destination over gRPC: the snapshot as a client stream with flow control and the
 * move's bandwidth limit, catch-up values and the drop request as unary calls.
 */
final class GrpcMoveTarget implements MoveTarget {

  private static final Duration CALL_DEADLINE = Duration.ofSeconds(60);

  private final ManagedChannel channel;
  private final MoveServiceGrpc.MoveServiceBlockingStub peer;
  private final MoveShardRequest request;
  private final ShardRef shard;
  private final NodeId to;

  private GrpcMoveTarget(ManagedChannel channel, MoveShardRequest request, ShardRef shard) {
    this.channel = channel;
    this.peer = MoveServiceGrpc.newBlockingStub(channel);
    this.request = request;
    this.shard = shard;
    this.to = NodeId.of(request.getTo());
  }

  /** Opens destinations through the node's peer channels; a destination must be live. */
  static MoveTarget.Factory factory(ClusterContext ctx) {
    return (request, shard) -> {
      String address = ctx.addressOf(NodeId.of(request.getTo()));
      if (address == null) {
        throw Status.FAILED_PRECONDITION.withDescription("destination " + request.getTo() + " is not live").asRuntimeException();
      }
      return new GrpcMoveTarget(ctx.peers().channel(address), request, shard);
    };
  }

  @Override
  public void sendSnapshot(Path file, LongConsumer sent) {
    ShardChunk.Builder first = ShardChunk.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId()).setNumber(shard.shardNumber())
        .setStoreLayout(ShardStore.LAYOUT_VERSION).setEmptyShard(file == null);
    FileUpload.<ShardChunk, ReceiveShardResponse>send(
        answers -> MoveServiceGrpc.newStub(channel).withDeadlineAfter(Math.max(CALL_DEADLINE.toSeconds(), 3600), TimeUnit.SECONDS)
            .receiveShard(answers),
        (isFirst, data) -> (isFirst ? first : ShardChunk.newBuilder()).setData(data).build(),
        file, request.getBandwidthBytesPerSecond(), sent, CALL_DEADLINE, "the destination " + to);
  }

  @Override
  public void applyChanges(List<ShardEngine.StoredValue> values) {
    ShardChanges.Builder changes = ShardChanges.newBuilder().setMoveId(request.getMoveId()).setTableId(shard.tableId())
        .setNumber(shard.shardNumber());
    for (ShardEngine.StoredValue v : values) {
      StoredValue.Builder b = StoredValue.newBuilder().setStoreKey(ByteString.copyFrom(v.storeKey()));
      if (v.stored() == null) {
        b.setAbsent(true);
      } else {
        b.setStored(ByteString.copyFrom(v.stored()));
      }
      changes.addValues(b);
    }
    peer.withDeadlineAfter(CALL_DEADLINE.toSeconds(), TimeUnit.SECONDS).applyChanges(changes.build());
  }

  @Override
  public void dropCopy(long plannedEpoch) {
    peer.withDeadlineAfter(10, TimeUnit.SECONDS).dropCopy(DropCopyRequest.newBuilder().setMoveId(request.getMoveId())
        .setTableId(shard.tableId()).setNumber(shard.shardNumber()).setShardEpoch(plannedEpoch).build());
  }
}
