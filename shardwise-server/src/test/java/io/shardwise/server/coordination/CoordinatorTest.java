package io.shardwise.server.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.NodeInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The map and membership in a real (embedded) ZooKeeper on a port chosen by the OS. */
@Tag("integration")
class CoordinatorTest {

  @TempDir Path dir;
  private EmbeddedZooKeeper zk;
  private final List<Coordinator> opened = new ArrayList<>();

  @BeforeEach
  void start() {
    zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
  }

  @AfterEach
  void stop() {
    opened.forEach(Coordinator::close);
    zk.close();
  }

  private Coordinator connect() {
    Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(20));
    opened.add(c);
    return c;
  }

  /** A node told to stop while ZooKeeper is gone stops at once: the session's end removes its registration. */
  @Test
  void closingWhileZooKeeperIsGoneDoesNotWaitOutTheRetries() {
    Coordinator node = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(20));
    node.register(false, NodeInfo.newBuilder().setId("n1").setAddress("127.0.0.1:7101").build(), Duration.ofSeconds(10), Duration.ZERO);
    zk.close();
    await().atMost(Duration.ofSeconds(10)).until(() -> !node.isConnected());
    org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(5), node::close,
        "close retried the unregistration against a ZooKeeper that is gone");
  }

  private static Optional<ShardMapDelta> createTable(ShardMap map, String name) {
    if (map.table(name).isPresent()) {
      return Optional.empty();
    }
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, 2, 1, KeySample.empty());
    return Optional.of(ShardMapDelta.on(map).createTable(name, spec, initial.layout(), List.of(NodeId.of("n1"), NodeId.of("n1"))).build());
  }

  @Test
  void concurrentWritersNeverLoseAChange() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        int writer = w;
        done.add(pool.submit(() -> {
          Coordinator c = connect();
          for (int i = 0; i < 10; i++) {
            String name = "t" + writer + "_" + i;
            c.updateMap(map -> createTable(map, name));
          }
        }));
      }
      for (Future<?> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    Coordinator.StoredMap stored = connect().readMap();
    assertThat(stored.map().tables()).hasSize(40);
    assertThat(stored.map().epoch()).isEqualTo(40);
    assertThat(stored.version()).isEqualTo(39);
  }

  @Test
  void watchersSeeEveryMapInEpochOrder() {
    Coordinator writer = connect();
    writer.updateMap(map -> createTable(map, "a"));
    List<Long> seen = new CopyOnWriteArrayList<>();
    connect().watchMap(map -> seen.add(map.epoch()));
    await().atMost(Duration.ofSeconds(10)).until(() -> seen.contains(1L));
    writer.updateMap(map -> createTable(map, "b"));
    writer.updateMap(map -> createTable(map, "c"));
    await().atMost(Duration.ofSeconds(10)).until(() -> seen.contains(3L));
    assertThat(seen).isSorted().doesNotHaveDuplicates();
  }

  @Test
  void aPlanThatDoesNotFitChangesNothing() {
    Coordinator c = connect();
    c.updateMap(map -> createTable(map, "a"));
    assertThatThrownBy(() -> c.updateMap(map -> Optional.of(ShardMapDelta.on(map).dropTable("nope").build())))
        .hasMessage("table nope does not exist");
    assertThat(c.readMap().map().epoch()).isEqualTo(1);
  }

  @Test
  void liveNodesComeAndGoWithTheirSessions() {
    Coordinator node = connect();
    Coordinator observer = connect();
    node.register(false, NodeInfo.newBuilder().setId("n1").setAddress("127.0.0.1:7101").build(), Duration.ofSeconds(10), Duration.ZERO);
    await().atMost(Duration.ofSeconds(10)).until(() -> observer.liveNodes().containsKey(NodeId.of("n1")));
    assertThat(observer.liveNodes().get(NodeId.of("n1")).getAddress()).isEqualTo("127.0.0.1:7101");
    assertThat(observer.liveNodesNow()).containsOnlyKeys(NodeId.of("n1"));

    Coordinator twin = connect();
    assertThatThrownBy(() -> twin.register(false, NodeInfo.newBuilder().setId("n1").build(), Duration.ofSeconds(5), Duration.ofMillis(300)))
        .hasMessageStartingWith("a live node already uses the id n1");

    node.close();
    opened.remove(node);
    await().atMost(Duration.ofSeconds(10)).until(() -> observer.liveNodes().isEmpty());
  }

  @Test
  void aRecordLargerThanAZnodeIsStoredInPartsAndReplacedOrDeletedWhole() {
    Coordinator c = connect();
    String path = Coordinator.ROOT + "/records/big";
    byte[] large = new byte[1_300_000]; // a znode holds 1 MiB
    new java.util.Random(7).nextBytes(large);
    c.writeRecord(path, large);
    assertThat(c.readRecord(path)).hasValueSatisfying(v -> assertThat(v).isEqualTo(large));
    assertThat(c.children(Coordinator.ROOT + "/records")).hasSize(4); // the record and its 3 parts

    byte[] small = "small".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    c.writeRecord(path, small);
    assertThat(c.readRecord(path)).hasValueSatisfying(v -> assertThat(v).isEqualTo(small));
    assertThat(c.read(path).orElseThrow().data()).as("a small record is the znode's data, as before").isEqualTo(small);
    assertThat(c.children(Coordinator.ROOT + "/records")).containsExactly("big");

    c.writeRecord(path, large);
    c.deleteRecord(path);
    assertThat(c.readRecord(path)).isEmpty();
    assertThat(c.children(Coordinator.ROOT + "/records")).isEmpty();
  }

  @Test
  void anUnreachableZooKeeperIsAClearError() {
    assertThatThrownBy(() -> Coordinator.connect("127.0.0.1:1", Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(CoordinationException.class)
        .hasMessage("cannot reach ZooKeeper at 127.0.0.1:1 within 1 s");
  }
}
