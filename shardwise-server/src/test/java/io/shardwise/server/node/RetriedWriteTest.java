package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.BatchPutRequest;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.KeyValue;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.RequestHooks;
import io.shardwise.server.storage.ShardRef;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Design rule 8: writes carry a client write id, and a repeated id gets the first answer, so a
 * retry after a lost reply never applies a write twice — also after the shard moved.
 */
@Tag("integration")
class RetriedWriteTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Loses the reply of the next {@code n} writes (after they were applied), as a dropped connection would. */
  static final class LoseReplies implements RequestHooks {
    final AtomicInteger left = new AtomicInteger();

    @Override
    public void written(ShardRef shard) {
      if (left.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw Status.UNAVAILABLE.withDescription("connection reset (injected after the write)").asRuntimeException();
      }
    }
  }

  @Test
  void aRetryAfterALostReplyGetsTheFirstAnswerForEveryKindOfWrite() {
    LoseReplies hook = new LoseReplies();
    try (TestCluster cluster = new TestCluster(dir, 0, Limits.DEFAULT)) {
      cluster.nodes.add(cluster.startNode(1, c -> c.withHooks(hook)));
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("retry", TableSpec.builder("hashrange").shards(2).replicas(1).build());

      hook.left.set(1);
      assertThat(client.put("retry", Key.of("a"), b("one"))).as("a plain put applied once").isEqualTo(1);
      assertThat(client.get("retry", Key.of("a")).orElseThrow().version()).isEqualTo(1);

      hook.left.set(1);
      assertThat(client.putIfVersion("retry", Key.of("b"), b("first"), 0))
          .as("a conditional put whose reply was lost is not answered with a mismatch against itself").isEqualTo(1);

      hook.left.set(1);
      assertThat(client.delete("retry", Key.of("a"))).as("a delete whose reply was lost still reports the delete").isTrue();
      assertThat(client.get("retry", Key.of("a"))).isEmpty();

      hook.left.set(Integer.MAX_VALUE); // every reply lost, retries included
      assertThatThrownBy(() -> client.put("retry", Key.of("e"), b("maybe")))
          .as("the client cannot know: it says so").isInstanceOf(io.shardwise.client.OutcomeUnknownException.class);
      hook.left.set(0);
      assertThat(client.get("retry", Key.of("e")).orElseThrow().version()).as("applied once, whatever the retries").isEqualTo(1);

      hook.left.set(2);
      long[] versions = client.batchPut("retry", java.util.List.of(java.util.Map.entry(Key.of("c"), b("1")), java.util.Map.entry(Key.of("d"), b("2"))));
      assertThat(versions).containsExactly(1, 1);
      assertThat(hook.left.get()).as("replies were lost").isZero();
    }
  }

  @Test
  void theSameWriteIdAfterAMoveIsAnsweredByTheNewOwnerWithTheFirstResult() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("moved", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      ShardwiseNode n1 = cluster.node("n1");
      Table table = n1.map().table("moved").orElseThrow();
      Key key = null;
      for (int i = 0; key == null; i++) {
        Key k = Key.of(b("k" + i));
        if (table.shardFor(k.partitionKey()).owner().equals(n1.id())) {
          key = k;
        }
      }
      ShardAssignment shard = table.shardFor(key.partitionKey());
      ByteString id = ByteString.copyFrom(b("write-0001"));
      PutRequest put = PutRequest.newBuilder().setHeader(RequestHeader.newBuilder().setRequestId(id)).setTable("moved")
          .setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(key.partitionKey())))
          .setValue(ByteString.copyFromUtf8("once")).build();
      ManagedChannel toN1 = NettyChannelBuilder.forTarget(n1.address()).usePlaintext().build();
      ManagedChannel toN2 = NettyChannelBuilder.forTarget(cluster.node("n2").address()).usePlaintext().build();
      try {
        assertThat(DataServiceGrpc.newBlockingStub(toN1).put(put).getVersion()).isEqualTo(1);
        assertThat(DataServiceGrpc.newBlockingStub(toN1).put(put).getVersion()).as("a repeat on the same owner").isEqualTo(1);

        MoveProgress moved = TestCluster.moveShard(n1, table, shard, "n2", "ids-1");
        assertThat(moved.getPhase()).isEqualTo(MoveProgress.Phase.DONE);
        assertThat(DataServiceGrpc.newBlockingStub(toN2).put(put.toBuilder().setHeader(put.getHeader().toBuilder().setMapEpoch(moved.getNewEpoch())).build())
            .getVersion()).as("the record moved with the shard").isEqualTo(1);
        assertThat(client.get("moved", key).orElseThrow().version()).isEqualTo(1);

        // Without an id the same request is a second write: what every retry was before.
        PutRequest anonymous = put.toBuilder().setHeader(RequestHeader.newBuilder().setMapEpoch(moved.getNewEpoch())).build();
        assertThat(DataServiceGrpc.newBlockingStub(toN2).put(anonymous).getVersion()).isEqualTo(2);

        // A batch carries one id per entry; repeated, it is answered the same.
        BatchPutRequest batch = BatchPutRequest.newBuilder().setHeader(RequestHeader.newBuilder().setMapEpoch(moved.getNewEpoch())
                .setForward(true)).setTable("moved")
            .addEntries(KeyValue.newBuilder().setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8("x")))
                .setValue(ByteString.copyFromUtf8("1"))).addRequestIds(ByteString.copyFromUtf8("batch-x"))
            .addEntries(KeyValue.newBuilder().setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8("y")))
                .setValue(ByteString.copyFromUtf8("2"))).addRequestIds(ByteString.copyFromUtf8("batch-y")).build();
        var first = DataServiceGrpc.newBlockingStub(toN2).batchPut(batch).getVersionsList();
        assertThat(DataServiceGrpc.newBlockingStub(toN2).batchPut(batch).getVersionsList()).isEqualTo(first).containsExactly(1L, 1L);

        // Records are not rows: scans and sizes do not see them.
        assertThat(client.scan(io.shardwise.client.Scan.all("moved").limit(100)).rows())
            .extracting(r -> new String(r.key().partitionKey(), StandardCharsets.UTF_8))
            .containsExactlyInAnyOrder(new String(key.partitionKey(), StandardCharsets.UTF_8), "x", "y");

        PutRequest tooLong = put.toBuilder().setHeader(RequestHeader.newBuilder().setRequestId(ByteString.copyFrom(new byte[65]))).build();
        assertThatThrownBy(() -> DataServiceGrpc.newBlockingStub(toN2).put(tooLong)).isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getDescription()).contains("write id is 65 bytes; the limit is 64 bytes"));
      } finally {
        toN1.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        toN2.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }
}
