package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.key.Key;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What {@code kill -9} of a process leaves of a store opened with {@code --sync-writes}, with and
 * without the fault-test aid that keeps unsynced writes in the process ({@link ShardStore#open(Path,
 * boolean, boolean)}; {@code node --power-loss-on-crash}). The child JVM appends a shard's log
 * (synced), applies half of it (the apply skips its fsync: what it writes is in the log already),
 * appends once more (synced), applies the rest, and is killed. With the aid, the crash acts as a
 * power loss: every synced write is kept, and so is every apply written before the last synced
 * write (RocksDB's log is one file written in order: syncing it syncs what came before), while the
 * applies after it are lost; the log still holds them, so applying it again brings the data back.
 * That is the argument the replication protocol's unsynced applies rest on. Without the aid, the
 * OS page cache keeps everything through a process crash.
 */
class PowerLossTest {

  private static final int ENTRIES = 200;

  @TempDir Path dir;

  @ParameterizedTest(name = "unsynced writes die with the process: {0}")
  @ValueSource(booleans = {true, false})
  void aKilledProcessKeepsEverySyncedWriteAndWhatWasWrittenBeforeIt(boolean powerLoss) throws Exception {
    Path data = dir.resolve("store");
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), PowerLossTest.class.getName(), data.toString(), Boolean.toString(powerLoss))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      do {
        line = out.readLine();
      } while (line != null && !line.equals("WRITTEN"));
      assertThat(line).as("the child wrote everything").isEqualTo("WRITTEN");
      child.destroyForcibly(); // SIGKILL
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      child.destroyForcibly();
    }

    try (ShardStore store = ShardStore.open(data, true)) {
      ReplicaStorage log = store.replicaStorage();
      ReplicaStorage.LogState state = log.state(ReplicaStorageContractTest.SHARD);
      assertThat(state.lastOffset()).as("every synced append is kept").isEqualTo(ENTRIES + 1);
      long applied = powerLoss ? ENTRIES / 2 : ENTRIES;
      assertThat(state.appliedOffset()).as("applies written before the last synced write are kept, later ones only without the aid")
          .isEqualTo(applied);
      for (int i = 1; i <= ENTRIES; i++) {
        assertThat(store.get(ReplicaStorageContractTest.SHARD, key(i)) != null).as("key %d is there", i).isEqualTo(i <= applied);
      }
      log.apply(ReplicaStorageContractTest.SHARD, log.read(ReplicaStorageContractTest.SHARD, applied + 1, ENTRIES, Long.MAX_VALUE)
          .stream().filter(e -> e.offset() <= ENTRIES).toList());
      for (int i = 1; i <= ENTRIES; i++) {
        assertThat(new String(store.get(ReplicaStorageContractTest.SHARD, key(i)).value(), StandardCharsets.UTF_8)).isEqualTo("v" + i);
      }
    }
  }

  private static byte[] key(int i) {
    return Key.of("k" + i).encode();
  }

  /** The child: writes as the class comment says, prints {@code WRITTEN}, and waits to be killed. */
  public static void main(String[] args) throws Exception {
    ShardStore store = ShardStore.open(Path.of(args[0]), true, Boolean.parseBoolean(args[1]));
    ReplicaStorage log = store.replicaStorage();
    List<LogEntry> entries = new ArrayList<>();
    for (int i = 1; i <= ENTRIES + 1; i++) {
      ShardEngine.Evaluation e = store.evaluate(List.of(Mutation.put(ReplicaStorageContractTest.SHARD, key(i),
          ("v" + i).getBytes(StandardCharsets.UTF_8))));
      entries.add(new LogEntry(i, 1, e.effects()));
    }
    log.append(ReplicaStorageContractTest.SHARD, entries.subList(0, ENTRIES));
    for (int i = 0; i < ENTRIES / 2; i += 10) {
      log.apply(ReplicaStorageContractTest.SHARD, entries.subList(i, i + 10));
    }
    log.append(ReplicaStorageContractTest.SHARD, entries.subList(ENTRIES, ENTRIES + 1));
    for (int i = ENTRIES / 2; i < ENTRIES; i += 10) {
      log.apply(ReplicaStorageContractTest.SHARD, entries.subList(i, i + 10));
    }
    System.out.println("WRITTEN");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
