package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.shardwise.proto.v1.BatchGetRequest;
import io.shardwise.proto.v1.BatchGetResponse;
import io.shardwise.proto.v1.BatchPutRequest;
import io.shardwise.proto.v1.BatchPutResponse;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.Key;
import io.shardwise.proto.v1.RequestHeader;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The client's batching per owner node ({@link OwnerBatcher}) against a node on a real socket whose
 * put batches wait until the test lets them go, as a replicated table's wait for its followers:
 * gets are answered meanwhile, and the puts that arrived meanwhile leave together in one batch.
 */
class OwnerBatcherTest {

  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (server != null) {
      server.shutdownNow();
    }
  }

  /** Answers gets at once; holds each put batch until {@code release} opens. */
  private static final class SlowPuts extends DataServiceGrpc.DataServiceImplBase {
    final CountDownLatch release = new CountDownLatch(1);
    final List<Integer> putBatches = new CopyOnWriteArrayList<>();
    final List<Integer> getBatches = new CopyOnWriteArrayList<>();

    @Override
    public void batchPut(BatchPutRequest request, StreamObserver<BatchPutResponse> out) {
      putBatches.add(request.getEntriesCount());
      new Thread(() -> {
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        BatchPutResponse.Builder b = BatchPutResponse.newBuilder();
        request.getEntriesList().forEach(e -> b.addVersions(1));
        out.onNext(b.build());
        out.onCompleted();
      }).start();
    }

    @Override
    public void batchGet(BatchGetRequest request, StreamObserver<BatchGetResponse> out) {
      getBatches.add(request.getKeysCount());
      BatchGetResponse.Builder b = BatchGetResponse.newBuilder();
      request.getKeysList().forEach(k -> b.addResults(GetResponse.newBuilder().setFound(false)));
      out.onNext(b.build());
      out.onCompleted();
    }
  }

  private static Key key(String k) {
    return Key.newBuilder().setPartitionKey(ByteString.copyFromUtf8(k)).build();
  }

  @Test
  void getsAreAnsweredWhileAPutBatchWaitsAndPutsArrivingMeanwhileLeaveTogether() throws Exception {
    SlowPuts node = new SlowPuts();
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(node).build().start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build();
    OwnerBatcher batcher = new OwnerBatcher(channel, "t", 0, Runnable::run);
    RequestHeader header = RequestHeader.getDefaultInstance();

    CompletableFuture<Object> first = batcher.putAsync(header, key("p0"), ByteString.copyFromUtf8("v"));
    List<CompletableFuture<Object>> puts = new ArrayList<>();
    List<CompletableFuture<Object>> gets = new ArrayList<>();
    for (int i = 1; i <= 5; i++) { // interleaved, as callers of a mixed workload send them
      puts.add(batcher.putAsync(header, key("p" + i), ByteString.copyFromUtf8("v")));
      gets.add(batcher.getAsync(header, key("g" + i)));
    }
    CompletableFuture.allOf(gets.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    assertThat(first).as("the first put batch still waits").isNotDone();
    assertThat(puts).allSatisfy(p -> assertThat(p).isNotDone());

    node.release.countDown();
    first.get(10, TimeUnit.SECONDS);
    CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
    assertThat(node.putBatches).as("the five puts that came while the first was out went as one batch").containsExactly(1, 5);
    assertThat(node.getBatches.stream().mapToInt(Integer::intValue).sum()).isEqualTo(5);
  }
}
