package io.shardwise.server.move;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The move protocol under thousands of seeded schedules ({@link MoveSimulation}): lost requests
 * and replies on every node-to-node call and map change, crashes and restarts at every call,
 * clients on stale maps, moves inside moves. A failing seed is printed with its last events and
 * replays exactly with {@code -Dshardwise.sim.seed=N}; {@code -Dshardwise.sim.seeds=N} runs more.
 *
 * <p>The schedules run on the in-memory engine (fast), and the first few hundred again on RocksDB:
 * a seed must give the same events on both, so the fast runs test what the nodes run.
 */
class MoveSimulationTest {

  private static final int SEEDS = Integer.getInteger("shardwise.sim.seeds", 10_000);
  private static final int ROCKSDB_SEEDS = Integer.getInteger("shardwise.sim.rocksdb-seeds", 200);
  private static final Long ONE_SEED = Long.getLong("shardwise.sim.seed");
  private static final int NODES = 3;

  @TempDir
  Path dir;

  @Test
  void tenThousandSchedulesKeepEveryAcknowledgedWriteAndServeOnlyFromTheOwner() throws Exception {
    List<Path> workDirs = workDirs(dir.resolve("memory"));
    MoveSimulation.Stats total = new MoveSimulation.Stats();
    long started = System.nanoTime();
    long first = ONE_SEED != null ? ONE_SEED : 1;
    long last = ONE_SEED != null ? ONE_SEED : SEEDS;
    for (long seed = first; seed <= last; seed++) {
      List<MemoryEngine> engines = List.of(new MemoryEngine(), new MemoryEngine(), new MemoryEngine());
      MoveSimulation sim = new MoveSimulation(seed, engines, workDirs);
      total.add(sim.run());
      if (ONE_SEED != null) {
        System.out.println("seed " + seed + ", last events:\n  " + String.join("\n  ", sim.trace()));
      }
    }
    System.out.printf("MOVE-SIMULATION memory engine, seeds %d-%d in %d ms: %s%n", first, last,
        (System.nanoTime() - started) / 1_000_000, total);
    if (ONE_SEED == null && SEEDS >= 1_000) {
      // the schedules reach what they are for
      assertThat(total.movesCutOver).isPositive();
      assertThat(total.movesAbandoned).isPositive();
      assertThat(total.movesCrashed).isPositive();
      assertThat(total.cutoversLostReply).isPositive();
      assertThat(total.retries).isPositive();
    }
  }

  @Test
  void theSameSchedulesOnRocksDbGiveTheSameEvents() throws Exception {
    Path shm = Path.of("/dev/shm"); // snapshot files and their syncs on memory if the machine has it
    Path root = Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, "shardwise-sim") : dir.resolve("rocksdb");
    List<ShardStore> stores = new ArrayList<>();
    try {
      for (int i = 1; i <= NODES; i++) {
        stores.add(ShardStore.open(root.resolve("n" + i), false));
      }
      List<Path> workDirs = workDirs(root);
      MoveSimulation.Stats total = new MoveSimulation.Stats();
      long started = System.nanoTime();
      long first = ONE_SEED != null ? ONE_SEED : 1;
      long last = ONE_SEED != null ? ONE_SEED : ROCKSDB_SEEDS;
      for (long seed = first; seed <= last; seed++) {
        for (ShardStore s : stores) {
          for (int shard = 0; shard < 16; shard++) {
            s.drop(new ShardRef(MoveSimulation.TABLE_ID, shard)); // the schedule before left its table here
          }
        }
        MoveSimulation onRocksDb = new MoveSimulation(seed, stores, workDirs);
        total.add(onRocksDb.run());
        MoveSimulation inMemory = new MoveSimulation(seed, List.of(new MemoryEngine(), new MemoryEngine(), new MemoryEngine()), workDirs);
        inMemory.run();
        assertThat(inMemory.digest()).as("seed %d: the in-memory engine's events differ from RocksDB's; RocksDB's last events:%n  %s%n"
            + "in memory:%n  %s", seed, String.join("\n  ", onRocksDb.trace()), String.join("\n  ", inMemory.trace()))
            .isEqualTo(onRocksDb.digest());
      }
      System.out.printf("MOVE-SIMULATION RocksDB, seeds %d-%d in %d ms (and again in memory, the same events): %s%n", first, last,
          (System.nanoTime() - started) / 1_000_000, total);
    } finally {
      stores.forEach(ShardStore::close);
      if (root.startsWith(shm)) {
        try (var paths = Files.walk(root)) {
          paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
    }
  }

  private static List<Path> workDirs(Path root) throws Exception {
    List<Path> out = new ArrayList<>();
    for (int i = 1; i <= NODES; i++) {
      out.add(Files.createDirectories(root.resolve("n" + i + "-moves")));
    }
    return out;
  }
}
