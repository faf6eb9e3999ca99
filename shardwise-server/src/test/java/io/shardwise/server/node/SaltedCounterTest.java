package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.client.OutcomeUnknownException;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.SaltedKey;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.hot.Salting;
import io.shardwise.server.rpc.Limits;
import io.shardwise.server.rpc.Peers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A salted counter on a real cluster: writers add to one key while it is salted into sub-keys,
 * demoted, salted again with more sub-keys and demoted again; a reader reads it all the while. The
 * checker: every read lies between the increments acknowledged before it began and those begun
 * before it ended, reads never go back, and at the end the counter equals the acknowledged
 * increments exactly (an increment whose outcome the client could not tell would widen the bound;
 * none is expected here, and the test says how many there were).
 */
@Tag("integration")
class SaltedCounterTest {

  @TempDir Path dir;

  private static final Key LIKES = Key.of("likes");

  @ParameterizedTest(name = "replicas {0}")
  @ValueSource(ints = {1, 3})
  void aCounterSaltedAndDemotedTwiceUnderConcurrentIncrementsCountsEveryAcknowledgedIncrementOnce(int replicas) throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10));
        Peers peers = new Peers(16 << 20)) {
      ShardwiseClient setup = cluster.client(Routing.CLIENT);
      setup.createTable("c", TableSpec.builder("hashrange").shards(6).replicas(replicas).build());
      Salting salting = new Salting(admin, peers);
      AtomicLong acknowledged = new AtomicLong();
      AtomicLong begun = new AtomicLong();
      AtomicLong unknown = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        ShardwiseClient client = cluster.client(Routing.CLIENT, b -> b.saltedKeysMaxAge(Duration.ofMillis(200)));
        long seed = w;
        threads.add(new Thread(() -> {
          SplittableRandom random = new SplittableRandom(seed);
          try {
            while (!stop.get()) {
              long delta = 1 + random.nextInt(3);
              begun.addAndGet(delta);
              try {
                client.increment("c", LIKES, delta);
                acknowledged.addAndGet(delta);
              } catch (OutcomeUnknownException e) {
                unknown.addAndGet(delta);
              }
            }
          } catch (Throwable t) {
            failed.compareAndSet(null, t);
          }
        }, "writer-" + w));
      }
      List<String> violations = new ArrayList<>();
      AtomicLong reads = new AtomicLong();
      ShardwiseClient readerClient = cluster.client(Routing.CLIENT);
      threads.add(new Thread(() -> {
        long last = 0;
        try {
          while (!stop.get()) {
            long floor = acknowledged.get();
            long value = readerClient.counter("c", LIKES);
            long ceiling = begun.get();
            if (value < floor || value > ceiling || value < last) {
              violations.add("read " + value + " outside [" + floor + ", " + ceiling + "] or below the read before it (" + last + ")");
            }
            last = value;
            reads.incrementAndGet();
          }
        } catch (Throwable t) {
          failed.compareAndSet(null, t);
        }
      }, "reader"));
      threads.forEach(Thread::start);
      try {
        awaitAcknowledged(acknowledged, 200, failed);
        SaltedKey first = salting.promote("c", LIKES, 4, "test: hot");
        assertThat(first.getState()).isEqualTo(SaltedKey.State.SALTED);
        assertThat(salting.list("c")).singleElement().satisfies(k -> assertThat(k.getFanout()).isEqualTo(4));
        // The writers move to the sub-keys as they refresh: several of them get increments.
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || subKeysWritten(setup, first) >= 3);
        salting.demote("c", LIKES, "test: cooled");
        assertThat(salting.list("c")).isEmpty();
        awaitAcknowledged(acknowledged, acknowledged.get() + 200, failed);
        SaltedKey second = salting.promote("c", LIKES, 8, "test: hot again");
        assertThat(second.getGeneration()).as("a key salted again gets new sub-keys").isGreaterThan(first.getGeneration());
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || subKeysWritten(setup, second) >= 4);
        salting.demote("c", LIKES, "test: cooled again");
        awaitAcknowledged(acknowledged, acknowledged.get() + 200, failed);
      } finally {
        stop.set(true);
        for (Thread t : threads) {
          t.join();
        }
      }
      assertThat(failed.get()).isNull();
      assertThat(violations).as("reads outside their bounds (%d reads)", reads.get()).isEmpty();
      assertThat(reads.get()).isPositive();
      assertThat(unknown.get()).as("increments whose outcome was unknown").isZero();
      long value = setup.counter("c", LIKES);
      System.out.printf("salted counter, replicas %d: %,d acknowledged, %,d unknown, %,d reads checked, counter %,d%n", replicas,
          acknowledged.get(), unknown.get(), reads.get(), value);
      assertThat(value).as("the counter after two promotions and demotions").isEqualTo(acknowledged.get());
      // Demoted: the key is a plain counter again, holding it all.
      assertThat(setup.get("c", LIKES).orElseThrow().value()).hasSize(8);
    }
  }

  /**
   * A salted list, replicated: writers append their own numbered elements while the list is salted,
   * demoted, salted again and demoted; a reader reads it all the while. The checker: every read holds
   * each append acknowledged before it began, once, and nothing not yet begun; each writer's elements
   * in the order it appended them; any two reads agree on the order of what both hold; and at the end
   * the key alone holds every acknowledged append.
   */
  @Test
  void aListSaltedAndDemotedTwiceUnderConcurrentAppendsKeepsEveryAcknowledgedAppendOnceInOneOrder() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 3, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10));
        Peers peers = new Peers(16 << 20)) {
      ShardwiseClient setup = cluster.client(Routing.CLIENT);
      setup.createTable("c", TableSpec.builder("hashrange").shards(6).replicas(3).build());
      setup.append("c", FEED, "first".getBytes(StandardCharsets.UTF_8)); // a list, so the salting salts a list
      Salting salting = new Salting(admin, peers);
      java.util.Set<String> acknowledged = java.util.concurrent.ConcurrentHashMap.newKeySet();
      java.util.Set<String> begun = java.util.concurrent.ConcurrentHashMap.newKeySet();
      acknowledged.add("first");
      begun.add("first");
      AtomicLong unknown = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        ShardwiseClient client = cluster.client(Routing.CLIENT, b -> b.saltedKeysMaxAge(Duration.ofMillis(200)));
        int writer = w;
        threads.add(new Thread(() -> {
          try {
            for (int n = 0; !stop.get(); n++) {
              String element = "w" + writer + "-" + n;
              begun.add(element);
              try {
                client.append("c", FEED, element.getBytes(StandardCharsets.UTF_8));
                acknowledged.add(element);
              } catch (OutcomeUnknownException e) {
                unknown.incrementAndGet();
              }
            }
          } catch (Throwable t) {
            failed.compareAndSet(null, t);
          }
        }, "writer-" + w));
      }
      List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
      List<List<String>> reads = java.util.Collections.synchronizedList(new ArrayList<>());
      ShardwiseClient readerClient = cluster.client(Routing.CLIENT);
      threads.add(new Thread(() -> {
        try {
          while (!stop.get()) {
            Set<String> floor = new HashSet<>(acknowledged);
            List<String> read = strings(readerClient.list("c", FEED));
            Set<String> ceiling = new HashSet<>(begun);
            check(read, floor, ceiling, violations);
            reads.add(read);
          }
        } catch (Throwable t) {
          failed.compareAndSet(null, t);
        }
      }, "reader"));
      threads.forEach(Thread::start);
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> failed.get() != null || acknowledged.size() >= 200);
        SaltedKey first = salting.promote("c", FEED, 4, "test: hot");
        assertThat(first.getList()).as("the registry knows a list from a counter").isTrue();
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || subKeysWritten(setup, FEED, first) >= 3);
        salting.demote("c", FEED, "test: cooled");
        int before = acknowledged.size();
        await().atMost(Duration.ofSeconds(30)).until(() -> failed.get() != null || acknowledged.size() >= before + 200);
        SaltedKey second = salting.promote("c", FEED, 8, "test: hot again");
        await().atMost(Duration.ofSeconds(20)).until(() -> failed.get() != null || subKeysWritten(setup, FEED, second) >= 4);
        salting.demote("c", FEED, "test: cooled again");
        int after = acknowledged.size();
        await().atMost(Duration.ofSeconds(30)).until(() -> failed.get() != null || acknowledged.size() >= after + 100);
      } finally {
        stop.set(true);
        for (Thread t : threads) {
          t.join();
        }
      }
      assertThat(failed.get()).isNull();
      assertThat(unknown.get()).as("appends whose outcome was unknown").isZero();
      List<String> last = strings(setup.list("c", FEED));
      check(last, new HashSet<>(acknowledged), new HashSet<>(begun), violations);
      assertThat(new HashSet<>(last)).as("the list after two promotions and demotions").isEqualTo(new HashSet<>(acknowledged));
      java.util.Map<String, Integer> position = new java.util.HashMap<>();
      for (int i = 0; i < last.size(); i++) {
        position.put(last.get(i), i);
      }
      for (List<String> read : reads) {
        for (int i = 1; i < read.size(); i++) {
          if (position.get(read.get(i - 1)) > position.get(read.get(i))) {
            violations.add("a read has " + read.get(i - 1) + " before " + read.get(i) + ", the final list after");
            break;
          }
        }
      }
      System.out.printf("salted list, replicas 3: %,d acknowledged, %,d reads checked, %d violations%n", acknowledged.size(), reads.size(),
          violations.size());
      assertThat(violations).as("%d reads", reads.size()).isEmpty();
      assertThat(reads).isNotEmpty();
      assertThat(io.shardwise.core.key.Lists.decode(setup.get("c", FEED).orElseThrow().value()))
          .as("demoted: the key is a plain list again").isInstanceOf(io.shardwise.core.key.Lists.Plain.class);
    }
  }

  private static final Key FEED = Key.of("feed");

  private static List<String> strings(List<byte[]> elements) {
    List<String> out = new ArrayList<>();
    elements.forEach(e -> out.add(new String(e, StandardCharsets.UTF_8)));
    return out;
  }

  /** One read against its bounds: every element acknowledged before it, once, nothing not begun, each writer's in order. */
  private static void check(List<String> read, Set<String> floor, Set<String> ceiling, List<String> violations) {
    Set<String> seen = new HashSet<>(read);
    if (seen.size() != read.size()) {
      violations.add("a read holds an element twice");
    }
    Set<String> missing = new HashSet<>(floor);
    missing.removeAll(seen);
    if (!missing.isEmpty()) {
      violations.add("a read lacks " + missing.size() + " acknowledged appends, e.g. " + missing.iterator().next());
    }
    Set<String> unknown = new HashSet<>(seen);
    unknown.removeAll(ceiling);
    if (!unknown.isEmpty()) {
      violations.add("a read holds " + unknown.size() + " elements never appended, e.g. " + unknown.iterator().next());
    }
    java.util.Map<String, Integer> lastOfWriter = new java.util.HashMap<>();
    for (String e : read) {
      int dash = e.indexOf('-');
      if (dash < 0) {
        continue;
      }
      int n = Integer.parseInt(e.substring(dash + 1));
      Integer previous = lastOfWriter.put(e.substring(0, dash), n);
      if (previous != null && previous > n) {
        violations.add("a read has " + e.substring(0, dash) + "-" + previous + " before " + e);
        return;
      }
    }
  }

  @Test
  void theBalancerSaltsAWriteHotCounterAndDemotesItOnceItCools() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      io.shardwise.server.balance.RebalanceRecords records = new io.shardwise.server.balance.RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(io.shardwise.proto.v1.BalancerSettings.Mode.AUTO).setSplitBytes(-1)
          .setSplitRps(300).setSplitRpsSeconds(2).setMergeSeconds(3).build());
      ShardwiseClient setup = cluster.client(Routing.CLIENT);
      setup.createTable("c", TableSpec.builder("hashrange").shards(4).build());
      AtomicLong acknowledged = new AtomicLong();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      List<Thread> writers = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        ShardwiseClient client = cluster.client(Routing.CLIENT, b -> b.saltedKeysMaxAge(Duration.ofMillis(200)));
        writers.add(new Thread(() -> {
          try {
            while (!stop.get()) {
              client.increment("c", LIKES, 1);
              acknowledged.incrementAndGet();
            }
          } catch (Throwable t) {
            failed.compareAndSet(null, t);
          }
        }));
      }
      Salting salting;
      try (Peers peers = new Peers(16 << 20)) {
        salting = new Salting(admin, peers);
        writers.forEach(Thread::start);
        try {
          await().atMost(Duration.ofSeconds(60)).until(() -> failed.get() != null
              || salting.list("c").stream().anyMatch(k -> k.getState() == SaltedKey.State.SALTED));
        } finally {
          stop.set(true);
          for (Thread t : writers) {
            t.join();
          }
        }
        assertThat(failed.get()).isNull();
        assertThat(records.plans()).anySatisfy(p -> assertThat(p.getResizesList()).anySatisfy(r -> {
          assertThat(r.getKind()).isEqualTo(io.shardwise.proto.v1.ResizeRecord.Kind.SALT);
          assertThat(r.getWhy()).contains("key 'likes'");
        }));
        // Quiet now: demoted after the merge window, and every increment is in the key.
        await().atMost(Duration.ofSeconds(60)).until(() -> salting.list("c").isEmpty());
      }
      assertThat(records.plans()).anySatisfy(p -> assertThat(p.getResizesList())
          .anySatisfy(r -> assertThat(r.getKind()).isEqualTo(io.shardwise.proto.v1.ResizeRecord.Kind.UNSALT)));
      assertThat(setup.counter("c", LIKES)).isEqualTo(acknowledged.get());
      assertThat(setup.get("c", LIKES).orElseThrow().value()).hasSize(8);
    }
  }

  /** How many of a salted key's sub-keys hold increments now. */
  private static int subKeysWritten(ShardwiseClient client, SaltedKey salted) {
    return subKeysWritten(client, LIKES, salted);
  }

  /** How many of salted {@code key}'s sub-keys hold writes now. */
  private static int subKeysWritten(ShardwiseClient client, Key key, SaltedKey salted) {
    int n = 0;
    for (int i = 0; i < salted.getFanout(); i++) {
      if (client.get("c", Counters.subKey(key, salted.getGeneration(), i)).isPresent()) {
        n++;
      }
    }
    return n;
  }

  private static void awaitAcknowledged(AtomicLong acknowledged, long atLeast, AtomicReference<Throwable> failed) {
    await().atMost(Duration.ofSeconds(30)).until(() -> failed.get() != null || acknowledged.get() >= atLeast);
  }

  @Test
  void theSubKeysOfASaltedKeyLandOnSeveralShardsAndBadCounterOperationsAreRefusedCleanly() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT);
        Coordinator admin = Coordinator.connect(cluster.zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10));
        Peers peers = new Peers(16 << 20)) {
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("c", TableSpec.builder("hashrange").shards(8).build());
      client.createTable("r", TableSpec.builder("range").shards(1).build());
      client.increment("c", LIKES, 5);
      assertThat(client.counter("c", LIKES)).isEqualTo(5);
      assertThat(client.counter("c", Key.of("absent"))).isZero();
      Salting salting = new Salting(admin, peers);
      SaltedKey salted = salting.promote("c", LIKES, 16, "test");
      Table t = admin.syncedMap().table("c").orElseThrow();
      Set<Long> shards = new HashSet<>();
      for (int i = 0; i < 16; i++) {
        ShardAssignment s = t.shardFor(Counters.subKey(LIKES, salted.getGeneration(), i).partitionKey());
        shards.add(s.id().number());
      }
      assertThat(shards).as("16 sub-keys over 8 shards").hasSizeGreaterThanOrEqualTo(4);
      assertThat(client.counter("c", LIKES)).as("the total carried over").isEqualTo(5);
      // A put to a sub-key's name, a counter on a value that is not one, a range table: refused, nothing written.
      assertThatThrownBy(() -> client.put("c", Counters.subKey(LIKES, salted.getGeneration(), 0), "x".getBytes(StandardCharsets.UTF_8)))
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("INVALID_ARGUMENT").hasMessageContaining("sub-key");
      client.put("c", Key.of("text"), "hello".getBytes(StandardCharsets.UTF_8));
      assertThatThrownBy(() -> client.increment("c", Key.of("text"), 1)).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("FAILED_PRECONDITION").hasMessageContaining("not a counter");
      assertThat(client.get("c", Key.of("text")).orElseThrow().value()).isEqualTo("hello".getBytes(StandardCharsets.UTF_8));
      // Lists: an append to a counter, an increment of a list, a list past the value limit: refused, nothing written.
      assertThatThrownBy(() -> client.append("c", LIKES, new byte[1])).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("FAILED_PRECONDITION").hasMessageContaining("not a list");
      client.append("c", Key.of("feed"), new byte[Limits.DEFAULT.maxValueBytes() - 100]);
      assertThatThrownBy(() -> client.increment("c", Key.of("feed"), 1)).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("not a counter");
      assertThatThrownBy(() -> client.append("c", Key.of("feed"), new byte[100])).isInstanceOf(ShardwiseException.class)
          .hasMessageContaining("past the value limit");
      assertThat(client.list("c", Key.of("feed"))).singleElement().satisfies(e -> assertThat(e).hasSize(Limits.DEFAULT.maxValueBytes() - 100));
      assertThatThrownBy(() -> salting.promote("r", LIKES, 4, "test")).hasMessageContaining("range-partitioned");
      assertThatThrownBy(() -> salting.promote("c", LIKES, 4, "test")).hasMessageContaining("salted into 16 sub-keys already");
      assertThatThrownBy(() -> salting.promote("c", Key.of("other"), 1, "test")).hasMessageContaining("2 to 64");
      assertThatThrownBy(() -> salting.demote("c", Key.of("other"), "test")).hasMessageContaining("is not salted");
      salting.demote("c", LIKES, "test");
      assertThat(client.counter("c", LIKES)).isEqualTo(5);
    }
  }
}
