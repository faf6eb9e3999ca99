package io.shardwise.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A Redis Cluster on loopback for a baseline: N masters from the machine's {@code redis-server}
 * (Debian's package), no replicas, no persistence (no RDB, no AOF), joined with {@code redis-cli
 * --cluster create}. Stopped, and its directory left to the caller, on close.
 */
public final class RedisCluster implements AutoCloseable {

  private final List<Process> servers = new ArrayList<>();
  private final List<HostAndPort> masters = new ArrayList<>();

  private RedisCluster() {}

  /**
   * Starts {@code count} masters with their files under {@code dir}.
   *
   * @throws IllegalStateException if redis-server or redis-cli is missing, or the cluster does not
   *     form within 30 s
   */
  public static RedisCluster start(Path dir, int count) {
    RedisCluster cluster = new RedisCluster();
    try {
      Files.createDirectories(dir);
      for (int i = 0; i < count; i++) {
        int port = freePort();
        Process p = new ProcessBuilder("redis-server", "--port", String.valueOf(port), "--bind", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + port + ".conf", "--save", "",
            "--appendonly", "no", "--dir", dir.toAbsolutePath().toString(), "--protected-mode", "no")
            .redirectErrorStream(true).redirectOutput(dir.resolve("redis-" + port + ".log").toFile()).start();
        cluster.servers.add(p);
        cluster.masters.add(new HostAndPort("127.0.0.1", port));
      }
      for (HostAndPort m : cluster.masters) {
        awaitPing(m);
      }
      List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
      cluster.masters.forEach(m -> create.add(m.toString()));
      create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
      Process cli = new ProcessBuilder(create).redirectErrorStream(true).redirectOutput(dir.resolve("create.log").toFile()).start();
      if (!cli.waitFor(30, TimeUnit.SECONDS) || cli.exitValue() != 0) {
        throw new IllegalStateException("redis-cli --cluster create failed; see " + dir.resolve("create.log"));
      }
      for (HostAndPort m : cluster.masters) {
        awaitClusterOk(m);
      }
      return cluster;
    } catch (IOException e) {
      cluster.close();
      throw new IllegalStateException("cannot start redis-server (install it: sudo apt-get install -y redis-server): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      cluster.close();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting Redis", e);
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  public List<HostAndPort> masters() {
    return List.copyOf(masters);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void awaitPing(HostAndPort node) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (true) {
      try (Jedis j = new Jedis(node)) {
        if ("PONG".equals(j.ping())) {
          return;
        }
      } catch (RuntimeException notYet) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("redis-server on " + node + " did not answer within 30 s", notYet);
        }
      }
      Thread.sleep(20);
    }
  }

  private static void awaitClusterOk(HostAndPort node) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    try (Jedis j = new Jedis(node)) {
      while (!j.clusterInfo().contains("cluster_state:ok")) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the Redis Cluster did not reach cluster_state:ok within 30 s");
        }
        Thread.sleep(20);
      }
    }
  }

  @Override
  public void close() {
    for (Process p : servers) {
      p.destroy();
    }
    for (Process p : servers) {
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
    }
  }
}
