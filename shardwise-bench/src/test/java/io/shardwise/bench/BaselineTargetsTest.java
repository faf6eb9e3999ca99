package io.shardwise.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The baselines run the same workloads through the same harness: one RocksDB in this process, and
 * a real Redis Cluster of three masters from the machine's redis-server (skipped with the install
 * command when it is missing, except where {@code SHARDWISE_REQUIRE_REDIS} is set, as in CI).
 */
class BaselineTargetsTest {

  @TempDir Path dir;

  private static Bench.Result run(Target target, Workload w, long operations) {
    Bench bench = new Bench(new Bench.Options(w, 300, operations, Duration.ZERO, 4, 32, w.defaultDistribution(), Duration.ZERO, 5));
    return bench.run(target, bench.load(target, Bench.Listener.NONE), () -> "run", Bench.Listener.NONE);
  }

  private static void assertClean(Bench.Result r, long operations) {
    assertThat(r.errors()).isEmpty();
    assertThat(r.notFound()).isZero();
    assertThat(r.run().operations()).isEqualTo(operations);
  }

  @Test
  void rocksDbRunsEveryWorkloadWithoutErrors() {
    try (RocksDbTarget target = new RocksDbTarget(dir.resolve("rocks"))) {
      for (Workload w : new Workload[] {Workload.A, Workload.D, Workload.E, Workload.F}) {
        assertClean(run(target, w, 500), 500);
      }
      assertThat(target.scan(KeySpace.PREFIX, 10)).isEqualTo(10);
    }
    assertThat(dir.resolve("rocks")).doesNotExist();
  }

  @Test
  void aRedisClusterOfThreeMastersRunsTheWorkloads() {
    requireRedis();
    try (RedisCluster redis = RedisCluster.start(dir.resolve("redis"), 3);
        RedisClusterTarget target = new RedisClusterTarget(redis.masters(), 4)) {
      assertThat(redis.masters()).hasSize(3);
      assertClean(run(target, Workload.A, 600), 600);
      Bench.Result e = run(target, Workload.E, 300);
      assertClean(e, 300);
      assertThat(e.run().ops()).containsKeys(OpType.SCAN, OpType.INSERT);
    }
  }

  @Test
  void aRedisClusterWithAReplicaPerMasterServesFromItsMasters() {
    requireRedis();
    try (RedisCluster redis = RedisCluster.start(dir.resolve("redis"), 3, 1);
        RedisClusterTarget target = new RedisClusterTarget(redis.masters(), 4, 1)) {
      assertThat(redis.masters()).hasSize(3);
      try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis(redis.masters().get(0))) {
        assertThat(j.clusterNodes().lines().filter(l -> l.contains("slave"))).as("a replica per master").hasSize(3);
      }
      assertThat(target.name()).isEqualTo("redis-cluster+1async");
      assertClean(run(target, Workload.A, 600), 600);
    }
    assertThatThrownBy(() -> RedisCluster.start(dir.resolve("bad"), 3, RedisCluster.MAX_REPLICAS_PER_MASTER + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replicas per Redis master");
  }

  private static void requireRedis() {
    boolean present = new File("/usr/bin/redis-server").canExecute() || onPath("redis-server");
    String missing = "no redis-server; install it with: sudo apt-get install -y redis-server";
    if (!present) {
      if (System.getenv("SHARDWISE_REQUIRE_REDIS") != null) {
        Assertions.fail(missing);
      }
      Assumptions.abort(missing);
    }
  }

  private static boolean onPath(String command) {
    for (String dirName : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (new File(dirName, command).canExecute()) {
        return true;
      }
    }
    return false;
  }
}
