package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.GetRequest;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Design rule 2: a node that loses ZooKeeper fences its writes until it has re-read the map. */
@Tag("integration")
class FencingTest {

  @Test
  void aNodeCutOffFromZooKeeperRefusesWritesUntilItHasReReadTheMap(@TempDir Path dir) throws Exception {
    EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    String connect = zk.connectString();
    int port = Integer.parseInt(connect.substring(connect.lastIndexOf(':') + 1));
    ShardwiseNode node = ShardwiseNode.start(NodeConfig.of(dir.resolve("n1"), connect).withId("n1"));
    ManagedChannel channel = NettyChannelBuilder.forTarget(node.address()).usePlaintext().build();
    try (ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(java.util.List.of(node.address())).build()) {
      client.createTable("fenced", TableSpec.builder("mod").build());
      client.put("fenced", Key.of("before"), "1".getBytes());
      DataServiceGrpc.DataServiceBlockingStub stub = DataServiceGrpc.newBlockingStub(channel);
      PutRequest put = PutRequest.newBuilder().setTable("fenced")
          .setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8("during"))).setValue(ByteString.copyFromUtf8("x")).build();

      zk.close();
      await().atMost(Duration.ofSeconds(20)).until(() -> !node.writable());
      assertThatThrownBy(() -> stub.put(put)).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(Errors.code(e)).isEqualTo(ErrorInfo.Code.NOT_SERVING);
      });
      GetRequest get = GetRequest.newBuilder().setTable("fenced").setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8("during"))).build();
      assertThat(stub.get(get).getFound()).as("nothing of the refused write was stored").isFalse();

      zk = EmbeddedZooKeeper.start(port, dir.resolve("zk"));
      await().atMost(Duration.ofSeconds(30)).until(node::writable);
      assertThat(stub.put(put).getVersion()).isEqualTo(1);
      assertThat(client.get("fenced", Key.of("before"))).isPresent();
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      node.close();
      zk.close();
    }
  }
}
