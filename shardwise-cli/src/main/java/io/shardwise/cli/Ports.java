package io.shardwise.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Checking that a fixed port is free before starting, so the error names the port and the flag. */
final class Ports {

  private Ports() {}

  /** @throws IllegalStateException "port P is already in use; choose another with FLAG" */
  static void requireFree(String host, int port, String flag) {
    if (port == 0) {
      return;
    }
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getByName(host))) {
      socket.setReuseAddress(true);
    } catch (IOException e) {
      throw new IllegalStateException("port " + port + " on " + host + " is already in use; choose another with " + flag);
    }
  }

  /** Splits {@code host:port}; a bare port means 127.0.0.1. */
  static String[] hostAndPort(String listen) {
    int colon = listen.lastIndexOf(':');
    String host = colon < 0 ? "127.0.0.1" : listen.substring(0, colon);
    String port = colon < 0 ? listen : listen.substring(colon + 1);
    try {
      int p = Integer.parseInt(port);
      if (p < 0 || p > 65_535) {
        throw new NumberFormatException();
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--listen must be host:port or port, not '" + listen + "'");
    }
    return new String[] {host, port};
  }
}
