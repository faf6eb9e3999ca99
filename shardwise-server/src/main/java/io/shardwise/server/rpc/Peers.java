package io.shardwise.server.rpc;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.DataServiceGrpc;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/** One gRPC channel per peer address, opened on first use and kept. Thread-safe. */
public final class Peers implements AutoCloseable {

  private final ConcurrentMap<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final int maxMessageBytes;

  public Peers(int maxMessageBytes) {
    this.maxMessageBytes = maxMessageBytes;
  }

  public ManagedChannel channel(String address) {
    return channels.computeIfAbsent(
        address, a -> NettyChannelBuilder.forTarget(a).usePlaintext().maxInboundMessageSize(maxMessageBytes).build());
  }

  public DataServiceGrpc.DataServiceBlockingStub data(String address) {
    return DataServiceGrpc.newBlockingStub(channel(address));
  }

  public AdminServiceGrpc.AdminServiceBlockingStub admin(String address) {
    return AdminServiceGrpc.newBlockingStub(channel(address));
  }

  @Override
  public void close() {
    channels.values().forEach(ManagedChannel::shutdownNow);
    for (ManagedChannel c : channels.values()) {
      try {
        c.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
