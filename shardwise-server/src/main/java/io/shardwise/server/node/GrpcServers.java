package io.shardwise.server.node;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Starting and stopping the gRPC servers of nodes and routers.
 *
 * <p>Handlers run on gRPC's default (unbounded, cached) executor on purpose: a forwarding handler
 * blocks on the call it forwards, so a bounded pool can deadlock when two nodes forward to each
 * other with every thread waiting. A bounded pool needs asynchronous forwarding first. A node's hot
 * data calls run on the network thread instead, and leave it wherever they would block (see
 * {@code DataServiceImpl.callExecutors}).
 */
final class GrpcServers {

  private GrpcServers() {}

  /**
   * Starts a server on {@code host:port} (0: chosen by the OS).
   *
   * @throws IllegalStateException naming the port when it is already in use
   */
  static Server start(String host, int port, int maxMessageBytes, BindableService... services) {
    return start(host, port, maxMessageBytes, List.of(), null, services);
  }

  /** With {@code callExecutors} (may be null: gRPC's default executor for every call). */
  static Server start(String host, int port, int maxMessageBytes, List<ServerInterceptor> interceptors,
      io.grpc.ServerCallExecutorSupplier callExecutors, BindableService... services) {
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port)).maxInboundMessageSize(maxMessageBytes);
    if (callExecutors != null) {
      builder.callExecutor(callExecutors);
    }
    for (BindableService s : services) {
      builder.addService(ServerInterceptors.intercept(s, interceptors));
    }
    try {
      return builder.build().start();
    } catch (IOException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof BindException || String.valueOf(cause.getMessage()).contains("Address already in use")) {
        throw new IllegalStateException("port " + port + " on " + host + " is already in use", e);
      }
      throw new IllegalStateException("cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  static void stop(Server server) {
    server.shutdown();
    try {
      if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
