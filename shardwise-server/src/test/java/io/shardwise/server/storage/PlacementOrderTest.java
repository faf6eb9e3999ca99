package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;

/**
 * Range and hashrange shards in placement order on a real RocksDB: after any sequence of splits and
 * merges made by the map (no key rewritten), every shard's span holds exactly the keys the map
 * places in it, a write id's record is found through whichever shard now holds its key, and a data
 * directory of layout version 1 is migrated into the same layout.
 */
class PlacementOrderTest {

  private static final NodeId N1 = NodeId.of("n1");

  @TempDir Path dir;
  private ShardStore store;

  @BeforeEach
  void open() {
    store = ShardStore.open(dir.resolve("db"), false);
  }

  @AfterEach
  void close() {
    store.close();
  }

  @ParameterizedTest(name = "{0} seed {1}")
  @CsvSource({"range, 1", "range, 2", "range, 3", "hashrange, 1", "hashrange, 2", "hashrange, 3"})
  void splitsAndMergesOfTheMapMoveNoKeyAndLoseNone(String strategy, long seed) throws Exception {
    Random random = new Random(seed);
    ShardMap map = create(Strategy.byId(strategy));
    Map<Key, byte[]> written = new HashMap<>();
    Map<Key, byte[]> writeIds = new HashMap<>();
    for (int i = 0; i < 400; i++) {
      Key key = Key.of(randomBytes(random, 1 + random.nextInt(4)), randomBytes(random, random.nextInt(3)));
      byte[] value = ("v" + i).getBytes(StandardCharsets.UTF_8);
      Table t = map.table("t").orElseThrow();
      ShardRef ref = ShardRef.of(t, t.shardFor(key.partitionKey()).id().number());
      byte[] id = ("w" + i).getBytes(StandardCharsets.UTF_8);
      if (writeIds.containsKey(key) || written.containsKey(key)) {
        store.put(ref, key.encode(), value);
      } else {
        store.apply(List.of(Mutation.put(ref, key.encode(), value).withRequestId(id)));
        writeIds.put(key, id);
      }
      written.put(key, value);
      if (i % 20 == 19) {
        map = splitOrMerge(map, random);
        checkEveryShard(map, written);
      }
    }
    checkEveryShard(map, written);
    // A retry of a first write is answered from its record, through the shard that holds the key now.
    Table t = map.table("t").orElseThrow();
    for (var e : writeIds.entrySet()) {
      ShardRef ref = ShardRef.of(t, t.shardFor(e.getKey().partitionKey()).id().number());
      long[] retried = store.apply(List.of(Mutation.put(ref, e.getKey().encode(), "again".getBytes(StandardCharsets.UTF_8))
          .withRequestId(e.getValue())));
      assertThat(retried[0]).as("the retry of %s answers the first write's version", e.getKey()).isEqualTo(1);
    }
    checkEveryShard(map, written);
  }

  /** Each shard's scan, stats and export hold exactly the keys the map places in it, in order. */
  private void checkEveryShard(ShardMap map, Map<Key, byte[]> written) throws Exception {
    Table t = map.table("t").orElseThrow();
    Map<Long, TreeMap<byte[], byte[]>> expected = new HashMap<>();
    for (var e : written.entrySet()) {
      long number = t.shardFor(e.getKey().partitionKey()).id().number();
      expected.computeIfAbsent(number, n -> new TreeMap<>(Arrays::compareUnsigned)).put(e.getKey().encode(), e.getValue());
    }
    long total = 0;
    for (ShardAssignment s : t.shards()) {
      ShardRef ref = ShardRef.of(t, s.id().number());
      TreeMap<byte[], byte[]> want = expected.getOrDefault(s.id().number(), new TreeMap<>(Arrays::compareUnsigned));
      List<StoredEntry> scanned = new ArrayList<>();
      byte[] from = new byte[0];
      while (from != null) { // in small pages: resuming goes through storeKey of the resume key
        ScanPage page = store.scan(ref, from, null, 7);
        scanned.addAll(page.entries());
        from = page.resumeFrom();
      }
      assertThat(scanned).as("shard %s holds exactly its keys", s.id()).hasSize(want.size());
      for (StoredEntry e : scanned) {
        assertThat(want).containsKey(e.key());
        assertThat(e.value()).isEqualTo(want.get(e.key()));
      }
      if (t.layout().strategy() == Strategy.RANGE) {
        assertThat(scanned.stream().map(StoredEntry::key).toList()).as("key order").isSortedAccordingTo(Arrays::compareUnsigned);
      }
      assertThat(store.stats(ref).keys()).isEqualTo(want.size());
      ShardEngine.ExportStats exported = store.exportShard(ref, dir.resolve("export-" + s.id().number() + ".sst"));
      assertThat(exported.liveKeys()).isEqualTo(want.size());
      total += want.size();
    }
    assertThat(total).isEqualTo(written.size());
  }

  private static ShardMap splitOrMerge(ShardMap map, Random random) {
    Table t = map.table("t").orElseThrow();
    int shards = t.shards().size();
    if (shards > 1 && random.nextInt(3) == 0) {
      int at = random.nextInt(shards - 1);
      return map.apply(ShardMapDelta.on(map).mergeShards(t.shards().get(at).id(), t.shards().get(at + 1).id()).build());
    }
    int at = random.nextInt(shards);
    ShardAssignment s = t.shards().get(at);
    ShardMapDelta.SplitShard split;
    if (t.layout().strategy() == Strategy.RANGE) {
      byte[] start = at == 0 ? new byte[0] : t.layout().splitPoints().get(at - 1);
      byte[] key = null;
      for (int attempt = 0; attempt < 500 && key == null; attempt++) { // a narrow shard may have no key left to split at
        byte[] candidate = randomBytes(random, 1 + random.nextInt(4));
        if (t.layout().shardFor(candidate) == at && !Arrays.equals(candidate, start)) {
          key = candidate;
        }
      }
      if (key == null) {
        return map;
      }
      split = ShardMapDelta.SplitShard.atKey(s.id(), key);
    } else {
      var mid = t.layout().hashMidpoint(at);
      if (mid.isEmpty()) {
        return map;
      }
      split = ShardMapDelta.SplitShard.atHash(s.id(), mid.getAsLong());
    }
    return map.apply(ShardMapDelta.on(map).splitShard(split).build());
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"range", "hashrange"})
  void theUpperHalfOfASplitInheritsTheVersionFloor(String strategy) {
    ShardMap map = create(Strategy.byId(strategy));
    Table t = map.table("t").orElseThrow();
    ShardRef whole = ShardRef.of(t, t.shards().get(0).id().number());
    List<Key> keys = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      Key k = Key.of("key-" + i);
      keys.add(k);
      for (int w = 0; w < 5; w++) {
        store.put(whole, k.encode(), new byte[] {(byte) w});
      }
      store.delete(whole, k.encode()); // version 6, a tombstone
    }
    while (store.purgeTombstones(whole, System.currentTimeMillis() + 1, new byte[0]).next() != null) {
      // every tombstone goes, the floor rises to 6
    }
    ShardMapDelta.SplitShard split = t.layout().strategy() == Strategy.RANGE
        ? ShardMapDelta.SplitShard.atKey(t.shards().get(0).id(), "key-4".getBytes(StandardCharsets.UTF_8))
        : ShardMapDelta.SplitShard.atHash(t.shards().get(0).id(), t.layout().hashMidpoint(0).getAsLong());
    map = map.apply(ShardMapDelta.on(map).splitShard(split).build());
    Table after = map.table("t").orElseThrow();

    // The same shard moved to another store first (its floor travels at its start), then split there.
    try (ShardStore other = ShardStore.open(dir.resolve("other"), false)) {
      Path file = dir.resolve("whole.sst");
      store.exportShard(whole, file);
      other.ingest(whole, file);
      other.inheritFloor(whole); // as it starts to serve there
      for (ShardAssignment s : after.shards()) {
        other.inheritFloor(ShardRef.of(after, s.id().number()));
      }
      for (Key k : keys) {
        ShardRef now = ShardRef.of(after, after.shardFor(k.partitionKey()).id().number());
        assertThat(other.put(now, k.encode(), new byte[] {9})).as("%s, moved then split", k).isEqualTo(7);
      }
    }
    // Split where it was purged (or found split at a restart): the table's floor covers the upper half.
    for (ShardAssignment s : after.shards()) {
      store.inheritFloor(ShardRef.of(after, s.id().number()));
    }
    for (Key k : keys) {
      ShardRef now = ShardRef.of(after, after.shardFor(k.partitionKey()).id().number());
      assertThat(store.put(now, k.encode(), new byte[] {9})).as("%s is written again above every purged version", k).isEqualTo(7);
    }
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"range", "hashrange", "mod"})
  void aVersionOneDirectoryIsMigratedIntoPlacementOrder(String strategy) throws Exception {
    ShardMap map = create(Strategy.byId(strategy), 3);
    Table t = map.table("t").orElseThrow();
    // Layout version 1: every shard behind its number, a write id's record and a floor at its start.
    Map<Key, Long> versions = new HashMap<>();
    for (int i = 0; i < 300; i++) {
      Key k = Key.of("user" + i, "s" + (i % 3));
      ShardRef bucket = new ShardRef(t.id(), t.shardFor(k.partitionKey()).id().number());
      long v = 0;
      for (int w = 0; w <= i % 3; w++) {
        v = store.put(bucket, k.encode(), ("v" + w).getBytes(StandardCharsets.UTF_8));
      }
      versions.put(k, v);
    }
    ShardRef first = new ShardRef(t.id(), t.shardFor(Key.of("user0").partitionKey()).id().number());
    store.apply(List.of(Mutation.put(first, Key.of("user0", "s0").encode(), new byte[] {1}).withRequestId(new byte[] {42})));
    versions.put(Key.of("user0", "s0"), versions.get(Key.of("user0", "s0")) + 1);
    store.close();
    forgetLayoutVersion(dir.resolve("db"));

    store = ShardStore.open(dir.resolve("db"), false);
    assertThat(store.layoutVersion()).isEqualTo(1);
    ShardStore.Migration m = store.migrate(id -> id == t.id() ? t : null);
    assertThat(store.layoutVersion()).isEqualTo(ShardStore.LAYOUT_VERSION);
    boolean ordered = t.layout().strategy() != Strategy.MOD;
    assertThat(m.shards()).isEqualTo(ordered ? 3 : 0);
    for (var e : versions.entrySet()) {
      ShardRef ref = ShardRef.of(t, t.shardFor(e.getKey().partitionKey()).id().number());
      Versioned got = store.get(ref, e.getKey().encode());
      assertThat(got).as("%s after the migration", e.getKey()).isNotNull();
      assertThat(got.version()).isEqualTo(e.getValue());
    }
    List<ShardRef> stored = store.storedShards(id -> id == t.id() ? t : null);
    assertThat(stored).hasSize(3).allMatch(r -> r.layout() == (ordered ? (t.layout().strategy() == Strategy.RANGE
        ? ShardRef.Layout.KEY : ShardRef.Layout.HASH) : ShardRef.Layout.BUCKET));
    store.close();
    store = ShardStore.open(dir.resolve("db"), false);
    assertThat(store.layoutVersion()).as("recorded").isEqualTo(ShardStore.LAYOUT_VERSION);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"range", "hashrange"})
  void aSizeSplitHalvesTheBytesAndNeverSplitsAPartition(String strategy) {
    ShardMap map = create(Strategy.byId(strategy));
    Table t = map.table("t").orElseThrow();
    ShardRef whole = ShardRef.of(t, t.shards().get(0).id().number());
    assertThat(store.sizeSplitPoint(whole)).as("empty").isEmpty();
    for (int s = 0; s < 50; s++) { // one partition of 50 rows: whole on one side
      store.put(whole, Key.of("big", "row" + s).encode(), new byte[100]);
    }
    assertThat(store.sizeSplitPoint(whole)).as("a single partition key").isEmpty();
    for (int p = 0; p < 200; p++) {
      store.put(whole, Key.of(String.format("p%03d", p)).encode(), new byte[10 + p % 7]);
    }
    ShardStore.SplitPoint point = store.sizeSplitPoint(whole).orElseThrow();
    map = splitFirstShard(map, point);
    Table after = map.table("t").orElseThrow();
    ShardStore.ShardStats low = store.stats(ShardRef.of(after, after.shards().get(0).id().number()));
    ShardStore.ShardStats high = store.stats(ShardRef.of(after, after.shards().get(1).id().number()));
    assertThat(low.bytes() + high.bytes()).isEqualTo(point.bytes());
    assertThat(low.bytes()).as("the lower half holds the bytes below the point").isEqualTo(point.bytesBelow());
    assertThat(Math.abs(low.bytes() - high.bytes())).as("halves within one partition of each other")
        .isLessThanOrEqualTo(50L * 120);
    int bigRows = 0;
    for (ShardAssignment s : after.shards()) {
      ShardRef ref = ShardRef.of(after, s.id().number());
      int rows = store.scan(ref, Key.of("big").encode(), Key.encodedPartitionEnd("big".getBytes(StandardCharsets.UTF_8)), 100)
          .entries().size();
      assertThat(rows).as("the partition 'big' is whole in one half").isIn(0, 50);
      bigRows += rows;
    }
    assertThat(bigRows).isEqualTo(50);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"range", "hashrange"})
  void sizeSplitPointsCutAShardIntoPiecesOfEqualBytesBetweenPartitions(String strategy) {
    ShardMap map = create(Strategy.byId(strategy));
    Table t = map.table("t").orElseThrow();
    ShardRef whole = ShardRef.of(t, t.shards().get(0).id().number());
    assertThat(store.sizeSplitPoints(whole, 4)).as("empty").isEmpty();
    for (int p = 0; p < 400; p++) {
      for (int r = 0; r < 3; r++) { // three rows per partition: never cut between them
        store.put(whole, Key.of(String.format("p%03d", p), "r" + r).encode(), new byte[40]);
      }
    }
    List<ShardStore.SplitPoint> points = store.sizeSplitPoints(whole, 4);
    assertThat(points).hasSize(3);
    long total = points.get(0).bytes();
    for (int i = 0; i < 3; i++) {
      assertThat((double) points.get(i).bytesBelow() / total).as("point %d", i).isCloseTo((i + 1) / 4.0, org.assertj.core.data.Offset.offset(0.01));
    }
    ShardMap split = map;
    for (int i = points.size() - 1; i >= 0; i--) {
      Table now = split.table("t").orElseThrow();
      ShardMapDelta.SplitShard cut = t.layout().strategy() == Strategy.RANGE
          ? ShardMapDelta.SplitShard.atKey(now.shards().get(0).id(), points.get(i).partitionKey())
          : ShardMapDelta.SplitShard.atHash(now.shards().get(0).id(), points.get(i).hash());
      split = split.apply(ShardMapDelta.on(split).splitShard(cut).build());
    }
    Table after = split.table("t").orElseThrow();
    assertThat(after.shards()).hasSize(4);
    for (ShardAssignment s : after.shards()) {
      long keys = store.stats(ShardRef.of(after, s.id().number())).keys();
      assertThat(keys % 3).as("whole partitions in shard %s", s.id()).isZero();
      assertThat(keys).isBetween(270L, 330L);
    }
  }

  /** {@code map} with table t's first shard split at {@code point}. */
  private static ShardMap splitFirstShard(ShardMap map, ShardStore.SplitPoint point) {
    Table t = map.table("t").orElseThrow();
    return map.apply(ShardMapDelta.on(map).splitShard(t.layout().strategy() == Strategy.RANGE
        ? ShardMapDelta.SplitShard.atKey(t.shards().get(0).id(), point.partitionKey())
        : ShardMapDelta.SplitShard.atHash(t.shards().get(0).id(), point.hash())).build());
  }

  /** Makes a directory look as a build before layout versions left it: no version recorded. */
  private static void forgetLayoutVersion(Path db) throws Exception {
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options = new DBOptions();
        RocksDB raw = RocksDB.open(options, db.toString(), List.of(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY),
            new ColumnFamilyDescriptor(ShardTrash.COLUMN_FAMILY), new ColumnFamilyDescriptor(StoreFormat.COLUMN_FAMILY),
            new ColumnFamilyDescriptor(ReplicaLogs.COLUMN_FAMILY), new ColumnFamilyDescriptor(LocalIndexes.COLUMN_FAMILY)), handles)) {
      raw.delete(handles.get(2), "format".getBytes(StandardCharsets.UTF_8));
      handles.forEach(ColumnFamilyHandle::close);
    }
  }

  private static ShardMap create(Strategy strategy) {
    return create(strategy, 1);
  }

  private static ShardMap create(Strategy strategy, int shards) {
    PartitionerSpec.Builder spec = PartitionerSpec.builder(strategy).hash(HashFunctions.murmur3_128());
    if (strategy == Strategy.RANGE && shards > 1) {
      spec.splitPoints(List.of("user2".getBytes(StandardCharsets.UTF_8), "user5".getBytes(StandardCharsets.UTF_8)));
    }
    PartitionerSpec built = spec.build();
    ShardLayout.Initial initial = ShardLayout.initial(built, shards, 1, KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int i = 0; i < initial.owners().length; i++) {
      owners.add(N1);
    }
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", built, initial.layout(), owners).build());
  }

  /** Bytes from a small alphabet with 0x00 in it, so escapes, prefixes and neighbours all occur. */
  private static byte[] randomBytes(Random random, int length) {
    byte[] out = new byte[length];
    for (int i = 0; i < length; i++) {
      out[i] = (byte) (random.nextInt(5) * 60);
    }
    return out;
  }
}
