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
 * (Debian's package), each with R replicas (0 by default), no persistence (no RDB, no AOF), joined
 * with {@code redis-cli --cluster create --cluster-replicas R}. Redis replicates asynchronously: a
 * write is acknowledged by its master alone, before any replica has it. Stopped, and its directory
 * left to the caller, on close.
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
    return start(dir, count, 0);
  }

  /**
   * Starts {@code count} masters, each with {@code replicasPerMaster} replicas, with their files
   * under {@code dir}.
   *
   * @throws IllegalStateException if redis-server or redis-cli is missing, or the cluster does not
   *     form within 30 s
   */
  public static RedisCluster start(Path dir, int count, int replicasPerMaster) {
    if (count < 3) {
      throw new IllegalArgumentException("a Redis Cluster needs at least 3 masters, not " + count);
    }
    if (replicasPerMaster < 0 || replicasPerMaster > MAX_REPLICAS_PER_MASTER) {
      throw new IllegalArgumentException("replicas per Redis master: 0 to " + MAX_REPLICAS_PER_MASTER + ", not " + replicasPerMaster);
    }
    RedisCluster cluster = new RedisCluster();
    List<HostAndPort> all = new ArrayList<>();
    try {
      Files.createDirectories(dir);
      for (int i = 0; i < count * (1 + replicasPerMaster); i++) {
        int port = freePort();
        Process p = new ProcessBuilder("redis-server", "--port", String.valueOf(port), "--bind", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + port + ".conf", "--save", "",
            "--appendonly", "no", "--dir", dir.toAbsolutePath().toString(), "--protected-mode", "no")
            .redirectErrorStream(true).redirectOutput(dir.resolve("redis-" + port + ".log").toFile()).start();
        cluster.servers.add(p);
        all.add(new HostAndPort("127.0.0.1", port));
      }
      for (HostAndPort m : all) {
        awaitPing(m);
      }
      List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
      all.forEach(m -> create.add(m.toString()));
      create.addAll(List.of("--cluster-replicas", String.valueOf(replicasPerMaster), "--cluster-yes"));
      Process cli = new ProcessBuilder(create).redirectErrorStream(true).redirectOutput(dir.resolve("create.log").toFile()).start();
      if (!cli.waitFor(30, TimeUnit.SECONDS) || cli.exitValue() != 0) {
        throw new IllegalStateException("redis-cli --cluster create failed; see " + dir.resolve("create.log"));
      }
      for (HostAndPort m : all) {
        awaitClusterOk(m);
      }
      // redis-cli chose which nodes are masters; the replicas' roles reach every node by gossip:
      // wait until every node sees the same `count` masters.
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (true) {
        java.util.Set<List<HostAndPort>> views = new java.util.HashSet<>();
        for (HostAndPort node : all) {
          views.add(masters(node));
        }
        List<HostAndPort> seen = views.iterator().next();
        if (views.size() == 1 && seen.size() == count) {
          cluster.masters.addAll(seen);
          return cluster;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the Redis Cluster's nodes do not agree on " + count + " masters after 30 s (" + views + "); see " + dir);
        }
        Thread.sleep(50);
      }
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

  /** The most replicas per master {@link #start} makes. */
  public static final int MAX_REPLICAS_PER_MASTER = 4;

  /** The masters (the replicas are found by clients through them, and serve no request here). */
  public List<HostAndPort> masters() {
    return List.copyOf(masters);
  }

  /** The masters as {@code node} sees the cluster ({@code CLUSTER NODES}: address, then flags). */
  private static List<HostAndPort> masters(HostAndPort node) {
    List<HostAndPort> out = new ArrayList<>();
    try (Jedis j = new Jedis(node)) {
      for (String line : j.clusterNodes().split("\n")) {
        String[] f = line.split(" ");
        if (f.length > 2 && f[2].contains("master")) {
          String address = f[1].split("@")[0];
          out.add(new HostAndPort("127.0.0.1", Integer.parseInt(address.substring(address.lastIndexOf(':') + 1))));
        }
      }
    }
    out.sort(java.util.Comparator.comparingInt(HostAndPort::getPort));
    return out;
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
