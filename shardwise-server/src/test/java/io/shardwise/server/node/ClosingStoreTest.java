package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.GetRequest;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A request that reaches a node whose store is closing (the node is stopping) is answered
 * UNAVAILABLE, which a client retries at the key's next owner, never INTERNAL, which it would hand
 * to the application as a server fault.
 */
@Tag("integration")
class ClosingStoreTest {

  @Test
  void aRequestMeetingAClosedStoreIsUnavailableNotAnInternalError(@TempDir Path dir) throws Exception {
    try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"))) {
      ShardwiseNode node = ShardwiseNode.start(NodeConfig.of(dir.resolve("n1"), zk.connectString()).withId("n1"));
      ManagedChannel channel = NettyChannelBuilder.forTarget(node.address()).usePlaintext().build();
      try (ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(java.util.List.of(node.address())).build()) {
        client.createTable("t", TableSpec.builder("mod").build());
        client.put("t", Key.of("k"), "v".getBytes());
        node.store().close(); // what a stopping node does last; requests may still be on their way in
        DataServiceGrpc.DataServiceBlockingStub stub = DataServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
        io.shardwise.proto.v1.Key k = io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8("k")).build();
        assertThatThrownBy(() -> stub.get(GetRequest.newBuilder().setTable("t").setKey(k).build()))
            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
        assertThatThrownBy(() -> stub.put(PutRequest.newBuilder().setTable("t").setKey(k).setValue(ByteString.copyFromUtf8("w")).build()))
            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        node.close();
      }
    }
  }
}
