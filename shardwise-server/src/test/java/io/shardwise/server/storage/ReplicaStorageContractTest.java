package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.server.move.MemoryEngine;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The contract of {@link ReplicaStorage}, held to by RocksDB ({@link ShardStore}'s {@code ReplicaLogs})
 * and by the simulations' memory engine alike: appends without gaps, reads in order, epochs by
 * offset, truncation of an unapplied suffix only, applying that writes the effects and the applied
 * position together, trimming and starting over at a base. RocksDB's also survives a reopen.
 */
abstract class ReplicaStorageContractTest {

  abstract ShardEngine engine();

  /** The engine after a crash: what it kept. */
  abstract ShardEngine reopened();

  /** Another node's engine of the same kind. */
  abstract ShardEngine another();

  /** A file to export a snapshot to. */
  abstract Path file(String name);

  static final ShardRef SHARD = shard();

  private static ShardRef shard() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout();
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, List.of(NodeId.of("n1"))).build());
    Table t = map.table("t").orElseThrow();
    return ShardRef.of(t, 0);
  }

  private static byte[] key(String k) {
    return Key.of(k).encode();
  }

  /** An entry that writes {@code value} at {@code version} under key {@code k}, evaluated by the engine. */
  private static LogEntry entry(ShardEngine engine, long offset, long epoch, String k, String value) throws Exception {
    ShardEngine.Evaluation e = engine.evaluate(List.of(Mutation.put(SHARD, key(k), value.getBytes(StandardCharsets.UTF_8))));
    return new LogEntry(offset, epoch, e.effects());
  }

  @Test
  void appendsReadsAndEpochsFollowTheLogWithoutGaps() throws Exception {
    ReplicaStorage log = engine().replicaStorage();
    assertThat(log.state(SHARD)).isEqualTo(ReplicaStorage.LogState.EMPTY);
    List<LogEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 5; i++) {
      entries.add(entry(engine(), i, i <= 3 ? 2 : 4, "k" + i, "v" + i));
    }
    log.append(SHARD, entries.subList(0, 3));
    log.append(SHARD, entries.subList(3, 5));
    assertThatThrownBy(() -> log.append(SHARD, List.of(entry(engine(), 7, 4, "k7", "v7")))).hasMessageContaining("does not follow");
    assertThat(log.state(SHARD)).isEqualTo(new ReplicaStorage.LogState(0, 0, 5, 4, 0, 0));
    assertThat(log.read(SHARD, 2, 2, 1 << 20)).extracting(LogEntry::offset).containsExactly(2L, 3L);
    assertThat(log.read(SHARD, 1, 100, 1)).as("at least one, past the byte limit").hasSize(1);
    assertThat(log.epochOf(SHARD, 0)).isEqualTo(0);
    assertThat(log.epochOf(SHARD, 3)).isEqualTo(2);
    assertThat(log.epochOf(SHARD, 4)).isEqualTo(4);
    assertThat(log.epochOf(SHARD, 6)).isEqualTo(-1);
    assertThat(engine().get(SHARD, key("k1"))).as("appended is not applied").isNull();
  }

  @Test
  void applyingWritesTheEffectsAndOnlyAnUnappliedSuffixIsTruncated() throws Exception {
    ReplicaStorage log = engine().replicaStorage();
    log.append(SHARD, List.of(entry(engine(), 1, 1, "a", "one"), entry(engine(), 2, 1, "b", "two"), entry(engine(), 3, 1, "c", "three")));
    log.apply(SHARD, log.read(SHARD, 1, 2, 1 << 20));
    assertThat(new String(engine().get(SHARD, key("b")).value(), StandardCharsets.UTF_8)).isEqualTo("two");
    assertThat(engine().get(SHARD, key("c"))).isNull();
    assertThat(log.state(SHARD).appliedOffset()).isEqualTo(2);
    assertThatThrownBy(() -> log.apply(SHARD, log.read(SHARD, 1, 1, 1 << 20))).hasMessageContaining("not the next to apply");
    assertThatThrownBy(() -> log.truncateAfter(SHARD, 1)).hasMessageContaining("applied");
    log.truncateAfter(SHARD, 2);
    assertThat(log.state(SHARD).lastOffset()).isEqualTo(2);
    assertThat(log.read(SHARD, 3, 10, 1 << 20)).isEmpty();
    log.append(SHARD, List.of(entry(engine(), 3, 7, "c", "other")));
    assertThat(log.epochOf(SHARD, 3)).isEqualTo(7);
  }

  @Test
  void trimmingAndStartingOverMoveTheBase() throws Exception {
    ReplicaStorage log = engine().replicaStorage();
    log.append(SHARD, List.of(entry(engine(), 1, 1, "a", "one"), entry(engine(), 2, 3, "b", "two")));
    log.apply(SHARD, log.read(SHARD, 1, 2, 1 << 20));
    assertThatThrownBy(() -> log.trim(SHARD, 3)).isInstanceOf(IllegalArgumentException.class);
    log.trim(SHARD, 2);
    assertThat(log.state(SHARD)).isEqualTo(new ReplicaStorage.LogState(2, 3, 2, 3, 2, 3));
    assertThat(log.epochOf(SHARD, 2)).as("the base keeps its epoch").isEqualTo(3);
    assertThat(log.epochOf(SHARD, 1)).isEqualTo(-1);
    log.reset(SHARD, 40, 9);
    assertThat(log.state(SHARD)).isEqualTo(new ReplicaStorage.LogState(40, 9, 40, 9, 40, 9));
    assertThat(engine().get(SHARD, key("a"))).as("the data stays").isNotNull();
    log.forget(SHARD);
    assertThat(log.state(SHARD)).isEqualTo(ReplicaStorage.LogState.EMPTY);
  }

  @Test
  void whatWasAppendedAndAppliedSurvivesACrash() throws Exception {
    ReplicaStorage log = engine().replicaStorage();
    log.append(SHARD, List.of(entry(engine(), 1, 1, "a", "one"), entry(engine(), 2, 2, "b", "two"), entry(engine(), 3, 2, "c", "three")));
    log.apply(SHARD, log.read(SHARD, 1, 1, 1 << 20));
    ShardEngine after = reopened();
    assertThat(after.replicaStorage().state(SHARD)).isEqualTo(new ReplicaStorage.LogState(0, 0, 3, 2, 1, 1));
    assertThat(after.replicaStorage().read(SHARD, 2, 10, 1 << 20)).extracting(LogEntry::epoch).containsExactly(2L, 2L);
    assertThat(after.get(SHARD, key("a"))).isNotNull();
    assertThat(after.get(SHARD, key("b"))).isNull();
  }

  @Test
  void aSnapshotInstalledOnAnotherReplicaReplacesItsDataAndStartsItsLogAtTheSnapshot() throws Exception {
    ReplicaStorage log = engine().replicaStorage();
    log.append(SHARD, List.of(entry(engine(), 1, 1, "a", "one"), entry(engine(), 2, 2, "b", "two"), entry(engine(), 3, 2, "c", "three")));
    log.apply(SHARD, log.read(SHARD, 1, 2, 1 << 20));
    Path file = file("snapshot.sst");
    ShardEngine.ReplicaExport export = engine().exportReplica(SHARD, file);
    assertThat(export.offset()).as("as applied, not as appended").isEqualTo(2);
    assertThat(export.epoch()).isEqualTo(2);
    assertThat(export.stats().liveKeys()).isEqualTo(2);

    ShardEngine follower = another();
    ReplicaStorage theirs = follower.replicaStorage();
    theirs.append(SHARD, List.of(entry(follower, 1, 1, "stale", "old")));
    theirs.apply(SHARD, theirs.read(SHARD, 1, 1, 1 << 20));
    follower.installReplica(SHARD, file, export.offset(), export.epoch());
    assertThat(theirs.state(SHARD)).isEqualTo(new ReplicaStorage.LogState(2, 2, 2, 2, 2, 2));
    assertThat(new String(follower.get(SHARD, key("b")).value(), StandardCharsets.UTF_8)).isEqualTo("two");
    assertThat(follower.get(SHARD, key("b")).version()).isEqualTo(engine().get(SHARD, key("b")).version());
    assertThat(follower.get(SHARD, key("c"))).as("appended, not applied: not in the snapshot").isNull();
    assertThat(follower.get(SHARD, key("stale"))).as("what it held is replaced").isNull();
    theirs.append(SHARD, log.read(SHARD, 3, 10, 1 << 20));
    theirs.apply(SHARD, theirs.read(SHARD, 3, 10, 1 << 20));
    assertThat(new String(follower.get(SHARD, key("c")).value(), StandardCharsets.UTF_8)).isEqualTo("three");
  }

  @Test
  void anEmptyShardInstallsAsEmpty() throws Exception {
    ShardEngine.ReplicaExport export = engine().exportReplica(SHARD, file("empty.sst"));
    assertThat(export.stats().entries()).isZero();
    ShardEngine follower = another();
    follower.replicaStorage().append(SHARD, List.of(entry(follower, 1, 1, "stale", "old")));
    follower.replicaStorage().apply(SHARD, follower.replicaStorage().read(SHARD, 1, 1, 1 << 20));
    follower.installReplica(SHARD, null, 0, 0);
    assertThat(follower.get(SHARD, key("stale"))).isNull();
    assertThat(follower.replicaStorage().state(SHARD)).isEqualTo(ReplicaStorage.LogState.EMPTY);
  }

  static final class OnRocksDb extends ReplicaStorageContractTest {
    @TempDir Path dir;
    private ShardStore store;
    private ShardStore other;

    @Override
    ShardEngine another() {
      if (other == null) {
        other = ShardStore.open(dir.resolve("other"), false);
      }
      return other;
    }

    @Override
    Path file(String name) {
      return dir.resolve(name);
    }

    /**
     * The log's unapplied tail is kept in memory as well ({@code ReplicaLogs.Tail}): whatever a
     * random run of appends (some past the tail's bounds, some applied in the same write),
     * truncations, applies, trims and restarts does, every read and epoch equals the memory
     * engine's after the same steps — and the store reopened reads the same from RocksDB alone.
     */
    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5, 6})
    void readsThroughTheInMemoryTailEqualTheLog(long seed) throws Exception {
      java.util.Random random = new java.util.Random(seed);
      MemoryEngine model = new MemoryEngine();
      ReplicaStorage expected = model.replicaStorage();
      long epoch = 1;
      for (int step = 0; step < 400; step++) {
        ReplicaStorage actual = engine().replicaStorage();
        ReplicaStorage.LogState s = expected.state(SHARD);
        int op = random.nextInt(10);
        if (op < 5) { // append a run, now and then longer than the tail holds, or of values larger than it holds
          int n = random.nextInt(8) == 0 ? ReplicaLogs.TAIL_MAX_ENTRIES + random.nextInt(40) : 1 + random.nextInt(6);
          int valueBytes = n < 10 && random.nextInt(10) == 0 ? (int) (ReplicaLogs.TAIL_MAX_BYTES / 3) : 10;
          if (random.nextInt(6) == 0) {
            epoch++;
          }
          List<LogEntry> entries = new ArrayList<>();
          for (int i = 1; i <= n; i++) {
            entries.add(entry(engine(), s.lastOffset() + i, epoch, "k" + random.nextInt(50), random.nextInt() + "x".repeat(valueBytes)));
          }
          if (random.nextBoolean() || s.appliedOffset() == s.lastOffset() && random.nextBoolean()) {
            expected.append(SHARD, entries);
            actual.append(SHARD, entries);
          } else { // and apply some of the held ones and of these, in one step
            List<LogEntry> applied = new ArrayList<>(expected.read(SHARD, s.appliedOffset() + 1, 1 + random.nextInt(10), 1 << 20));
            if (applied.isEmpty() || applied.get(applied.size() - 1).offset() == s.lastOffset()) {
              applied.addAll(entries.subList(0, random.nextInt(Math.min(entries.size(), 5) + 1)));
            }
            expected.appendAndApply(SHARD, entries, applied);
            actual.appendAndApply(SHARD, entries, applied);
          }
        } else if (op == 5 && s.lastOffset() > s.appliedOffset()) { // truncate an unapplied suffix
          long after = s.appliedOffset() + random.nextInt((int) (s.lastOffset() - s.appliedOffset()));
          expected.truncateAfter(SHARD, after);
          actual.truncateAfter(SHARD, after);
        } else if (op == 6 && s.lastOffset() > s.appliedOffset()) { // apply some
          List<LogEntry> next = expected.read(SHARD, s.appliedOffset() + 1, 1 + random.nextInt(30), 1 << 20);
          expected.apply(SHARD, next);
          actual.apply(SHARD, next);
        } else if (op == 7 && s.appliedOffset() > s.baseOffset()) { // trim some of what is applied
          long upTo = s.baseOffset() + 1 + random.nextInt((int) (s.appliedOffset() - s.baseOffset()));
          expected.trim(SHARD, upTo);
          actual.trim(SHARD, upTo);
        } else if (op == 8 && random.nextInt(4) == 0) { // a restart: only RocksDB is left
          reopened();
        }
        actual = engine().replicaStorage();
        ReplicaStorage.LogState now = expected.state(SHARD);
        assertThat(actual.state(SHARD)).as("step %d", step).isEqualTo(now);
        for (int probe = 0; probe < 4; probe++) {
          long from = now.baseOffset() + random.nextInt((int) (now.lastOffset() - now.baseOffset() + 2)); // the base and the end included
          assertThat(actual.epochOf(SHARD, from)).as("step %d: epoch of %d", step, from).isEqualTo(expected.epochOf(SHARD, from));
          from = Math.max(from, now.baseOffset() + 1); // reads start after the base
          int max = 1 + random.nextInt(2 * ReplicaLogs.TAIL_MAX_ENTRIES);
          long maxBytes = random.nextBoolean() ? 1 << 20 : 1 + random.nextInt(4000);
          assertThat(described(actual.read(SHARD, from, max, maxBytes))).as("step %d: read from %d", step, from)
              .isEqualTo(described(expected.read(SHARD, from, max, maxBytes)));
        }
      }
    }

    /** Entries as comparable text (their effects hold arrays). */
    private static List<String> described(List<LogEntry> entries) {
      return entries.stream().map(e -> e.offset() + "@" + e.epoch() + ":" + java.util.HexFormat.of().formatHex(e.encode())).toList();
    }

    /** kill -9 between the install's marker and its end: the shard comes back empty with its log at 0, never half old and half new. */
    @Test
    void anInstallInterruptedByACrashLeavesTheShardEmptyWithItsLogAtZero() throws Exception {
      ShardStore leader = (ShardStore) engine();
      leader.replicaStorage().append(SHARD, List.of(entry(leader, 1, 1, "a", "one")));
      leader.replicaStorage().apply(SHARD, leader.replicaStorage().read(SHARD, 1, 1, 1 << 20));
      Path file = file("snapshot.sst");
      leader.exportReplica(SHARD, file);
      ShardStore follower = (ShardStore) another();
      follower.replicaStorage().append(SHARD, List.of(entry(follower, 1, 1, "stale", "old")));
      follower.replicaStorage().apply(SHARD, follower.replicaStorage().read(SHARD, 1, 1, 1 << 20));
      ((ReplicaLogs) follower.replicaStorage()).beginInstall(SHARD);
      follower.ingest(SHARD, file); // the crash comes before the log starts over at the snapshot
      follower.close();
      other = ShardStore.open(dir.resolve("other"), false);
      assertThat(other.replicaStorage().state(SHARD)).isEqualTo(ReplicaStorage.LogState.EMPTY);
      assertThat(other.get(SHARD, key("a"))).isNull();
      assertThat(other.get(SHARD, key("stale"))).isNull();
      other.close();
      other = ShardStore.open(dir.resolve("other"), false);
      assertThat(other.replicaStorage().state(SHARD)).as("the marker is gone").isEqualTo(ReplicaStorage.LogState.EMPTY);
    }

    @Override
    ShardEngine engine() {
      if (store == null) {
        store = ShardStore.open(dir.resolve("db"), false);
      }
      return store;
    }

    @Override
    ShardEngine reopened() {
      store.close();
      store = ShardStore.open(dir.resolve("db"), false);
      return store;
    }

    @AfterEach
    void close() {
      if (store != null) {
        store.close();
      }
      if (other != null) {
        other.close();
      }
    }
  }

  static final class InMemory extends ReplicaStorageContractTest {
    private final MemoryEngine engine = new MemoryEngine();
    private final MemoryEngine other = new MemoryEngine();
    @TempDir Path dir;

    @Override
    ShardEngine another() {
      return other;
    }

    @Override
    Path file(String name) {
      return dir.resolve(name);
    }

    @Override
    ShardEngine engine() {
      return engine;
    }

    @Override
    ShardEngine reopened() {
      return engine; // a crash keeps the memory engine, as it keeps RocksDB's files
    }
  }
}
