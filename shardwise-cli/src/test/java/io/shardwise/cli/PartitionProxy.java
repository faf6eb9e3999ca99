package io.shardwise.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy a test can partition: a node process reaches a server (ZooKeeper) only through it,
 * and {@link #partition} makes the link silent — open connections stop carrying bytes in either
 * direction and new ones are accepted and left unanswered, as when packets are dropped (the node's
 * client sees timeouts, not refusals) — until {@link #heal}. Only this link is cut: the node still
 * reaches its peers and its clients, which is the partition that splits a brain if anything can.
 *
 * <p>For tests on one machine without root (a network namespace needs it); ports chosen by the OS.
 */
final class PartitionProxy implements AutoCloseable {

  private final ServerSocket listener;
  private final InetSocketAddress target;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private volatile boolean partitioned;
  private volatile boolean closed;

  /** A proxy to {@code host:port} of {@code target} ("host:port"), listening on a free local port. */
  PartitionProxy(String target) throws IOException {
    int colon = target.lastIndexOf(':');
    this.target = new InetSocketAddress(target.substring(0, colon), Integer.parseInt(target.substring(colon + 1)));
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::acceptLoop, "partition-proxy-" + listener.getLocalPort());
    accept.setDaemon(true);
    accept.start();
  }

  /** Where the node connects instead of the target. */
  String address() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  /** Cuts the link: no byte passes either way, and new connections are left unanswered. */
  void partition() {
    partitioned = true;
  }

  /**
   * Restores the link. Connections open across the partition are closed (what they had in flight
   * is gone, as after a real partition); the node's client connects again.
   */
  void heal() {
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    partitioned = false;
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return; // closed
      }
      sockets.add(client);
      if (partitioned) {
        continue; // accepted, never answered: a dropped SYN-ACK would look the same to the client
      }
      try {
        Socket server = new Socket();
        server.connect(target, 5_000);
        sockets.add(server);
        pump(client, server);
        pump(server, client);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  /** Copies {@code from} to {@code to} while the link is up; during a partition bytes are read and dropped. */
  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          if (!partitioned) {
            out.write(buffer, 0, n);
            out.flush();
          }
        }
      } catch (IOException e) {
        // one side closed
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "partition-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private void closeQuietly(Socket s) {
    sockets.remove(s);
    try {
      s.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // closing
    }
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
