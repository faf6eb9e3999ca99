package io.shardwise.server.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.MapCodec;
import io.shardwise.proto.v1.MapRootProto;
import io.shardwise.proto.v1.TableRootProto;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shard map as a root and immutable chunks in a real (embedded) ZooKeeper: what a change
 * writes, that big maps fit, that readers never see a torn map, the format-1 migration and the
 * sweep of leftovers. The ZooKeeper tree is inspected with a client of its own.
 */
@Tag("integration")
class MapChunksTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");

  @TempDir Path dir;
  private EmbeddedZooKeeper zk;
  private CuratorFramework raw;
  private final List<Coordinator> opened = new ArrayList<>();

  @BeforeEach
  void start() {
    zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    raw = CuratorFrameworkFactory.newClient(zk.connectString(), new RetryOneTime(100));
    raw.start();
  }

  @AfterEach
  void stop() {
    opened.forEach(Coordinator::close);
    raw.close();
    zk.close();
  }

  private Coordinator connect() {
    Coordinator c = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(20));
    opened.add(c);
    return c;
  }

  private static Optional<ShardMapDelta> create(ShardMap map, String name, int shards) {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, shards, 2, KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int owner : initial.owners()) {
      owners.add(owner == 0 ? N1 : N2);
    }
    return Optional.of(ShardMapDelta.on(map).createTable(name, spec, initial.layout(), owners).build());
  }

  private static Optional<ShardMapDelta> move(ShardMap map, String table, int position) {
    ShardAssignment s = map.table(table).orElseThrow().shards().get(position);
    return Optional.of(ShardMapDelta.on(map).moveShard(s.id(), s.owner(), s.owner().equals(N1) ? N2 : N1).build());
  }

  private MapRootProto root() throws Exception {
    return MapRootProto.parseFrom(raw.getData().forPath(MapChunks.ROOT_PATH));
  }

  private Set<String> storedChunks() throws Exception {
    return new HashSet<>(raw.getChildren().forPath(MapChunks.CHUNKS_PATH));
  }

  private static Set<String> named(MapRootProto root) {
    return MapChunks.names(root);
  }

  /** Superseded chunks are deleted off the writer's path: wait until only the named ones are left. */
  private void awaitOnlyNamedChunks() {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(storedChunks()).isEqualTo(named(root())));
  }

  private static void assertSameMap(ShardMap actual, ShardMap expected) {
    assertThat(actual.epoch()).isEqualTo(expected.epoch());
    assertThat(MapCodec.toProto(actual)).isEqualTo(MapCodec.toProto(expected));
  }

  @Test
  void aMoveRewritesOneChunkOfItsTableAndNothingOfTheOthers() throws Exception {
    Coordinator c = connect();
    c.updateMap(map -> create(map, "big", 5_000));
    c.updateMap(map -> create(map, "small", 8));
    MapRootProto before = root();
    TableRootProto big = before.getTables(0);
    assertThat(big.getShardChunksCount()).isEqualTo(5); // 1024 shards per chunk
    assertThat(big.getLayoutChunksCount()).isEqualTo(5);

    ShardMap moved = c.updateMap(map -> move(map, "big", 3_000));

    MapRootProto after = root();
    TableRootProto bigAfter = after.getTables(0);
    List<String> changed = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      if (!bigAfter.getShardChunks(i).equals(big.getShardChunks(i))) {
        changed.add("shard chunk " + i);
      }
    }
    assertThat(changed).containsExactly("shard chunk 2");
    assertThat(bigAfter.getLayoutChunksList()).isEqualTo(big.getLayoutChunksList());
    assertThat(bigAfter.getHeaderChunk()).isEqualTo(big.getHeaderChunk());
    assertThat(after.getTables(1)).isEqualTo(before.getTables(1));
    awaitOnlyNamedChunks(); // the superseded chunk goes
    assertSameMap(connect().readMap().map(), moved);
  }

  @Test
  void aHundredThousandShardsFitAndEveryZnodeStaysFarBelowTheLimit() throws Exception {
    Coordinator c = connect();
    ShardMap created = c.updateMap(map -> create(map, "huge", 100_000));
    int largest = 0;
    for (String chunk : storedChunks()) {
      largest = Math.max(largest, raw.getData().forPath(MapChunks.CHUNKS_PATH + "/" + chunk).length);
    }
    int rootBytes = raw.getData().forPath(MapChunks.ROOT_PATH).length;
    assertThat(MapCodec.toProto(created).getSerializedSize()).as("the map in one piece").isGreaterThan(1 << 20);
    assertThat(largest).as("largest chunk").isLessThan(64 * 1024);
    assertThat(rootBytes).as("root").isLessThan(16 * 1024);
    assertSameMap(connect().readMap().map(), created);
  }

  @Test
  void concurrentWritersLoseNoChangeAndLeaveNoChunkBehind() throws Exception {
    connect().updateMap(map -> create(map, "t", 3_000));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    int movesEach = 15;
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        Random random = new Random(w);
        done.add(pool.submit(() -> {
          Coordinator writer = connect();
          for (int i = 0; i < movesEach; i++) {
            int position = random.nextInt(3_000);
            writer.updateMap(map -> move(map, "t", position));
          }
        }));
      }
      for (Future<?> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    ShardMap map = connect().readMap().map();
    assertThat(map.epoch()).isEqualTo(1 + 4 * movesEach);
    awaitOnlyNamedChunks();
  }

  @Test
  void aWatcherSeesWholeMapsOnly() {
    Coordinator writer = connect();
    writer.updateMap(map -> create(map, "t", 4_000));
    AtomicReference<ShardMap> seen = new AtomicReference<>();
    List<String> torn = Collections.synchronizedList(new ArrayList<>());
    connect().watchMap(map -> {
      // every shard's epoch is at most the map's, and the shards moved so far are exactly those
      // at epoch above 1: a map rebuilt from chunks of two different roots would break this
      Table t = map.table("t").orElseThrow();
      long moved = t.shards().stream().filter(s -> s.epoch() > 1).count();
      if (moved != map.epoch() - 1) {
        torn.add("epoch " + map.epoch() + " shows " + moved + " moved shards");
      }
      seen.set(map);
    });
    for (int i = 0; i < 30; i++) {
      int position = i * 131;
      writer.updateMap(map -> move(map, "t", position));
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> seen.get() != null && seen.get().epoch() == 31);
    assertThat(torn).isEmpty();
    assertSameMap(seen.get(), writer.readMap().map());
  }

  @Test
  void aFormatOneMapIsMigratedOnFirstRead() throws Exception {
    Coordinator c = connect();
    ShardMap legacy = ShardMap.EMPTY.apply(create(ShardMap.EMPTY, "old", 16).orElseThrow());
    raw.create().creatingParentsIfNeeded().forPath(MapChunks.LEGACY_PATH, MapCodec.toProto(legacy).toByteArray());
    assertThat(c.hasMap()).isTrue();

    assertSameMap(c.readMap().map(), legacy);
    assertThat(raw.checkExists().forPath(MapChunks.LEGACY_PATH)).isNull();
    assertThat(root().getEpoch()).isEqualTo(1);
    ShardMap next = c.updateMap(map -> move(map, "old", 0));
    assertThat(next.epoch()).isEqualTo(2);
  }

  @Test
  void aSweepDeletesLeftoversOfAnEpochTheRootHasReachedOnly() throws Exception {
    Coordinator c = connect();
    c.updateMap(map -> create(map, "t", 10));
    c.updateMap(map -> move(map, "t", 0)); // epoch 2
    awaitOnlyNamedChunks(); // the first update's own sweep is done
    String stale = raw.create().forPath(MapChunks.CHUNKS_PATH + "/t1-e2-9999999999", new byte[] {1}).substring(MapChunks.CHUNKS_PATH.length() + 1);
    String racing = raw.create().forPath(MapChunks.CHUNKS_PATH + "/t1-e3-9999999999", new byte[] {1}).substring(MapChunks.CHUNKS_PATH.length() + 1);

    assertThat(c.sweepMapChunks()).isEqualTo(1);

    assertThat(storedChunks()).doesNotContain(stale).contains(racing).containsAll(named(root()));
    assertThat(c.readMap().map().epoch()).isEqualTo(2);
  }

  @Test
  void splitsAndMergesRoundTripWithTheirNextShardNumberAndClientsRefetchAfterThem() {
    Coordinator c = connect();
    ShardMap created = c.updateMap(map -> create(map, "t", 3_000));
    Table t = created.table("t").orElseThrow();
    ShardAssignment target = t.shards().get(2_500);
    ShardMap split = c.updateMap(map -> Optional.of(ShardMapDelta.on(map).splitShard(
        ShardMapDelta.SplitShard.atHash(target.id(), map.table("t").orElseThrow().layout().hashMidpoint(2_500).getAsLong())).build()));
    Table afterSplit = split.table("t").orElseThrow();
    ShardAssignment left = afterSplit.shards().get(10);
    ShardAssignment right = afterSplit.shards().get(11);
    ShardMap merged = c.updateMap(map -> {
      ShardMapDelta.Builder d = ShardMapDelta.on(map);
      if (!left.owner().equals(right.owner())) {
        return Optional.empty(); // (the initial layout gives neighbours one owner; guard anyway)
      }
      return Optional.of(d.mergeShards(left.id(), right.id()).build());
    });
    Table now = merged.table("t").orElseThrow();
    assertThat(now.shards()).hasSize(3_000);
    assertThat(now.nextShardNumber()).isEqualTo(3_003);
    ShardMap read = connect().readMap().map();
    assertSameMap(read, merged);
    assertThat(read.table("t").orElseThrow().nextShardNumber()).isEqualTo(3_003);
    // A client on the map before the split cannot patch its copy: it needs the whole table again.
    assertThat(MapCodec.applyShardChanges(t, MapCodec.shardChanges(now, created.epoch()))).isEmpty();
    assertThat(MapCodec.applyShardChanges(afterSplit, MapCodec.shardChanges(now, split.epoch()))).isEmpty();
  }

  @Test
  void chunkNamesCarryTheEpochTheyWereWrittenFor() {
    assertThat(MapChunks.writtenFor("t7-e42-0000000013")).isEqualTo(42);
    assertThat(MapChunks.writtenFor("something-else")).isEqualTo(Long.MAX_VALUE);
  }
}
