package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.bench.history.HistoryRecorder;
import io.shardwise.bench.history.LinearizabilityChecker;
import io.shardwise.bench.history.Op;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fault suite on real processes: node processes killed with {@code kill -9} (SIGKILL) while
 * several clients per key read and write, restarted at once on their data directories, and every
 * key's history checked for linearizability (unknown outcomes as maybe applied). A final read of
 * every key is part of the history, so an acknowledged write that was lost fails the check.
 *
 * <p>Seeded: {@code -Dshardwise.faults.seeds=1,2,3} (default {@code 1}); each run prints one
 * {@code FAULT-RUN} line for {@code bench/faults.sh}, which runs long campaigns.
 */
@Tag("integration")
class KillNineIT {

  private static final Duration SESSION = Duration.ofSeconds(4);

  @TempDir Path dir;
  private EmbeddedZooKeeper zk;
  private ServerProcesses processes;

  static Stream<Long> seeds() {
    return Arrays.stream(System.getProperty("shardwise.faults.seeds", "1").split(",")).map(String::strip).map(Long::parseLong);
  }

  @BeforeEach
  void start() {
    zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    processes = new ServerProcesses(dir);
  }

  @AfterEach
  void stop() throws InterruptedException {
    processes.close();
    zk.close();
  }

  private void startNode(String id) throws Exception {
    processes.start(id, "node", "--zk", zk.connectString(), "--data-dir", dir.resolve(id).toString(), "--id", id,
        "--session-timeout", SESSION.toSeconds() + "s", "--drop-grace", "2s");
  }

  /** Nodes n1..n3, and each table made through the CLI with 6 hash-range shards; returns the node ids. */
  private List<String> startThreeNodesWithTables(String... tables) throws Exception {
    List<String> nodes = List.of("n1", "n2", "n3");
    for (String n : nodes) {
      startNode(n);
    }
    for (String table : tables) {
      ServerProcesses.Result created = processes.cli(zk.connectString(), "table", "create", table, "--strategy", "hashrange", "--shards", "6");
      assertThat(created.exit()).as(created.err()).isZero();
    }
    return nodes;
  }

  private ShardwiseClient client(List<String> nodes) throws Exception {
    List<String> seeds = new ArrayList<>();
    for (String n : nodes) {
      seeds.add(processes.address(n));
    }
    return ShardwiseClient.builder().seeds(seeds).build();
  }

  private static void report(String scenario, long seed, HistoryRecorder recorder, Map<String, List<Op>> histories,
      Optional<LinearizabilityChecker.Violation> violation) {
    long ops = histories.values().stream().mapToLong(List::size).sum();
    System.out.println("FAULT-RUN scenario=" + scenario + " seed=" + seed + " operations=" + ops + " acknowledged="
        + recorder.acknowledgedWrites() + " unknown=" + recorder.unknownWrites() + " violations=" + (violation.isPresent() ? 1 : 0)
        + " longest_gap_ms=" + longestGapMillis(histories));
  }

  /**
   * The longest time in which no operation on any key completed successfully: how long the fault
   * left the clients (four of them, over every node) without any answer at all.
   */
  static long longestGapMillis(Map<String, List<Op>> histories) {
    long[] done = histories.values().stream().flatMap(List::stream).filter(o -> o.outcome() == Op.Outcome.OK).mapToLong(Op::completed)
        .sorted().toArray();
    long gap = 0;
    for (int i = 1; i < done.length; i++) {
      gap = Math.max(gap, done[i] - done[i - 1]);
    }
    return gap / 1_000_000;
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anOwnerKilledWithNoMoveRunningLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables("hist");
    SplittableRandom random = new SplittableRandom(seed);
    String victim = nodes.get(random.nextInt(nodes.size()));

    List<String> seeds = List.of(processes.address("n1"), processes.address("n2"), processes.address("n3"));
    try (HistoryRecorder recorder = new HistoryRecorder(() -> ShardwiseClient.builder().seeds(seeds).build(), "hist", 4, 10, seed)) {
      recorder.start(Duration.ofSeconds(16));
      Thread.sleep(2_000 + random.nextInt(3_000)); // the fault lands at a seeded moment of the run
      processes.kill9(victim);
      startNode(victim); // at once, on the same data directory: waits out its old session
      recorder.awaitEnd();
      Map<String, List<Op>> histories = recorder.finish();
      Optional<LinearizabilityChecker.Violation> violation = LinearizabilityChecker.check(histories);
      report("kill-owner", seed, recorder, histories, violation);
      assertThat(violation).as(() -> violation.map(Object::toString).orElse("")).isEmpty();
      assertThat(recorder.acknowledgedWrites()).as("the run wrote something").isPositive();
    }
  }

  /**
   * A node stopped with SIGSTOP for 1 to 7 s, then resumed: shorter than its ZooKeeper session (4 s)
   * it simply goes on; longer, its session expires while it stands still, it wakes up fenced, and it
   * must re-read the map and register again before it serves.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anOwnerPausedWithSigstopLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables("hist");
    SplittableRandom random = new SplittableRandom(seed);
    String victim = nodes.get(random.nextInt(nodes.size()));
    List<String> seeds = List.of(processes.address("n1"), processes.address("n2"), processes.address("n3"));
    try (HistoryRecorder recorder = new HistoryRecorder(() -> ShardwiseClient.builder().seeds(seeds).build(), "hist", 4, 10, seed)) {
      recorder.start(Duration.ofSeconds(18));
      Thread.sleep(2_000 + random.nextInt(2_000));
      processes.pause(victim, Duration.ofMillis(1_000 + random.nextInt(6_000)));
      recorder.awaitEnd();
      Map<String, List<Op>> histories = recorder.finish();
      Optional<LinearizabilityChecker.Violation> violation = LinearizabilityChecker.check(histories);
      report("pause-owner", seed, recorder, histories, violation);
      assertThat(violation).as(() -> violation.map(Object::toString).orElse("")).isEmpty();
      assertThat(recorder.acknowledgedWrites()).as("the run wrote something").isPositive();
    }
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theSourceOfAMoveKilledMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    killInAMove(seed, "kill-move-source", MoveRecord::getFrom);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theDestinationOfAMoveKilledMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    killInAMove(seed, "kill-move-destination", MoveRecord::getTo);
  }

  /** A fourth node joins under load, and {@code victim} of the first move of a 24 MB table is killed in its copy or catch-up. */
  private void killInAMove(long seed, String scenario, java.util.function.Function<MoveRecord, String> victim) throws Exception {
    List<String> nodes = startThreeNodesWithTables("hist", "bulk");
    // Enough data that a throttled move takes seconds: the kill lands inside one.
    byte[] filler = new byte[1024];
    new SplittableRandom(seed).nextBytes(filler);
    List<Key> bulkKeys = new ArrayList<>();
    try (ShardwiseClient loader = client(nodes)) {
      for (int batch = 0; batch < 24; batch++) {
        List<Map.Entry<Key, byte[]>> entries = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
          Key k = Key.of(("bulk-" + batch + "-" + i).getBytes(StandardCharsets.UTF_8));
          entries.add(new AbstractMap.SimpleEntry<>(k, filler));
          if (i % 100 == 0) {
            bulkKeys.add(k);
          }
        }
        loader.batchPut("bulk", entries);
      }
    }
    try (Coordinator admin = Coordinator.connect(zk.connectString(), Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
          .setBandwidthBytesPerSecond(2L << 20).setMaxMovesPerNode(1).build());
      List<String> seeds = List.of(processes.address("n1"), processes.address("n2"), processes.address("n3"));
      try (HistoryRecorder recorder = new HistoryRecorder(() -> ShardwiseClient.builder().seeds(seeds).build(), "hist", 4, 10, seed)) {
        recorder.start(Duration.ofSeconds(25));
        startNode("n4"); // joins: the balancer moves shards of both tables to it
        MoveRecord moving = awaitMoving(records, Duration.ofSeconds(30));
        Thread.sleep(new SplittableRandom(seed).nextInt(1_500)); // somewhere in the copy or the catch-up
        String killed = victim.apply(moving);
        processes.kill9(killed);
        startNode(killed);
        recorder.awaitEnd();
        Map<String, List<Op>> histories = recorder.finish();
        Optional<LinearizabilityChecker.Violation> violation = LinearizabilityChecker.check(histories);
        report(scenario, seed, recorder, histories, violation);
        assertThat(violation).as(() -> violation.map(Object::toString).orElse("")).isEmpty();
      }
      try (ShardwiseClient reader = client(List.of("n1", "n2", "n3", "n4"))) {
        for (Key k : bulkKeys) {
          assertThat(reader.get("bulk", k)).as(new String(k.partitionKey(), StandardCharsets.UTF_8)).isPresent();
        }
      }
    }
  }

  private static MoveRecord awaitMoving(RebalanceRecords records, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      for (PlanRecord p : records.plans()) {
        for (MoveRecord m : p.getMovesList()) {
          if (m.getState() == MoveRecord.State.MOVING && m.getTable().equals("bulk")) {
            return m;
          }
        }
      }
      Thread.sleep(50);
    }
    throw new AssertionError("no move of table bulk started within " + timeout);
  }
}
