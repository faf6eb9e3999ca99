package io.shardwise.server.rpc;

import io.grpc.ManagedChannel;
import io.shardwise.proto.Channels;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.DataServiceGrpc;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** One gRPC channel per peer address, opened on first use and kept. Thread-safe. */
public final class Peers implements AutoCloseable {

  private final ConcurrentMap<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final int maxMessageBytes;

  public Peers(int maxMessageBytes) {
    this.maxMessageBytes = maxMessageBytes;
  }

  public ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address, a -> Channels.open(a, maxMessageBytes));
  }

  public DataServiceGrpc.DataServiceBlockingStub data(String address) {
    return DataServiceGrpc.newBlockingStub(channel(address));
  }

  public AdminServiceGrpc.AdminServiceBlockingStub admin(String address) {
    return AdminServiceGrpc.newBlockingStub(channel(address));
  }

  /** Connects again at once to peers in reconnect backoff: called when the live nodes change. */
  public void resetConnectBackoff() {
    channels.values().forEach(ManagedChannel::resetConnectBackoff);
  }

  @Override
  public void close() {
    Channels.closeAll(channels.values());
  }
}
