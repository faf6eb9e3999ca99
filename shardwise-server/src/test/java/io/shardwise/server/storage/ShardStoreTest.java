package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shard store on a real RocksDB in a temporary directory. */
class ShardStoreTest {

  private static final ShardRef A = new ShardRef(7, 0);
  private static final ShardRef A_NEXT = new ShardRef(7, 1);
  private static final ShardRef OTHER_TABLE = new ShardRef(8, 0);

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

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String s(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void theReplicationLogsMemtableKeepsAnInsertHintPerShard() throws Exception {
    // RocksDB writes the options it opened with to an OPTIONS file: the hint is set on the log's column family only.
    Path options;
    try (var files = java.nio.file.Files.list(dir.resolve("db"))) {
      options = files.filter(f -> f.getFileName().toString().startsWith("OPTIONS-")).max(java.util.Comparator.naturalOrder()).orElseThrow();
    }
    String text = java.nio.file.Files.readString(options);
    String logSection = text.substring(text.indexOf("[CFOptions \"" + ReplicaLogs.COLUMN_FAMILY_NAME + "\"]"));
    logSection = logSection.substring(0, logSection.indexOf("[TableOptions"));
    assertThat(logSection).contains("memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix." + ReplicaLogs.SHARD_PREFIX);
    String dataSection = text.substring(text.indexOf("[CFOptions \"default\"]"));
    dataSection = dataSection.substring(0, dataSection.indexOf("[TableOptions"));
    assertThat(dataSection).contains("memtable_insert_with_hint_prefix_extractor=nullptr");
  }

  @Test
  void versionsStartAtOneAndRiseWithEveryWrite() {
    assertThat(store.get(A, b("k"))).isNull();
    assertThat(store.put(A, b("k"), b("v1"))).isEqualTo(1);
    assertThat(store.put(A, b("k"), b("v2"))).isEqualTo(2);
    Versioned v = store.get(A, b("k"));
    assertThat(s(v.value())).isEqualTo("v2");
    assertThat(v.version()).isEqualTo(2);
  }

  @Test
  void aConditionalWriteSucceedsOnlyAtTheExpectedVersion() throws Exception {
    assertThat(store.putIfVersion(A, b("k"), b("first"), 0)).isEqualTo(1);
    assertThatThrownBy(() -> store.putIfVersion(A, b("k"), b("again"), 0))
        .isInstanceOf(VersionMismatchException.class)
        .hasMessage("expected version 0 but the current version is 1");
    assertThat(store.putIfVersion(A, b("k"), b("second"), 1)).isEqualTo(2);
    assertThat(s(store.get(A, b("k")).value())).isEqualTo("second");
  }

  @Test
  void versionsSurviveDeletesSoOldVersionsNeverMatchAgain() throws Exception {
    store.put(A, b("k"), b("v1"));
    assertThat(store.delete(A, b("k"))).isTrue();
    assertThat(store.delete(A, b("k"))).isFalse();
    assertThat(store.get(A, b("k"))).isNull();
    assertThat(store.putIfVersion(A, b("k"), b("reborn"), 0)).isEqualTo(3);
    assertThatThrownBy(() -> store.putIfVersion(A, b("k"), b("stale"), 1)).isInstanceOf(VersionMismatchException.class);
    assertThat(s(store.get(A, b("k")).value())).isEqualTo("reborn");
  }

  @Test
  void aPurgedTombstoneLeavesAVersionFloorSoNoVersionEverRepeats() throws Exception {
    assertThat(store.put(A, b("k"), b("v1"))).isEqualTo(1);
    assertThat(store.delete(A, b("k"))).isTrue(); // tombstone at version 2
    assertThat(store.purgeTombstones(A, System.currentTimeMillis() - 60_000, new byte[0]).purged())
        .as("a tombstone younger than the grace stays").isZero();
    assertThat(store.purgeTombstones(A, System.currentTimeMillis() + 1, new byte[0])).isEqualTo(new ShardStore.TombstonePurge(1, null));
    assertThat(store.readStored(List.of(A.storeKey(b("k")))).get(0).stored()).as("the tombstone is gone from the store").isNull();
    assertThat(store.storedShards(tableId -> null)).containsExactly(A); // the floor is kept in the shard's range
    assertThat(store.stats(A).keys()).as("the floor is no row").isZero();
    assertThat(store.scan(A, new byte[0], null, 10).entries()).isEmpty();

    // A client that read version 1 before the delete must not match the key written again (ABA).
    assertThat(store.putIfVersion(A, b("k"), b("reborn"), 0)).as("above the floor, not 1 again").isEqualTo(3);
    assertThatThrownBy(() -> store.putIfVersion(A, b("k"), b("stale"), 1)).isInstanceOf(VersionMismatchException.class);
    assertThat(store.put(A, b("never-written"), b("x"))).as("every new key of the shard starts above the floor").isEqualTo(3);
    assertThat(store.put(A_NEXT, b("k"), b("x"))).as("another shard has its own floor").isEqualTo(1);

    // The floor moves with the shard and survives a restart.
    store.delete(A, b("k")); // tombstone at 4
    store.purgeTombstones(A, System.currentTimeMillis() + 1, new byte[0]);
    Path sst = dir.resolve("a.sst");
    store.exportShard(A, sst);
    try (ShardStore other = ShardStore.open(dir.resolve("other"), false)) {
      other.ingest(A, sst);
      assertThat(other.put(A, b("k"), b("moved"))).isEqualTo(5);
    }
    store.close();
    store = ShardStore.open(dir.resolve("db"), false);
    assertThat(store.put(A, b("k"), b("restarted"))).isEqualTo(5);
  }

  @Test
  void tombstonesArePurgedInBatchesThatResumeWhereTheLastEnded() throws Exception {
    int n = ShardStore.TOMBSTONE_PURGE_BATCH * 2 + 88;
    for (int i = 0; i < n; i++) {
      store.put(A, b(String.format("k%05d", i)), b("v"));
      store.delete(A, b(String.format("k%05d", i)));
    }
    store.put(A, b("live"), b("stays"));
    List<Integer> batches = new java.util.ArrayList<>();
    byte[] from = new byte[0];
    while (from != null) {
      ShardStore.TombstonePurge p = store.purgeTombstones(A, System.currentTimeMillis() + 1, from);
      batches.add(p.purged());
      from = p.next();
    }
    assertThat(batches).containsExactly(ShardStore.TOMBSTONE_PURGE_BATCH, ShardStore.TOMBSTONE_PURGE_BATCH, 88);
    assertThat(store.scan(A, new byte[0], null, 10).entries()).extracting(e -> s(e.key())).containsExactly("live");
    assertThat(store.put(A, b("k00000"), b("again"))).isEqualTo(3);
  }

  @Test
  void aMergedValueForAKeyWhoseTombstoneWasPurgedComesBackAboveTheFloor() throws Exception {
    store.put(A, b("k"), b("v1"));
    List<ShardEngine.StoredValue> trashed = store.readStored(List.of(A.storeKey(b("k")))); // version 1, as a trash entry holds it
    store.put(A, b("k"), b("v2"));
    store.delete(A, b("k")); // tombstone at 3
    store.purgeTombstones(A, System.currentTimeMillis() + 1, new byte[0]);
    assertThat(store.mergeStored(A, trashed)).hasSize(1);
    Versioned back = store.get(A, b("k"));
    assertThat(s(back.value())).isEqualTo("v1");
    assertThat(back.version()).as("not version 1 again").isEqualTo(4);
  }

  @Test
  void aWriteIdIsAppliedOnceAndItsRecordTravelsWithTheShardButIsNoRow() throws Exception {
    byte[] id = b("id-1");
    assertThat(store.apply(List.of(Mutation.put(A, b("k"), b("v1")).withRequestId(id)))).containsExactly(1);
    assertThat(store.apply(List.of(Mutation.put(A, b("k"), b("v2")).withRequestId(id)))).as("the repeat is answered").containsExactly(1);
    assertThat(s(store.get(A, b("k")).value())).isEqualTo("v1");
    assertThat(store.apply(List.of(new Mutation(A, b("k"), b("v3"), 0).withRequestId(id))))
        .as("even a condition that no longer holds: the first answer stands").containsExactly(1);
    assertThat(store.stats(A).keys()).as("the record is not a row").isEqualTo(1);
    assertThat(store.scan(A, new byte[0], null, 10).entries()).hasSize(1);

    Path sst = dir.resolve("a.sst");
    assertThat(store.exportShard(A, sst).liveKeys()).isEqualTo(1);
    try (ShardStore other = ShardStore.open(dir.resolve("other"), false)) {
      other.ingest(A, sst);
      assertThat(other.apply(List.of(Mutation.put(A, b("k"), b("v4")).withRequestId(id)))).as("answered on the new owner").containsExactly(1);
      assertThat(other.purgeRequestRecords(A, System.currentTimeMillis() + 1)).isEqualTo(1);
      assertThat(other.apply(List.of(Mutation.put(A, b("k"), b("v4")).withRequestId(id)))).as("a new write once purged").containsExactly(2);
    }
    assertThatThrownBy(() -> store.apply(List.of(Mutation.put(A, b("x"), b("1")).withRequestId(id), Mutation.put(A, b("y"), b("1")).withRequestId(id))))
        .hasMessage("write id 1 of the batch repeats an earlier write id");
  }

  @Test
  void aBatchIsAppliedEntirelyOrNotAtAll() throws Exception {
    store.put(A, b("c"), b("old"));
    List<Mutation> batch =
        List.of(Mutation.put(A, b("a"), b("1")), Mutation.put(A_NEXT, b("b"), b("2")), new Mutation(A, b("c"), b("new"), 5));
    assertThatThrownBy(() -> store.apply(batch)).isInstanceOf(VersionMismatchException.class);
    assertThat(store.get(A, b("a"))).isNull();
    assertThat(store.get(A_NEXT, b("b"))).isNull();
    assertThat(s(store.get(A, b("c")).value())).isEqualTo("old");

    long[] versions = store.apply(List.of(Mutation.put(A, b("a"), b("1")), new Mutation(A, b("c"), b("new"), 1), Mutation.delete(A_NEXT, b("zz"))));
    assertThat(versions).as("deleting an absent key writes nothing and answers 0").containsExactly(1, 2, 0);
    assertThatThrownBy(() -> store.apply(List.of(Mutation.put(A, b("x"), b("1")), Mutation.put(A, b("x"), b("2")))))
        .hasMessage("key 1 of the batch repeats an earlier key");
  }

  @Test
  void scansStayInsideTheirShardInKeyOrderAndPageExactly() {
    for (int i = 0; i < 25; i++) {
      store.put(A, b(String.format(Locale.ROOT, "k%02d", i)), b("a" + i));
    }
    store.put(A_NEXT, b("k00"), b("next shard"));
    store.put(OTHER_TABLE, b("k00"), b("other table"));
    store.put(A, new byte[] {(byte) 0xff, (byte) 0xff}, b("top of shard"));
    store.delete(A, b("k05"));

    List<String> seen = new ArrayList<>();
    byte[] from = new byte[0];
    int pages = 0;
    while (true) {
      ScanPage page = store.scan(A, from, null, 7);
      pages++;
      page.entries().forEach(e -> seen.add(s(e.value())));
      if (!page.hasMore()) {
        break;
      }
      from = page.resumeFrom();
    }
    assertThat(pages).isEqualTo(4);
    assertThat(seen).hasSize(25).doesNotContain("a5", "next shard", "other table").endsWith("top of shard");
    assertThat(seen.subList(0, 3)).containsExactly("a0", "a1", "a2");

    ScanPage bounded = store.scan(A, b("k10"), b("k13"), 100);
    assertThat(bounded.entries()).extracting(e -> s(e.key())).containsExactly("k10", "k11", "k12");
    assertThat(bounded.hasMore()).isFalse();
  }

  @Test
  void droppingAShardRemovesOnlyThatShard() {
    store.put(A, b("k"), b("1"));
    store.put(A_NEXT, b("k"), b("2"));
    store.put(OTHER_TABLE, b("k"), b("3"));
    store.drop(A);
    assertThat(store.get(A, b("k"))).isNull();
    assertThat(store.stats(A)).isEqualTo(new ShardStore.ShardStats(0, 0));
    assertThat(s(store.get(A_NEXT, b("k")).value())).isEqualTo("2");
    assertThat(s(store.get(OTHER_TABLE, b("k")).value())).isEqualTo("3");
  }

  @Test
  void statsCountLiveKeysAndTheirBytes() {
    store.put(A, b("ab"), b("xyz"));
    store.put(A, b("c"), b("q"));
    store.put(A, b("gone"), b("q"));
    store.delete(A, b("gone"));
    assertThat(store.stats(A)).isEqualTo(new ShardStore.ShardStats(2, 2 + 3 + 1 + 1));
  }

  @Test
  void trafficCountsServedKeysPerShardButNotMoves() throws Exception {
    store.put(A, b("k1"), b("v"));
    store.apply(List.of(Mutation.put(A, b("k2"), b("v")), Mutation.put(A_NEXT, b("k3"), b("v"))));
    store.get(A, b("k1"));
    store.get(A, b("missing"));
    store.delete(A, b("k2"));
    store.scan(A_NEXT, b(""), null, 10);
    assertThatThrownBy(() -> store.putIfVersion(A, b("k1"), b("v"), 99)).isInstanceOf(VersionMismatchException.class);
    assertThat(store.readStored(List.of())).isEmpty();
    store.writeStored(A, store.readStored(List.of(A.storeKey(b("k1")))));
    assertThat(store.traffic().counts(A)).isEqualTo(new ShardTraffic.Counts(2, 3));
    assertThat(store.traffic().counts(A_NEXT)).isEqualTo(new ShardTraffic.Counts(1, 1));
    assertThat(store.traffic().counts(OTHER_TABLE)).isEqualTo(ShardTraffic.Counts.ZERO);
  }

  @Test
  void reopeningTheDirectoryBringsEveryShardBack() {
    store.put(A, b("k"), b("kept"));
    store.put(A_NEXT, b("k"), b("also kept"));
    store.close();
    store = ShardStore.open(dir.resolve("db"), false);
    assertThat(s(store.get(A, b("k")).value())).isEqualTo("kept");
    assertThat(store.get(A_NEXT, b("k")).version()).isEqualTo(1);
  }

  @Test
  void aDirectoryInUseIsRefusedWithItsName() {
    assertThatThrownBy(() -> ShardStore.open(dir.resolve("db"), false))
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("cannot open the shard store in " + dir.resolve("db"));
  }

  /** Conditional increments from several threads: no lost update, no duplicate success. */
  @Test
  void concurrentConditionalWritesAreLinearizable() throws Exception {
    store.put(A, b("counter"), b("0"));
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        results.add(pool.submit(() -> {
          int won = 0;
          for (int i = 0; i < 300; i++) {
            Versioned current = store.get(A, b("counter"));
            int next = Integer.parseInt(s(current.value())) + 1;
            try {
              store.putIfVersion(A, b("counter"), b(Integer.toString(next)), current.version());
              won++;
            } catch (VersionMismatchException lost) {
              // another thread won this round
            }
          }
          return won;
        }));
      }
      int won = 0;
      for (Future<Integer> f : results) {
        won += f.get(1, TimeUnit.MINUTES);
      }
      Versioned end = store.get(A, b("counter"));
      assertThat(Integer.parseInt(s(end.value()))).isEqualTo(won);
      assertThat(end.version()).isEqualTo(won + 1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void storedShardsListsEveryPrefixOnceAndAClosedStoreRefusesCalls() {
    store.put(A, b("a"), b("1"));
    store.put(A, b("b"), b("2"));
    store.put(A_NEXT, b("a"), b("1"));
    store.put(OTHER_TABLE, b("a"), b("1"));
    assertThat(store.storedShards(tableId -> null)).containsExactly(A, A_NEXT, OTHER_TABLE);
    store.drop(A_NEXT);
    assertThat(store.storedShards(tableId -> null)).containsExactly(A, OTHER_TABLE);
    ShardStore closed = ShardStore.open(dir.resolve("closed"), false);
    closed.close();
    assertThatThrownBy(() -> closed.get(A, b("a"))).isInstanceOf(StorageException.class).hasMessageContaining("closed");
  }
}
