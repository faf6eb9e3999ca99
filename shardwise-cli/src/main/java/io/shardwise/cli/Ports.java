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

  /**
   * Splits {@code host:port}; a bare port means 127.0.0.1, a bare host port 0 (the caller's choice:
   * a node reuses the port it had, else takes a free one).
   */
  static String[] hostAndPort(String listen) {
    int colon = listen.lastIndexOf(':');
    if (colon < 0 && !listen.isEmpty() && !listen.chars().allMatch(Character::isDigit)) {
      return new String[] {listen, "0"};
    }
    String host = colon < 0 ? "127.0.0.1" : listen.substring(0, colon);
    String port = colon < 0 ? listen : listen.substring(colon + 1);
    try {
      int p = Integer.parseInt(port);
      if (p < 0 || p > 65_535) {
        throw new NumberFormatException();
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--listen must be host:port, host or port, not '" + listen + "'");
    }
    return new String[] {host, port};
  }

  /** Where a node keeps the port it last served on, so a restart without one serves on it again. */
  static final String PORT_FILE = "listen-port";

  /** The port a node on {@code dataDir} served on last, if it is free now on {@code host}; else 0 (any). */
  static int previousPort(java.nio.file.Path dataDir, String host) {
    java.nio.file.Path file = dataDir.resolve(PORT_FILE);
    try {
      int port = Integer.parseInt(java.nio.file.Files.readString(file).strip());
      requireFree(host, port, "--listen");
      return port;
    } catch (IOException | RuntimeException e) {
      return 0; // no such file, or the port is taken now: a free one
    }
  }

  /** Records the port a node on {@code dataDir} serves on. */
  static void rememberPort(java.nio.file.Path dataDir, int port) {
    try {
      java.nio.file.Files.writeString(dataDir.resolve(PORT_FILE), port + "\n");
    } catch (IOException e) {
      // only a convenience: the next start takes a free port
    }
  }
}
