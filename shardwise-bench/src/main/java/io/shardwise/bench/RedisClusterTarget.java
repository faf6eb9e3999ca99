package io.shardwise.bench;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;

/**
 * The system users would pick instead: a Redis Cluster through Jedis's cluster client (one
 * connection pool per master, slot-aware routing), one plain {@code SET}/{@code GET} per
 * operation — no pipelining, like the per-key calls the Shardwise client makes. Scans follow
 * YCSB's own Redis binding: every key is also indexed in a sorted set by the hash of its name, and
 * a scan reads the index range and then the values (the index lives on one master, as in YCSB).
 */
public final class RedisClusterTarget implements Target {

  static final String INDEX = "_indices";

  private final JedisCluster jedis;
  private final int replicasPerMaster;

  public RedisClusterTarget(List<HostAndPort> masters, int threads) {
    this(masters, threads, 0);
  }

  /** @param replicasPerMaster the cluster's replicas per master, for the target's name only (they serve no request) */
  public RedisClusterTarget(List<HostAndPort> masters, int threads, int replicasPerMaster) {
    this.replicasPerMaster = replicasPerMaster;
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(Math.max(8, threads * 2));
    pool.setMaxIdle(Math.max(8, threads * 2));
    this.jedis = new JedisCluster(new HashSet<>(masters), 5_000, 5_000, 5, pool);
  }

  @Override
  public String name() {
    // Redis replicates asynchronously: its replicas' copies are not part of what a write waits for.
    return replicasPerMaster == 0 ? "redis-cluster" : "redis-cluster+" + replicasPerMaster + "async";
  }

  @Override
  public void prepare() {
    // Each node of a fresh benchmark cluster starts empty; FLUSHALL on a master would also do.
    for (var node : jedis.getClusterNodes().values()) {
      try (var c = node.getResource()) {
        c.sendCommand(redis.clients.jedis.Protocol.Command.FLUSHALL);
        c.getOne();
      } catch (redis.clients.jedis.exceptions.JedisDataException e) {
        if (!String.valueOf(e.getMessage()).startsWith("READONLY")) {
          throw e;
        } // a replica: its master's flush reaches it
      }
    }
  }

  @Override
  public void load(List<Map.Entry<String, byte[]>> batch) {
    try (ClusterPipeline p = jedis.pipelined()) {
      for (Map.Entry<String, byte[]> e : batch) {
        p.set(bytes(e.getKey()), e.getValue());
        p.zadd(INDEX, score(e.getKey()), e.getKey());
      }
      p.sync();
    }
  }

  @Override
  public boolean read(String key) {
    return jedis.get(bytes(key)) != null;
  }

  @Override
  public void update(String key, byte[] value) {
    jedis.set(bytes(key), value);
  }

  @Override
  public void insert(String key, byte[] value) {
    jedis.set(bytes(key), value);
    jedis.zadd(INDEX, score(key), key);
  }

  @Override
  public int scan(String startKey, int count) {
    List<String> keys = jedis.zrangeByScore(INDEX, score(startKey), Double.POSITIVE_INFINITY, 0, count);
    int rows = 0;
    for (String k : keys) {
      if (jedis.get(bytes(k)) != null) {
        rows++;
      }
    }
    return rows;
  }

  /** YCSB's Redis binding scores a key by its name's {@code hashCode()}; so does this baseline. */
  private static double score(String key) {
    return key.hashCode();
  }

  private static byte[] bytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void increment(String key, long delta) {
    jedis.incrBy(Target.counterKey(key), delta);
  }

  @Override
  public long counter(String key) {
    String v = jedis.get(Target.counterKey(key));
    return v == null ? 0 : Long.parseLong(v);
  }

  @Override
  public void close() {
    jedis.close();
  }
}
