package io.shardwise.proto;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.util.Collection;
import java.util.concurrent.TimeUnit;

/** Opening and closing the plaintext gRPC channels Shardwise processes use between each other. */
public final class Channels {

  private Channels() {}

  /** A channel to {@code host:port} that accepts messages up to {@code maxMessageBytes}. */
  public static ManagedChannel open(String address, int maxMessageBytes) {
    return NettyChannelBuilder.forTarget(address).usePlaintext().maxInboundMessageSize(maxMessageBytes).build();
  }

  /**
   * A channel whose callbacks run on its I/O thread instead of being handed to an executor: one
   * thread switch less per call, which on few cores is much of a small call's cost. Only for
   * callers whose callbacks never block (they complete futures and send the next request).
   */
  public static ManagedChannel openDirect(String address, int maxMessageBytes) {
    return NettyChannelBuilder.forTarget(address).usePlaintext().maxInboundMessageSize(maxMessageBytes).directExecutor().build();
  }

  /** Shuts every channel down and waits up to 5 s for each. */
  public static void closeAll(Collection<ManagedChannel> channels) {
    channels.forEach(ManagedChannel::shutdownNow);
    for (ManagedChannel c : channels) {
      try {
        c.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
