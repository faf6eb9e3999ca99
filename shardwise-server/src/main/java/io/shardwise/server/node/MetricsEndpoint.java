package io.shardwise.server.node;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * A node's meters as Prometheus text, on {@code http://host:port/metrics} (the JDK's HTTP server,
 * one thread: a scrape is small and rare). Any other path is a 404.
 */
final class MetricsEndpoint implements AutoCloseable {

  /** The text format's content type, version 0.0.4, which every Prometheus server reads. */
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final HttpServer server;

  private MetricsEndpoint(HttpServer server) {
    this.server = server;
  }

  static MetricsEndpoint start(String host, int port, PrometheusMeterRegistry registry) {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
      server.createContext("/", exchange -> {
        try (exchange) {
          if (!exchange.getRequestURI().getPath().equals("/metrics")) {
            exchange.sendResponseHeaders(404, -1);
            return;
          }
          byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", CONTENT_TYPE);
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        }
      });
      server.setExecutor(Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "shardwise-metrics");
        t.setDaemon(true);
        return t;
      }));
      server.start();
      return new MetricsEndpoint(server);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve metrics on " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  /** {@code http://host:port/metrics}. */
  String url() {
    return "http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort() + "/metrics";
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
