package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.core.key.Key;
import io.shardwise.server.rpc.Limits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shard-aware client coalesces concurrent requests to one owner into batches. Under real
 * concurrency every caller must still get the answer to its own request.
 */
@Tag("integration")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BatchingTest {

  private TestCluster cluster;
  private ShardwiseClient client;
  private ExecutorService pool;

  @BeforeAll
  void start(@TempDir Path dir) {
    cluster = new TestCluster(dir, 3, Limits.DEFAULT);
    client = cluster.client(Routing.CLIENT);
    client.createTable("batched", TableSpec.builder("slots").slots(64).build());
    pool = Executors.newFixedThreadPool(16);
  }

  @AfterAll
  void stop() {
    pool.shutdownNow();
    cluster.close();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private void runAll(List<Runnable> tasks) throws Exception {
    List<Future<?>> done = new ArrayList<>();
    tasks.forEach(t -> done.add(pool.submit(t)));
    for (Future<?> f : done) {
      f.get(2, TimeUnit.MINUTES);
    }
  }

  @Test
  void everyConcurrentWriteIsReadBackWithItsOwnValue() throws Exception {
    List<Runnable> tasks = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int thread = t;
      tasks.add(() -> {
        for (int i = 0; i < 150; i++) {
          String k = "t" + thread + "-k" + i;
          assertThat(client.put("batched", Key.of(k), b("value of " + k))).isEqualTo(1);
          assertThat(new String(client.get("batched", Key.of(k)).orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("value of " + k);
        }
      });
    }
    runAll(tasks);
  }

  @Test
  void concurrentWritesOfOneKeyGetDistinctVersions() throws Exception {
    Set<Long> versions = ConcurrentHashMap.newKeySet();
    List<Runnable> tasks = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      int thread = t;
      tasks.add(() -> {
        for (int i = 0; i < 40; i++) {
          versions.add(client.put("batched", Key.of("hot"), b("t" + thread + "-" + i)));
        }
      });
    }
    runAll(tasks);
    assertThat(versions).hasSize(640);
    assertThat(client.get("batched", Key.of("hot")).orElseThrow().version()).isEqualTo(640);
  }

  @Test
  void asyncCallsAnswerEachCallerItsOwnRequest() {
    List<java.util.concurrent.CompletableFuture<Long>> puts = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      puts.add(client.putAsync("batched", Key.of("async-" + i), b("value " + i)));
    }
    puts.forEach(f -> assertThat(f.join()).isEqualTo(1L));
    List<java.util.concurrent.CompletableFuture<java.util.Optional<io.shardwise.client.Versioned>>> gets = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      gets.add(client.getAsync("batched", Key.of("async-" + i)));
    }
    for (int i = 0; i < 2000; i++) {
      assertThat(new String(gets.get(i).join().orElseThrow().value(), StandardCharsets.UTF_8)).isEqualTo("value " + i);
    }
    assertThat(client.getAsync("batched", Key.of("async-absent")).join()).isEmpty();
    byte[] tooLong = new byte[8 * 1024 + 1];
    assertThat(client.putAsync("batched", Key.of(tooLong), b("x")))
        .failsWithin(java.time.Duration.ofSeconds(30))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withMessageContaining("key is 8193 bytes; the limit is 8192 bytes");
  }

  @Test
  void oneCallersBadRequestFailsOnlyThatCaller() throws Exception {
    byte[] tooLong = new byte[8 * 1024 + 1];
    java.util.Arrays.fill(tooLong, (byte) 'x');
    AtomicInteger refused = new AtomicInteger();
    List<Runnable> tasks = new ArrayList<>();
    for (int t = 0; t < 12; t++) {
      int thread = t;
      tasks.add(() -> {
        for (int i = 0; i < 100; i++) {
          if (thread == 0) {
            try {
              client.put("batched", Key.of(tooLong), b("never"));
            } catch (ShardwiseException e) {
              assertThat(e).hasMessageContaining("key is 8193 bytes; the limit is 8192 bytes");
              refused.incrementAndGet();
            }
          } else {
            client.put("batched", Key.of("ok-" + thread + "-" + i), b("fine"));
          }
        }
      });
    }
    runAll(tasks);
    assertThat(refused.get()).isEqualTo(100);
    for (int t = 1; t < 12; t++) {
      assertThat(client.get("batched", Key.of("ok-" + t + "-99"))).isPresent();
    }
  }
}
