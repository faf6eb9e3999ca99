package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.bench.history.AvailabilityProbe;
import io.shardwise.bench.history.HistoryRecorder;
import io.shardwise.history.LinearizabilityChecker;
import io.shardwise.history.Op;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.core.map.NodeId;
import io.shardwise.server.coordination.Coordinator;
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
 * The fault suite on real processes: ZooKeeper and every node a JVM of its own; nodes killed with
 * {@code kill -9} (SIGKILL), nodes and ZooKeeper stopped with SIGSTOP, a node restarted against the
 * wrong ZooKeeper, while several clients per key read and write; every key's history is checked
 * for linearizability (unknown outcomes as maybe applied). A final read of every key is part of
 * the history, so an acknowledged write that was lost fails the check.
 *
 * <p>Seeded: {@code -Dshardwise.faults.seeds=1,2,3} (default {@code 1}); each run prints one
 * {@code FAULT-RUN} line for {@code bench/faults.sh}, which runs long campaigns.
 */
@Tag("integration")
class KillNineIT {

  /**
   * Scenarios only {@code bench/faults.sh} runs, to keep {@code mvn verify} near 15 minutes: each
   * guards a path that an in-process test or another scenario here also covers (a move's
   * destination and the balancer's leader killed mid-move: {@code MoveSimulationTest} and the
   * move's source killed here; a foreign ZooKeeper: {@code NoDeleteOnAMapAloneTest}; ZooKeeper
   * paused: the pause scenarios; a ring join: {@code RebalanceTest}; a replica move's source or
   * leader killed: {@code RebalanceTest}'s replicated join under the history check, and the leader
   * kill scenarios here; an owner killed right after splits and a merge: {@code SplitMergeTest} and
   * {@code ReplicationTest}'s splits and merges at one log position; a wiped data directory: {@code
   * StoreTrustTest}, {@code ReplicationTest} and the replication simulation; two of three replicas
   * killed: {@code ReplicationTest}'s minimum in-sync refusal; a leader paused past its session: the
   * leader cut off from ZooKeeper here; replicated neighbours apart merged under a kill: {@code
   * ReplicationTest}'s merge of such neighbours under the history check, and the replica move and
   * replicated merge kill scenarios here; the controller killed during a failover: the replication
   * simulation, whose controller plans each failover from the map alone, and the leader-and-controller
   * kill here).
   */
  static final String CAMPAIGN = "campaign";

  /**
   * How long the history clients keep running after a fault has struck (its {@code strike} returned:
   * a restarted node serves again), whenever that was, and at least the run's duration: every run
   * records the fault and the recovery under load.
   */
  private static final Duration AFTER_FAULT = Duration.ofSeconds(5);

  /** Longer than any fault takes to strike: the history clients run until then at most if a fault never returns. */
  private static final Duration STRIKE_LIMIT = Duration.ofMinutes(5);

  /** How long the nodes' transactions may stay undecided before a reader or writer aborts them. */
  private static final Duration TXN_TIMEOUT = Duration.ofSeconds(2);

  /** The nodes' ZooKeeper session timeout: 4 s, or {@code -Dshardwise.faults.session.millis}. */
  private static final Duration SESSION = Duration.ofMillis(Long.getLong("shardwise.faults.session.millis", 4_000));
  /** The nodes' read lease ({@code node --read-lease}): off, or {@code -Dshardwise.faults.readLease} (bench/faults.sh --read-lease). */
  private static final String READ_LEASE = System.getProperty("shardwise.faults.readLease", "0");
  /**
   * Nodes that fsync every write and lose the writes that skipped it when killed, as a power loss
   * would ({@code node --sync-writes --power-loss-on-crash}): {@code -Dshardwise.faults.powerLoss=true}
   * (bench/faults.sh --power-loss). Off: a kill keeps what the OS page cache holds.
   */
  private static final boolean POWER_LOSS = Boolean.getBoolean("shardwise.faults.powerLoss");

  @TempDir(cleanup = org.junit.jupiter.api.io.CleanupMode.ON_SUCCESS) Path dir; // a failed run's logs stay for a look
  private ServerProcesses processes;
  private String zk;

  static Stream<Long> seeds() {
    return Arrays.stream(System.getProperty("shardwise.faults.seeds", "1").split(",")).map(String::strip).map(Long::parseLong);
  }

  @BeforeEach
  void start() throws Exception {
    processes = new ServerProcesses(dir);
    zk = startZooKeeper("zk");
  }

  @AfterEach
  void stop() {
    processes.close();
  }

  /** A ZooKeeper server process named {@code name}; returns its connect string. */
  private String startZooKeeper(String name) throws Exception {
    processes.start(name, "zookeeper", "--port", "0", "--data-dir", dir.resolve(name).toString());
    return processes.address(name);
  }

  private void startNode(String id) throws Exception {
    processes.start(id, nodeCommand(id, zk));
  }

  private String[] nodeCommand(String id, String zooKeeper) {
    List<String> command = new ArrayList<>(List.of("node", "--zk", zooKeeper, "--data-dir", dir.resolve(id).toString(), "--id", id,
        "--session-timeout", SESSION.toMillis() + "ms", "--drop-grace", "2s", "--txn-timeout", TXN_TIMEOUT.toMillis() + "ms",
        "--read-lease", READ_LEASE));
    if (POWER_LOSS) {
      command.addAll(List.of("--sync-writes", "--power-loss-on-crash"));
    }
    return command.toArray(String[]::new);
  }

  /**
   * Nodes n1..n3, and each table with 6 hash-range shards (made through the client: a CLI process
   * per table would cost a JVM start per scenario, and the CLI's path is MultiProcessIT's); returns
   * the node ids.
   */
  private List<String> startThreeNodesWithTables(String... tables) throws Exception {
    return startThreeNodesWithTables(HASH_RANGES, tables);
  }

  private static final io.shardwise.client.TableSpec HASH_RANGES = io.shardwise.client.TableSpec.builder("hashrange").shards(6).replicas(1).build();

  /** Nodes n1..n3, and each table created with {@code spec}; returns the node ids. */
  private List<String> startThreeNodesWithTables(io.shardwise.client.TableSpec spec, String... tables) throws Exception {
    List<String> nodes = List.of("n1", "n2", "n3");
    Map<String, String[]> commands = new java.util.LinkedHashMap<>();
    nodes.forEach(n -> commands.put(n, nodeCommand(n, zk)));
    processes.startAll(commands); // at once: a JVM start each, not three in a row
    try (ShardwiseClient admin = client(nodes)) {
      for (String table : tables) {
        admin.createTable(table, spec);
      }
    }
    return nodes;
  }

  /**
   * A client of {@code nodes}. Its first map fetch gives up after 3 s, as an application's should;
   * right after the node processes started on a loaded machine it is asked again for up to 30 s
   * (a setup step, not the fault under test).
   */
  private ShardwiseClient client(List<String> nodes) throws Exception {
    List<String> seeds = new ArrayList<>();
    for (String n : nodes) {
      seeds.add(processes.address(n));
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (true) {
      try {
        return ShardwiseClient.builder().seeds(seeds).build();
      } catch (io.shardwise.client.ShardwiseException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
      }
    }
  }

  /**
   * One {@code FAULT-RUN} line. Besides the history's figures: {@code others_failed} and {@code
   * others_gap_ms}, the probe's unacknowledged writes and longest time without an acknowledged write
   * over the keys of nodes the fault did not strike; {@code struck_writable_ms}, the longest time
   * from the struck node serving again to an acknowledged write of each of its keys (-1: no such
   * key, or one not written within 30 s after the clients stopped).
   */
  private static void report(String scenario, long seed, HistoryRecorder recorder, Map<String, List<Op>> histories,
      Optional<LinearizabilityChecker.Violation> violation, AvailabilityProbe probe, List<String> owners, Struck struck) {
    long ops = histories.values().stream().mapToLong(List::size).sum();
    long othersFailed = 0;
    long othersGap = 0;
    long struckWritable = -1;
    boolean unanswered = false;
    for (int k = 0; k < owners.size(); k++) {
      if (owners.get(k).equals(struck.node())) {
        Optional<Duration> writable = probe.firstAcknowledgedAfter(k, struck.back());
        unanswered |= writable.isEmpty();
        struckWritable = Math.max(struckWritable, writable.map(Duration::toMillis).orElse(-1L));
      } else {
        othersFailed += probe.failures(k);
        othersGap = Math.max(othersGap, probe.longestGap(k).toMillis());
      }
    }
    System.out.println("FAULT-RUN scenario=" + scenario + " seed=" + seed + " operations=" + ops + " acknowledged="
        + recorder.acknowledgedWrites() + " unknown=" + recorder.unknownWrites() + " violations=" + (violation.isPresent() ? 1 : 0)
        + " longest_gap_ms=" + longestGapMillis(histories, recorder.endedNanos()) + " others_failed=" + othersFailed + " others_gap_ms=" + othersGap
        + " struck_writable_ms=" + (unanswered ? -1 : struckWritable) + (READ_LEASE.equals("0") ? "" : " read_lease=" + READ_LEASE)
        + (POWER_LOSS ? " power_loss=true" : ""));
  }

  /**
   * The longest time in which no operation on any key completed successfully while the clients ran
   * (until {@code endedNanos}, the recording's end; the checker's final reads come after it, once the
   * run is over, and are not counted): how long the fault left the clients (four of them, over every
   * node) without any answer at all.
   */
  static long longestGapMillis(Map<String, List<Op>> histories, long endedNanos) {
    long[] done = histories.values().stream().flatMap(List::stream).filter(o -> o.outcome() == Op.Outcome.OK).mapToLong(Op::completed)
        .filter(t -> t <= endedNanos).sorted().toArray();
    long gap = 0;
    for (int i = 1; i < done.length; i++) {
      gap = Math.max(gap, done[i] - done[i - 1]);
    }
    if (done.length > 0) {
      gap = Math.max(gap, endedNanos - done[done.length - 1]); // clients held until the end had no answer either
    }
    return gap / 1_000_000;
  }

  /**
   * What a fault did: the node it struck ({@code null}: none, ZooKeeper was), and when that node
   * was serving again (System.nanoTime).
   */
  private record Struck(String node, long back) {
    static Struck now(String node) {
      return new Struck(node, System.nanoTime());
    }
  }

  /** What a scenario does to the cluster while the clients run. */
  @FunctionalInterface
  private interface Fault {
    Struck strike() throws Exception;
  }

  private static final int PROBE_KEYS = 12;

  /**
   * Four clients read and write the 10 keys of table {@code hist} through n1..n3 for {@code
   * duration} while {@code fault} strikes, and an {@link AvailabilityProbe} writes 12 keys of table
   * {@code probe}; then every key's history must be linearizable, and the run reports its {@code
   * FAULT-RUN} line with the probe's figures (keys by their owner when the run started).
   */
  private void checkedRun(String scenario, long seed, Duration duration, Fault fault) throws Exception {
    checkedRun(scenario, seed, duration, HASH_RANGES, fault);
  }

  /** {@link #checkedRun}, with the probe's table made as {@code probeSpec} (replicated, for the replicated scenarios). */
  private void checkedRun(String scenario, long seed, Duration duration, io.shardwise.client.TableSpec probeSpec, Fault fault)
      throws Exception {
    List<String> seeds = List.of(processes.address("n1"), processes.address("n2"), processes.address("n3"));
    List<Key> probeKeys = new ArrayList<>();
    for (int i = 0; i < PROBE_KEYS; i++) {
      probeKeys.add(Key.of(("probe-" + i).getBytes(StandardCharsets.UTF_8)));
    }
    List<String> owners = new ArrayList<>();
    try (ShardwiseClient probeClient = ShardwiseClient.builder().seeds(seeds).build()) {
      probeClient.createTable("probe", probeSpec);
      try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        io.shardwise.core.map.Table probe = admin.syncedMap().table("probe").orElseThrow();
        probeKeys.forEach(k -> owners.add(probe.shardFor(k.partitionKey()).owner().value()));
      }
      try (HistoryRecorder recorder = new HistoryRecorder(() -> ShardwiseClient.builder().seeds(seeds).build(), "hist", 4, 10, seed);
          AvailabilityProbe availability = new AvailabilityProbe(probeClient, "probe", probeKeys, Duration.ofMillis(25))) {
        availability.start();
        long started = System.nanoTime();
        recorder.start(STRIKE_LIMIT); // until the fault has struck, however long that takes; then as below
        Struck struck = fault.strike();
        recorder.endAt(Math.max(started + duration.toNanos(), System.nanoTime() + AFTER_FAULT.toNanos()));
        recorder.awaitEnd();
        List<Integer> struckKeys = new ArrayList<>();
        for (int k = 0; k < owners.size(); k++) {
          if (owners.get(k).equals(struck.node())) {
            struckKeys.add(k);
          }
        }
        availability.awaitAcknowledgedAfter(struckKeys, struck.back(), Duration.ofSeconds(30)); // measured, not asserted
        availability.stop();
        Map<String, List<Op>> histories = recorder.finish();
        Optional<LinearizabilityChecker.Violation> violation = LinearizabilityChecker.check(histories);
        report(scenario, seed, recorder, histories, violation, availability, owners, struck);
        assertThat(violation).as(() -> violation.map(Object::toString).orElse("")).isEmpty();
        assertThat(recorder.acknowledgedWrites()).as("the run wrote something").isPositive();
      }
    }
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anOwnerKilledWithNoMoveRunningLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables("hist");
    SplittableRandom random = new SplittableRandom(seed);
    String victim = nodes.get(random.nextInt(nodes.size()));
    checkedRun("kill-owner", seed, Duration.ofSeconds(16), () -> {
      Thread.sleep(2_000 + random.nextInt(3_000)); // the fault lands at a seeded moment of the run
      return killAndRestart(victim);
    });
  }

  /**
   * Splits and a merge of one owner's shard while the clients write, then {@code kill -9} of that
   * owner and a restart: the halves are new shards over the same keys, so the restarted node must
   * serve them (nothing of theirs trashed as a foreign copy) and every acknowledged write must read
   * back through them.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void anOwnerKilledRightAfterSplitsAndAMergeLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    splitsThenKill(seed, "split-then-kill", HASH_RANGES);
  }

  /**
   * The same with both tables replicated (3 replicas, 2 in sync): each split and the merge are made
   * at one log position on every replica (the leader quiesces the shard first), and then the
   * shard's leader is killed, so the halves fail over to followers whose logs started at the cut.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void aLeaderKilledRightAfterSplitsAndAMergeOfReplicatedShardsLosesNothing(long seed) throws Exception {
    splitsThenKill(seed, "replicas-split-then-kill", REPLICATED);
  }

  private void splitsThenKill(long seed, String scenario, io.shardwise.client.TableSpec spec) throws Exception {
    List<String> nodes = startThreeNodesWithTables(spec, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun(scenario, seed, Duration.ofSeconds(18), spec, () -> {
      Thread.sleep(1_000 + random.nextInt(2_000));
      String victim;
      try (ShardwiseClient admin = client(nodes)) {
        io.shardwise.client.TableDescription t = admin.describeTable("hist", false);
        int position = random.nextInt(t.shards().size());
        io.shardwise.client.ShardDescription s = t.shards().get(position);
        victim = s.owner();
        t = admin.splitShardAtHash("hist", s.number(), middle(s));
        io.shardwise.client.ShardDescription upper = t.shards().get(position + 1);
        t = admin.splitShardAtHash("hist", upper.number(), middle(upper));
        t = admin.mergeShards("hist", t.shards().get(position).number()); // the lower half and the upper's lower half
      }
      Thread.sleep(random.nextInt(500));
      return killAndRestart(victim);
    });
  }

  /**
   * Replicated tables: three planned lead handovers on random shards of {@code hist} while the
   * clients write (each at one log position: the leader quiesces the shard and stays in the in-sync
   * set), then {@code kill -9} of the last new leader and a restart. A failover may now promote the
   * old leader, in sync by the handover and never caught up since: it must hold every acknowledged
   * write, or the histories show the loss.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void aLeadHandedOverThenTheNewLeaderKilledLosesNothing(long seed) throws Exception {
    startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-handover-then-kill", seed, Duration.ofSeconds(18), REPLICATED, () -> {
      Thread.sleep(1_000 + random.nextInt(2_000));
      NodeId last = null;
      try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10));
          io.shardwise.server.rpc.Peers peers = new io.shardwise.server.rpc.Peers(16 << 20)) {
        io.shardwise.server.rpc.ShardSplits splits = new io.shardwise.server.rpc.ShardSplits(admin, peers);
        for (int i = 0; i < 3; i++) {
          io.shardwise.core.map.Table t = admin.readMapSynced().map().table("hist").orElseThrow();
          io.shardwise.core.map.ShardAssignment s = t.shards().get(random.nextInt(t.shards().size()));
          if (s.inSync().isEmpty()) {
            continue;
          }
          NodeId to = s.inSync().get(random.nextInt(s.inSync().size()));
          splits.handOver(t.id(), s.id().number(), s.owner(), to);
          last = to;
          Thread.sleep(random.nextInt(300));
        }
      }
      if (last == null) {
        throw new AssertionError("no shard of hist had an in-sync follower to hand its lead to");
      }
      return killAndRestart(last.value());
    });
  }

  /**
   * Replicated tables: a node other than the controller hands every lead it holds (of {@code hist}
   * and of the probe's table) to an in-sync follower, then, a follower only, is killed with {@code
   * kill -9} and restarted 2 to 8 s later. The leaders' writes wait for it only until it leaves
   * their in-sync sets (each leader drops it after two heartbeats of refused messages, {@code
   * Replica.unreachable}; else the controller at its session's end), then go on with two replicas;
   * back, it catches up and rejoins every in-sync set.
   * Nothing acknowledged may be lost. {@code longest_gap_ms} and {@code others_gap_ms} are the write
   * stall a dead follower causes; a {@code REJOINED} line gives the time from its restart until it
   * is in sync everywhere again.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void aFollowerKilledHoldsWritesOnlyUntilItLeavesTheInSyncSetsAndLosesNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-kill-follower", seed, Duration.ofSeconds(20), REPLICATED, () -> {
      Thread.sleep(1_000 + random.nextInt(2_000));
      String boss = controller();
      List<String> candidates = nodes.stream().filter(n -> !n.equals(boss)).toList();
      String victim = candidates.get(random.nextInt(candidates.size()));
      NodeId from = NodeId.of(victim);
      try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10));
          io.shardwise.server.rpc.Peers peers = new io.shardwise.server.rpc.Peers(16 << 20)) {
        io.shardwise.server.rpc.ShardSplits splits = new io.shardwise.server.rpc.ShardSplits(admin, peers);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
          boolean leadsNone = true;
          for (io.shardwise.core.map.Table t : admin.readMapSynced().map().tables().values()) {
            for (io.shardwise.core.map.ShardAssignment s : t.shards()) {
              if (!s.owner().equals(from)) {
                continue;
              }
              leadsNone = false;
              List<NodeId> to = s.inSync().stream().filter(n -> !n.equals(from)).toList();
              if (!to.isEmpty()) {
                try {
                  splits.handOver(t.id(), s.id().number(), from, to.get(random.nextInt(to.size())));
                } catch (io.grpc.StatusRuntimeException e) {
                  // the shard changed meanwhile (or its follower is not caught up yet): looked at again next round
                }
              }
            }
          }
          return leadsNone;
        });
      }
      Thread.sleep(random.nextInt(500));
      processes.kill9(victim);
      Struck struck = Struck.now(victim);
      Thread.sleep(2_000 + random.nextInt(6_000));
      startNode(victim);
      long back = System.nanoTime();
      try (ShardwiseClient admin = client(nodes)) {
        awaitInSync(admin, "hist", Duration.ofSeconds(60));
        awaitInSync(admin, "probe", Duration.ofSeconds(60));
      }
      System.out.printf("REJOINED scenario=replicas-kill-follower seed=%d rejoined_ms=%d%n", seed, (System.nanoTime() - back) / 1_000_000);
      return struck;
    });
  }

  /**
   * Both tables, of one replica, begin to keep three while the clients write ({@code table set
   * --replicas 3}: each shard's owner leads at a new epoch, direct writes fenced out); once the
   * followers are in sync and min in-sync is 2, {@code kill -9} of the node leading the most shards
   * of {@code hist} and a restart: followers built from snapshots of data written before any log
   * must hold it, or the failover loses it.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void replicationTurnedOnThenALeaderKilledLosesNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables(HASH_RANGES, "hist", "kept");
    List<Key> kept = new ArrayList<>();
    try (ShardwiseClient admin = client(nodes)) {
      for (int i = 0; i < KEPT_KEYS; i++) { // written once, before any log: only the followers' snapshots carry them
        Key k = Key.of(("kept-" + i).getBytes(StandardCharsets.UTF_8));
        admin.put("kept", k, k.partitionKey());
        kept.add(k);
      }
    }
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-turn-on-kill", seed, Duration.ofSeconds(20), HASH_RANGES, () -> {
      Thread.sleep(1_000 + random.nextInt(2_000));
      try (ShardwiseClient admin = client(nodes)) {
        for (String table : List.of("hist", "probe", "kept")) {
          admin.setReplication(table, 3, 0);
        }
        awaitInSync(admin, "hist", Duration.ofSeconds(30));
        awaitInSync(admin, "kept", Duration.ofSeconds(30));
        admin.setReplication("hist", 3, 2);
        admin.setReplication("kept", 3, 2);
        Thread.sleep(random.nextInt(1_000));
        return killAndRestart(busiestLeader(admin, "kept"));
      }
    });
    // The killed node's shards of `kept` are led by followers now: each key must be there.
    try (ShardwiseClient admin = client(nodes)) {
      for (Key k : kept) {
        String name = new String(k.partitionKey(), StandardCharsets.UTF_8);
        java.util.concurrent.atomic.AtomicBoolean present = new java.util.concurrent.atomic.AtomicBoolean();
        boolean answered = io.shardwise.server.rpc.Retries.poll(Duration.ofSeconds(30), Duration.ofMillis(100), () -> {
          try {
            present.set(admin.get("kept", k).isPresent());
            return true;
          } catch (io.shardwise.client.ShardwiseException e) {
            return false; // the failover is not over yet
          }
        });
        assertThat(answered).as("kept key %s answered within 30 s", name).isTrue();
        assertThat(present.get()).as("kept key %s, written before replication was turned on", name).isTrue();
      }
    }
  }

  /** Keys written once before replication is turned on. */
  private static final int KEPT_KEYS = 300;

  /**
   * Both tables, replicated, go back to one replica while the clients write; then {@code kill -9}
   * of the node owning the most shards of {@code hist} and a restart: writes taken on the direct
   * path after the leaders stepped down from their logs must all be there, and the logs left
   * behind must not come back.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void replicationTurnedOffThenAnOwnerKilledLosesNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-turn-off-kill", seed, Duration.ofSeconds(18), REPLICATED, () -> {
      Thread.sleep(1_000 + random.nextInt(2_000));
      try (ShardwiseClient admin = client(nodes)) {
        for (String table : List.of("hist", "probe")) {
          admin.setReplication(table, 1, 0);
        }
        Thread.sleep(500 + random.nextInt(1_500));
        return killAndRestart(busiestLeader(admin, "hist"));
      }
    });
  }

  /** Waits until every shard of {@code table} has all its followers in sync. */
  private static void awaitInSync(ShardwiseClient admin, String table, Duration atMost) throws InterruptedException {
    long deadline = System.nanoTime() + atMost.toNanos();
    while (!admin.describeTable(table, false).shards().stream().allMatch(s -> s.inSync().size() == s.followers().size() && !s.followers().isEmpty())) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the followers of " + table + " were not in sync within " + atMost);
      }
      Thread.sleep(100);
    }
  }

  /** The node that leads (or owns) the most shards of {@code table}. */
  private static String busiestLeader(ShardwiseClient admin, String table) {
    Map<String, Long> led = admin.describeTable(table, false).shards().stream()
        .collect(java.util.stream.Collectors.groupingBy(io.shardwise.client.ShardDescription::owner, java.util.stream.Collectors.counting()));
    return led.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
  }

  /** The first hash of the upper half of a hashrange shard split in the middle. */
  private static long middle(io.shardwise.client.ShardDescription s) {
    return s.hashFirst() + Long.divideUnsigned(s.hashLast() - s.hashFirst(), 2) + 1;
  }

  /** Three replicas of each of 6 hash-range shards, writes acknowledged by 2 in sync. */
  private static final io.shardwise.client.TableSpec REPLICATED = io.shardwise.client.TableSpec.builder("hashrange").shards(6).replicas(3)
      .build();

  /** {@code kill -9} of the controller's node (see {@link #controller}); the time of the kill. */
  private Struck killController() throws Exception {
    String victim = controller();
    processes.kill9(victim);
    return Struck.now(victim);
  }

  /** The node that leads the balancer now (the controller, which fails shards over). */
  private String controller() throws Exception {
    try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      return new RebalanceRecords(admin).leader().orElseThrow(() -> new AssertionError("no balancer leader is registered"));
    }
  }

  /**
   * Replicated tables: {@code kill -9} of the node that leads the balancer (the controller, so the
   * failover is made by the next one) and some shards, restarted 0 to 8 s later. Its shards must
   * fail over to in-sync followers within the session timeout and some, and nothing acknowledged may
   * be lost; back, it catches up as a follower. {@code struck_writable_ms} is counted from the kill:
   * the time until each of its keys took a write again (the failover time).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aLeaderAndControllerKilledFailsOverToAnInSyncFollowerAndLosesNothing(long seed) throws Exception {
    startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    try (IndexedDocs docs = new IndexedDocs(seedAddresses(), seed)) {
      checkedRun("replicas-kill-leader", seed, Duration.ofSeconds(20), REPLICATED, () -> {
        Thread.sleep(2_000 + random.nextInt(2_000));
        Struck struck = killController();
        String victim = struck.node();
        Thread.sleep(random.nextInt(8_000));
        startNode(victim);
        return struck;
      });
      docs.stopAndCheck("replicas-kill-leader", seed);
    }
  }

  private List<String> seedAddresses() throws java.io.IOException {
    return List.of(processes.address("n1"), processes.address("n2"), processes.address("n3"));
  }

  /**
   * A replicated table of documents with a local and a global index on {@code color}, written by a
   * thread of its own while a scenario's fault strikes (every write a transaction of the row and its
   * global entries, some of them cut by the kill), and a second table, {@code adocs}, with an async
   * global index (plain writes, each leaving a pending marker that the shard's leader drains — a
   * promoted follower drains its dead leader's); afterwards the consistency checker ({@code index
   * check}) must find every local index exact on every node — the promoted leaders', the restarted
   * or rebuilt replicas' — and the global index exact against every row, within a minute (a replica
   * being rebuilt is indexed right after its snapshot lands; a transaction whose coordinator died is
   * decided by whoever meets its intents past its deadline).
   */
  private static final class IndexedDocs implements AutoCloseable {
    private final ShardwiseClient client;
    private final java.util.concurrent.atomic.AtomicBoolean writing = new java.util.concurrent.atomic.AtomicBoolean(true);
    private final java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
    private final Thread writer;

    IndexedDocs(List<String> seeds, long seed) {
      client = ShardwiseClient.builder().seeds(seeds).build();
      client.createTable("docs", io.shardwise.client.TableSpec.builder("hashrange").shards(6).replicas(3)
          .format(io.shardwise.core.doc.ValueFormat.JSON).build());
      client.createIndex("docs", "color");
      client.createGlobalIndex("docs", "color", io.shardwise.client.GlobalIndexMode.SYNC, "hashrange", 3);
      client.createTable("adocs", io.shardwise.client.TableSpec.builder("hashrange").shards(6).replicas(3)
          .format(io.shardwise.core.doc.ValueFormat.JSON).build());
      client.createGlobalIndex("adocs", "color", io.shardwise.client.GlobalIndexMode.ASYNC, "hashrange", 3);
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> client.indexes("docs").stream()
          .allMatch(io.shardwise.client.IndexInfo::ready) && client.indexes("adocs").stream().allMatch(io.shardwise.client.IndexInfo::ready));
      writer = new Thread(() -> {
        SplittableRandom random = new SplittableRandom(seed);
        String[] colors = {"red", "blue", "green", "silver"};
        while (writing.get()) {
          try {
            Key key = Key.of(("doc-" + random.nextInt(500)).getBytes(StandardCharsets.UTF_8));
            String table = random.nextBoolean() ? "docs" : "adocs"; // adocs: plain writes, each leaving a marker its leader drains
            if (random.nextInt(6) == 0) {
              client.delete(table, key);
            } else {
              client.put(table, key, ("{\"color\": \"" + colors[random.nextInt(colors.length)] + "\"}").getBytes(StandardCharsets.UTF_8));
            }
            written.incrementAndGet();
          } catch (RuntimeException e) {
            // refused or unknown during the fault: the indexes must match whatever the rows became
          }
        }
      }, "indexed-docs-writer");
      writer.start();
    }

    void stopAndCheck(String scenario, long seed) throws InterruptedException {
      stopAndCheck(scenario, seed, 3);
    }

    /** Stops the writer, then waits for every index to be exact; {@code liveNodes}: the nodes whose local index is checked. */
    void stopAndCheck(String scenario, long seed, int liveNodes) throws InterruptedException {
      writing.set(false);
      writer.join();
      long started = System.nanoTime();
      io.shardwise.client.IndexCheck.Report[] last = new io.shardwise.client.IndexCheck.Report[1];
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
        last[0] = client.checkIndexes("docs");
        return last[0].exact() && last[0].checks().size() == liveNodes + 1; // each node's local index, and the global one
      });
      // The async index: drained by the shards' leaders (the promoted ones drain their old leaders' markers), then exact.
      io.shardwise.client.IndexCheck.Report[] async = new io.shardwise.client.IndexCheck.Report[1];
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
        if (client.indexes("adocs").stream().anyMatch(i -> i.pendingRows() > 0)) {
          return false;
        }
        async[0] = client.checkIndexes("adocs");
        return async[0].exact() && async[0].checks().size() == 1;
      });
      long lagZeroMs = (System.nanoTime() - started) / 1_000_000;
      long entries = last[0].checks().stream().filter(c -> !c.node().equals("global")).mapToLong(io.shardwise.client.IndexCheck::entries)
          .sum();
      long global = last[0].checks().stream().filter(c -> c.node().equals("global")).mapToLong(io.shardwise.client.IndexCheck::entries)
          .sum();
      System.out.printf("INDEX-CHECK scenario=%s seed=%d writes=%d nodes=%d entries=%d global_entries=%d async_entries=%d exact_after_ms=%d"
          + " async_caught_up_ms=%d%n", scenario, seed, written.get(), last[0].checks().size() - 1, entries, global,
          async[0].checks().get(0).entries(), (System.nanoTime() - started) / 1_000_000, lagZeroMs);
      assertThat(written.get()).as("the documents were written").isPositive();
    }

    @Override
    public void close() {
      writing.set(false);
      try {
        writer.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      client.close();
    }
  }

  /**
   * Replicated tables on four nodes: {@code kill -9} of the controller's node, which never comes
   * back. Its shards fail over; past the absence grace (2 s here) the next controller rebuilds its
   * replicas on the node that had none (a snapshot from each leader, then the log) while the clients
   * run. The fault waits until every shard of both tables has three replicas, all in sync, none on
   * the dead node — so the histories' final reads come after the rebuild — and nothing acknowledged
   * may be lost.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aNodeKilledForGoodHasItsReplicasRebuiltAndLosesNothing(long seed) throws Exception {
    startThreeNodesWithTables(REPLICATED, "hist");
    startNode("n4");
    try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new RebalanceRecords(admin).updateSettings(s -> s.toBuilder().setAbsentGraceSeconds(2).build());
    }
    SplittableRandom random = new SplittableRandom(seed);
    IndexedDocs docs = new IndexedDocs(seedAddresses(), seed);
    checkedRun("replicas-kill-for-good", seed, Duration.ofSeconds(25), REPLICATED, () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      Struck struck = killController();
      String victim = struck.node();
      io.shardwise.core.map.NodeId dead = io.shardwise.core.map.NodeId.of(victim);
      try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
          io.shardwise.core.map.ShardMap map = admin.syncedMap();
          return map.tables().values().stream().allMatch(t -> t.shards().stream()
              .allMatch(a -> a.replicas().size() == 3 && !a.isReplica(dead) && a.inSync().size() == 2));
        });
      }
      System.out.printf("REBUILT scenario=replicas-kill-for-good seed=%d rebuilt_ms=%d%n", seed,
          (System.nanoTime() - struck.back()) / 1_000_000);
      return struck;
    });
    try (docs) {
      docs.stopAndCheck("replicas-kill-for-good", seed); // the rebuilt replicas' entries too
    }
  }

  /**
   * Replicated tables: {@code kill -9} of the controller's node, its data directory deleted, and the
   * node started again at once under its old id on the empty directory — while its old session
   * still lives, so the map still names it leader and in sync. Before it serves it must leave every
   * in-sync set and hand its leaderships to in-sync followers; then, 0 to 3 s later, another node
   * is killed (restarted 2 to 5 s after), so a shard the map wrongly trusted the empty node with
   * would be led by it. Nothing acknowledged may be lost.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void aNodeRestartedOnAWipedDataDirectoryUnderItsOldIdLosesNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-wipe", seed, Duration.ofSeconds(22), REPLICATED, () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      Struck struck = killController();
      String victim = struck.node();
      try (Stream<Path> files = java.nio.file.Files.walk(dir.resolve(victim))) {
        for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
          java.nio.file.Files.delete(f);
        }
      }
      startNode(victim);
      Thread.sleep(random.nextInt(3_000));
      List<String> others = nodes.stream().filter(n -> !n.equals(victim)).toList();
      String second = others.get(random.nextInt(others.size()));
      processes.kill9(second);
      Thread.sleep(2_000 + random.nextInt(3_000));
      startNode(second);
      return struck;
    });
  }

  /**
   * Replicated tables, two of three nodes killed at once: with 2 in sync needed, writes of every
   * shard are refused (never acknowledged, never lost) until one node is back and in sync again;
   * the other comes back later. Nothing acknowledged before may be lost.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void twoOfThreeReplicasKilledRefuseWritesAndLoseNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    String survivor = nodes.get(random.nextInt(nodes.size()));
    List<String> victims = nodes.stream().filter(n -> !n.equals(survivor)).toList();
    checkedRun("replicas-kill-two", seed, Duration.ofSeconds(20), REPLICATED, () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      processes.kill9(victims.get(0));
      processes.kill9(victims.get(1));
      Struck struck = Struck.now(victims.get(0));
      Thread.sleep(2_000 + random.nextInt(4_000));
      startNode(victims.get(0));
      Thread.sleep(random.nextInt(4_000));
      startNode(victims.get(1));
      return struck;
    });
  }

  /**
   * Replicated tables on four nodes: {@code kill -9} of a node that leads shards but not the
   * balancer, then — the moment its session has expired, while the controller fails its shards over
   * (0 to 600 ms after its node left ZooKeeper: before, during or after the failover's
   * compare-and-set) — {@code kill -9} of the controller. The next controller must finish what the
   * dead one started, from the map as it is (a second failover of shards the first gave to the
   * controller itself): every shard led by a live node again, nothing acknowledged lost, no stale
   * read. Both come back later, 1 to 4 s and 0 to 4 s apart. The run prints how many of the first
   * node's shards the dead controller had failed over ({@code MID-FAILOVER}) and when every shard
   * was led by a live node ({@code FAILED-OVER}, from the first kill); {@code struck_writable_ms}
   * is counted from the first kill.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void theControllerKilledDuringAFailoverLeavesItToTheNextAndLosesNothing(long seed) throws Exception {
    List<String> nodes = List.of("n1", "n2", "n3", "n4");
    Map<String, String[]> commands = new java.util.LinkedHashMap<>();
    nodes.forEach(n -> commands.put(n, nodeCommand(n, zk)));
    processes.startAll(commands);
    try (ShardwiseClient admin = client(nodes)) {
      admin.createTable("hist", REPLICATED); // replicas on all four nodes, so most shards keep two live replicas
    }
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-kill-controller-mid-failover", seed, Duration.ofSeconds(25), REPLICATED, () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      String controller = controller();
      try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        List<String> leaders = admin.syncedMap().tables().values().stream().flatMap(t -> t.shards().stream())
            .map(a -> a.owner().value()).filter(n -> !n.equals(controller)).distinct().sorted().toList();
        String first = leaders.get(random.nextInt(leaders.size()));
        NodeId firstId = NodeId.of(first);
        NodeId controllerId = NodeId.of(controller);
        long led = ledBy(admin, firstId);
        processes.kill9(first);
        Struck struck = Struck.now(first);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
            .until(() -> !admin.liveNodesNow().containsKey(firstId));
        Thread.sleep(random.nextInt(600));
        processes.kill9(controller);
        long stillLed = ledBy(admin, firstId); // the dead controller's last compare-and-set, if any, is stored by now or never
        System.out.printf("MID-FAILOVER scenario=replicas-kill-controller-mid-failover seed=%d first=%s controller=%s shards_led=%d"
            + " failed_over_by_the_dead_controller=%d%n", seed, first, controller, led, led - stillLed);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
            .until(() -> ledBy(admin, firstId) == 0 && ledBy(admin, controllerId) == 0);
        System.out.printf("FAILED-OVER scenario=replicas-kill-controller-mid-failover seed=%d after_ms=%d%n", seed,
            (System.nanoTime() - struck.back()) / 1_000_000);
        Thread.sleep(1_000 + random.nextInt(3_000));
        startNode(first);
        Thread.sleep(random.nextInt(4_000));
        startNode(controller);
        return struck;
      }
    });
  }

  /** The shards of every table the map names {@code node} the leader of. */
  private static long ledBy(Coordinator admin, NodeId node) {
    return admin.syncedMap().tables().values().stream().flatMap(t -> t.shards().stream()).filter(a -> a.owner().equals(node)).count();
  }

  /**
   * Replicated tables: the controller's node stopped with SIGSTOP for 5 to 8 s — longer than its
   * ZooKeeper session (4 s), so its shards fail over while it stands still, and it wakes up believing
   * it leads them. It must not acknowledge a write or answer a read as their leader any more (its
   * followers know the new leader epoch: the read barrier and the commit both need them): no split
   * brain, which the histories check.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void aLeaderPausedPastItsSessionNeverAnswersAsLeaderAgain(long seed) throws Exception {
    startThreeNodesWithTables(REPLICATED, "hist");
    SplittableRandom random = new SplittableRandom(seed);
    checkedRun("replicas-pause-leader", seed, Duration.ofSeconds(20), REPLICATED, () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      String victim = controller();
      Struck struck = Struck.now(victim);
      processes.pause(victim, Duration.ofMillis(5_000 + random.nextInt(3_000)));
      return struck;
    });
  }

  /**
   * Replicated tables, each node reaching ZooKeeper through a {@link PartitionProxy} of its own.
   * 2 to 4 s into the run, the controller's link to ZooKeeper (and only that link) goes silent for 6
   * to 9 s, longer than its 4 s session: it still reaches its peers and the clients, and believes it
   * leads its shards while the next controller fails them over to in-sync followers. It must stop
   * acknowledging writes and answering linearizable reads as their leader before another can take
   * over (it fences itself when its ZooKeeper connection is in doubt, well within the session; its
   * followers refuse it once they know the new leader epoch): no split brain, which the histories
   * check. Then the link heals, it finds its session gone, and it follows.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aLeaderCutOffFromZooKeeperButNotFromItsPeersNeverAnswersAsLeaderOnceReplaced(long seed) throws Exception {
    Map<String, PartitionProxy> proxies = new java.util.LinkedHashMap<>();
    try {
      List<String> nodes = List.of("n1", "n2", "n3");
      Map<String, String[]> commands = new java.util.LinkedHashMap<>();
      for (String n : nodes) {
        proxies.put(n, new PartitionProxy(zk));
        commands.put(n, nodeCommand(n, proxies.get(n).address()));
      }
      processes.startAll(commands);
      try (ShardwiseClient admin = client(nodes)) {
        admin.createTable("hist", REPLICATED);
      }
      SplittableRandom random = new SplittableRandom(seed);
      checkedRun("replicas-partition-leader", seed, Duration.ofSeconds(22), REPLICATED, () -> {
        Thread.sleep(2_000 + random.nextInt(2_000));
        String victim = controller();
        Struck struck = Struck.now(victim);
        long healAt = System.nanoTime() + Duration.ofMillis(6_000 + random.nextInt(3_000)).toNanos();
        proxies.get(victim).partition();
        // The partition is real: the victim's session expires and every shard it led gets a new
        // leader while it runs on, still reachable by its peers and the clients.
        io.shardwise.core.map.NodeId cut = io.shardwise.core.map.NodeId.of(victim);
        try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
          org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
              .until(() -> admin.syncedMap().tables().values().stream().allMatch(t -> t.shards().stream().noneMatch(a -> a.owner().equals(cut))));
        }
        System.out.printf("FAILED-OVER scenario=replicas-partition-leader seed=%d after_ms=%d%n", seed,
            (System.nanoTime() - struck.back()) / 1_000_000);
        Thread.sleep(Math.max(1_000, (healAt - System.nanoTime()) / 1_000_000)); // a while with two leaders' worth of belief
        proxies.get(victim).heal();
        return struck;
      });
    } finally {
      proxies.values().forEach(PartitionProxy::close);
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
    checkedRun("pause-owner", seed, Duration.ofSeconds(18), () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      processes.pause(victim, Duration.ofMillis(1_000 + random.nextInt(6_000)));
      return Struck.now(victim);
    });
  }

  /**
   * An owner killed and started again with a typo in {@code --zk}: first against an empty
   * ZooKeeper, then against one holding another cluster. Both times it must refuse to start, name
   * both clusters and delete nothing; started against its own ZooKeeper it serves every key it had,
   * and its trash is empty.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void anOwnerRestartedAgainstTheWrongZooKeeperRefusesAndDeletesNothing(long seed) throws Exception {
    List<String> nodes = startThreeNodesWithTables("hist");
    SplittableRandom random = new SplittableRandom(seed);
    String victim = nodes.get(random.nextInt(nodes.size()));
    String empty = startZooKeeper("zk-empty");
    String other = startZooKeeper("zk-other");
    processes.start("m1", nodeCommand("m1", other)); // cluster B: its own id, its own map
    checkedRun("wrong-zookeeper", seed, Duration.ofSeconds(20), () -> {
      Thread.sleep(2_000 + random.nextInt(2_000));
      processes.kill9(victim);
      ServerProcesses.Result onEmpty = processes.run(nodeCommand(victim, empty));
      assertThat(onEmpty.exit()).as(onEmpty.out() + onEmpty.err()).isNotZero();
      assertThat(onEmpty.out() + onEmpty.err()).contains("holds no cluster");
      ServerProcesses.Result onOther = processes.run(nodeCommand(victim, other));
      assertThat(onOther.exit()).as(onOther.out() + onOther.err()).isNotZero();
      assertThat(onOther.out() + onOther.err()).contains("holds cluster");
      startNode(victim);
      return Struck.now(victim);
    });
    ServerProcesses.Result trash = processes.cli(zk, "node", "trash", "list", "--node", victim);
    assertThat(trash.exit()).as(trash.err()).isZero();
    assertThat(trash.out()).contains("the trash is empty");
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theSourceOfAMoveKilledMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    faultInAMove(seed, "kill-move-source", (moving, records, random) -> killAndRestart(moving.getFrom()));
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void theDestinationOfAMoveKilledMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    faultInAMove(seed, "kill-move-destination", (moving, records, random) -> killAndRestart(moving.getTo()));
  }

  /**
   * The balancer's leader killed while it drives a move (it may also be the move's source or
   * destination): the move's call is cancelled with it, and the next leader must find the move
   * marked as moving and settle it from the map.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void theBalancerLeaderKilledMidMoveLosesNoAcknowledgedWriteAndTheMoveIsSettled(long seed) throws Exception {
    faultInAMove(seed, "kill-balancer-leader", (moving, records, random) -> {
      String leader = records.leader().orElseThrow(() -> new AssertionError("a move is running but no balancer leader is registered"));
      return killAndRestart(leader);
    });
  }

  /**
   * ZooKeeper stopped with SIGSTOP for 1 to 8 s in the middle of a move (copy, catch-up or
   * cutover): its compare-and-set may hang or time out with an unknown outcome, and sessions
   * longer than 4 s expire when it wakes up. The data path does not need ZooKeeper, so reads and
   * writes go on while it stands still.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void zooKeeperPausedMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    faultInAMove(seed, "pause-zookeeper", (moving, records, random) -> {
      processes.pause("zk", Duration.ofMillis(1_000 + random.nextInt(7_000)));
      return Struck.now(null);
    });
  }

  /**
   * The tables are {@code tokens} rings: the fourth node joins them (a map change that cuts the
   * ranges its tokens fall in, with the histories' writes going on), and the source of the first
   * move of its arcs is killed in the copy or catch-up. Afterwards the ring has the four members in
   * joining order, and every bulk key is where {@code simulate}'s ring of four nodes puts it once
   * the moves are done.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void theSourceOfARingArcKilledWhileANodeJoinsLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    faultInAMove(seed, "ring-join-kill-source", io.shardwise.client.TableSpec.builder("tokens").tokens(8).seed(seed).replicas(1).build(),
        false, (moving, records, random) -> killAndRestart(moving.getFrom()));
    try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (records.plans().stream().anyMatch(p -> !RebalanceRecords.finished(p.getState())) && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      io.shardwise.core.map.Table bulk = admin.syncedMap().table("bulk").orElseThrow();
      assertThat(bulk.layout().ringMembers()).containsExactly("n1", "n2", "n3", "n4");
      io.shardwise.core.partition.Partitioner lab = bulk.spec().create(4, io.shardwise.core.partition.KeySample.empty());
      for (int batch = 0; batch < 24; batch++) {
        byte[] pk = ("bulk-" + batch + "-0").getBytes(StandardCharsets.UTF_8);
        assertThat(bulk.shardFor(pk).owner().value()).as("owner of bulk-%d-0", batch).isEqualTo(bulk.layout().ringMembers().get(lab.nodeFor(pk)));
      }
    }
  }

  /**
   * Replicated tables (three replicas of each shard) on three nodes; a fourth joins and the
   * balancer moves replicas and leads to it, a replica at a time. Once the first replica move of
   * table {@code bulk} runs (its follower on n4 being built), {@code kill -9} of either the move's
   * source or the shard's leader (seeded), restarted at once: a leader's death fails the shard over
   * mid-build, and the move must go on or end cleanly. Nothing acknowledged may be lost, and the
   * move is settled. {@link IndexedDocs}' tables are written throughout (their shards move to n4
   * too, an async index's pending markers with them) and their indexes must be exact afterwards.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void theSourceOrLeaderOfAReplicaMoveKilledMidMoveLosesNoAcknowledgedWriteAndStaysLinearizable(long seed) throws Exception {
    faultInAMove(seed, "replicas-move-kill", REPLICATED, true, (moving, records, random) -> {
      String victim = moving.getFrom();
      if (random.nextBoolean()) {
        try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
          victim = admin.syncedMap().shard(moving.getTableId(), moving.getNumber()).map(s -> s.owner().value()).orElse(victim);
        }
      }
      return killAndRestart(victim);
    });
  }

  /**
   * Replicated neighbours apart merge while a node is killed: table {@code bulk} (3 replicas, 24 MB)
   * split in two, the upper half given another leader and a replica on a fourth node; in auto mode
   * the balancer gives the smaller half the other's replicas, one at a time, and its lead, then
   * merges them. Once the first of those replicas is added, after 0–0.8 s (somewhere in its build,
   * the lead's pass or the merge), {@code kill -9} of that half's leader or of another of its
   * replicas (seeded), restarted at once. Nothing acknowledged may be lost, every bulk key must be
   * readable, and the merge must be settled (done, or failed leaving two whole halves to merge later).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void replicatedNeighboursApartMergingWhileANodeIsKilledLoseNothing(long seed) throws Exception {
    startThreeNodesWithTables(REPLICATED, "hist");
    startNode("n4");
    List<Key> bulkKeys = new ArrayList<>();
    try (ShardwiseClient loader = client(List.of("n1", "n2", "n3", "n4"));
        Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.MANUAL).build());
      loader.createTable("bulk", io.shardwise.client.TableSpec.builder("hashrange").shards(1).replicas(3).build());
      bulkKeys.addAll(loadBulk(loader, seed));
      io.shardwise.client.ShardDescription whole = loader.describeTable("bulk", false).shards().get(0);
      io.shardwise.client.TableDescription halves = loader.splitShardAtHash("bulk", whole.number(), middle(whole));
      io.shardwise.core.map.Table split = admin.syncedMap().table("bulk").orElseThrow();
      List<Long> numbers = halves.shards().stream().map(io.shardwise.client.ShardDescription::number).toList();
      records.addResized(split.id(), numbers, new java.util.TreeSet<>(numbers)); // made as the balancer makes them: they may merge
      io.shardwise.core.map.ShardAssignment upper = split.shards().get(1);
      NodeId oldLeader = upper.owner();
      NodeId spare = Stream.of("n1", "n2", "n3", "n4").map(NodeId::of).filter(n -> !upper.isReplica(n)).findFirst().orElseThrow();
      admin.updateMap(m -> Optional.of(io.shardwise.core.map.ShardMapDelta.on(m)
          .add(new io.shardwise.core.map.ShardMapDelta.ChangeLeader(upper.id(), oldLeader, upper.inSync().get(0), false)).build()));
      // One change, so the shard never has more replicas than its factor (replica repair would remove one, maybe the spare).
      admin.updateMap(m -> Optional.of(io.shardwise.core.map.ShardMapDelta.on(m)
          .add(new io.shardwise.core.map.ShardMapDelta.AddFollower(upper.id(), spare))
          .add(new io.shardwise.core.map.ShardMapDelta.RemoveFollower(upper.id(), oldLeader)).build()));
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> admin.syncedMap().shard(split.id(), upper.id().number())
          .orElseThrow().inSync().contains(spare));

      checkedRun("replicas-merge-apart-kill", seed, Duration.ofSeconds(18), REPLICATED, () -> {
        records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0).setSplitBytes(1L << 30)
            .setSplitRps(100_000).setMergeSeconds(2).build());
        io.shardwise.core.map.ShardAssignment[] building = new io.shardwise.core.map.ShardAssignment[1];
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> {
          building[0] = admin.syncedMap().table("bulk").orElseThrow().shards().stream().filter(a -> a.replicas().size() > 3).findFirst()
              .orElse(null);
          return building[0] != null;
        });
        SplittableRandom random = new SplittableRandom(seed);
        Thread.sleep(random.nextInt(800));
        List<NodeId> replicas = building[0].replicas();
        String victim = random.nextBoolean() ? building[0].owner().value() : replicas.get(1 + random.nextInt(replicas.size() - 1)).value();
        return killAndRestart(victim);
      });
      ResizeSettled settled = awaitMergeSettled(records, split.id(), Duration.ofSeconds(90));
      io.shardwise.core.map.Table after = admin.syncedMap().table("bulk").orElseThrow();
      System.out.println("MERGE-APART seed=" + seed + " state=" + settled.state() + " shards=" + after.shards().size() + " error="
          + settled.error());
      assertThat(after.shards()).as("one merged shard, or the two halves").hasSizeBetween(1, 2);
      try (ShardwiseClient reader = client(List.of("n1", "n2", "n3", "n4"))) {
        for (Key k : bulkKeys) {
          assertThat(reader.get("bulk", k)).as(new String(k.partitionKey(), StandardCharsets.UTF_8)).isPresent();
        }
      }
    }
  }

  private record ResizeSettled(io.shardwise.proto.v1.ResizeRecord.State state, String error) {}

  /** The first merge of the table's shards once it is settled (done, failed, skipped or cancelled). */
  private static ResizeSettled awaitMergeSettled(RebalanceRecords records, long tableId, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      for (PlanRecord p : records.plans()) {
        for (io.shardwise.proto.v1.ResizeRecord r : p.getResizesList()) {
          if (r.getTableId() == tableId && r.getKind() == io.shardwise.proto.v1.ResizeRecord.Kind.MERGE
              && r.getState() != io.shardwise.proto.v1.ResizeRecord.State.WAITING) {
            return new ResizeSettled(r.getState(), r.getError());
          }
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError("no merge of table " + tableId + " was settled within " + timeout);
  }

  /** One transfer as its client saw it: what it moved, and the outcome it was answered (EXCEPTION: none). */
  private record Transfer(String id, int from, int to, long amount, String outcome) {}

  private static final int ACCOUNTS = 8;
  private static final long OPENING = 1_000;

  private static Key account(int i) {
    return Key.of("acct-" + i);
  }

  private static byte[] balance(long v) {
    return java.nio.ByteBuffer.allocate(8).putLong(v).array();
  }

  private static long balanceOf(io.shardwise.client.Versioned v) {
    return java.nio.ByteBuffer.wrap(v.value()).getLong();
  }

  /**
   * Transfers between accounts on every node's shards (3 replicas, 2 in sync), each a transaction
   * that also writes a row of its own, while one node is killed with {@code kill -9} and restarted:
   * the coordinators on it die at whatever step they were, and the shards it led fail over with the
   * intents and records they hold. Read transactions of every account run throughout and must each
   * see the opening total. Afterwards, with every lock resolved by the reads themselves: a transfer's
   * row exists exactly if it committed — so every transfer answered COMMITTED is there, every one
   * answered CANCELLED or ABORTED is not — and each account holds its opening balance plus exactly
   * the committed transfers in and out of it. A transfer half applied, or an acknowledged one lost,
   * fails one of these.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aNodeKilledDuringTransfersLeavesEveryTransferWholeOrUndone(long seed) throws Exception {
    transfersUnder(seed, "txn-kill", (nodes, random) -> {
      Thread.sleep(2_000 + random.nextInt(3_000)); // the fault lands at a seeded moment
      return "killed=" + killAndRestart(nodes.get(random.nextInt(nodes.size()))).node();
    });
  }

  /**
   * The same transfers while the bank's shards change under them: a random shard split twice and
   * its halves merged again (every replica splits, the intents and records they hold go with their
   * keys), a fourth node joining so the balancer moves replicas and leads of the bank to it, and
   * {@code kill -9} of the source of the first such move (or, if it is over already, of a random
   * node) at a seeded moment in it. The same checks: no transfer half applied or lost, every read
   * transaction sees the opening total.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Tag(CAMPAIGN)
  void transfersThroughSplitsMovesAndAKillStayWholeOrUndone(long seed) throws Exception {
    try (Coordinator zkAdmin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      RebalanceRecords records = new RebalanceRecords(zkAdmin);
      transfersUnder(seed, "txn-split-move-kill", (nodes, random) -> {
        Thread.sleep(1_000 + random.nextInt(1_000));
        try (ShardwiseClient admin = client(nodes)) {
          io.shardwise.client.TableDescription t = admin.describeTable("bank", false);
          int position = random.nextInt(t.shards().size());
          io.shardwise.client.ShardDescription shard = t.shards().get(position);
          t = admin.splitShardAtHash("bank", shard.number(), middle(shard));
          io.shardwise.client.ShardDescription upper = t.shards().get(position + 1);
          t = admin.splitShardAtHash("bank", upper.number(), middle(upper));
          admin.mergeShards("bank", t.shards().get(position).number());
        }
        records.updateSettings(b -> b.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0).setMaxMovesPerNode(1).build());
        startNode("n4");
        String victim = nodes.get(random.nextInt(nodes.size()));
        String struck = "none";
        long deadline = System.nanoTime() + 15_000_000_000L;
        search:
        while (System.nanoTime() < deadline) {
          for (PlanRecord p : records.plans()) {
            for (MoveRecord m : p.getMovesList()) {
              if (m.getState() == MoveRecord.State.MOVING && m.getTable().equals("bank")) {
                victim = m.getFrom();
                struck = "bank/" + m.getNumber() + (m.getLeadership() ? "-lead" : "-replica");
                break search;
              }
            }
          }
          Thread.sleep(20);
        }
        Thread.sleep(random.nextInt(300));
        return "killed=" + killAndRestart(victim).node() + " move=" + struck;
      });
    }
  }

  /** What strikes the cluster while the transfers run, on nodes n1..n3; says what it did, for the run's line. */
  @FunctionalInterface
  private interface TransferFault {
    String inject(List<String> nodes, SplittableRandom random) throws Exception;
  }

  private void transfersUnder(long seed, String scenario, TransferFault fault) throws Exception {
    List<String> nodes = startThreeNodesWithTables(REPLICATED, "bank");
    List<String> seeds = new ArrayList<>();
    for (String n : nodes) {
      seeds.add(processes.address(n));
    }
    try (ShardwiseClient admin = client(nodes)) {
      for (int i = 0; i < ACCOUNTS; i++) {
        admin.put("bank", account(i), balance(OPENING));
      }
    }
    SplittableRandom random = new SplittableRandom(seed);
    java.util.concurrent.ConcurrentLinkedQueue<Transfer> transfers = new java.util.concurrent.ConcurrentLinkedQueue<>();
    java.util.concurrent.atomic.AtomicReference<String> broken = new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicLong snapshots = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    String struck = "";
    List<ShardwiseClient> clients = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < 3; w++) {
      ShardwiseClient c = ShardwiseClient.builder().seeds(seeds).build();
      clients.add(c);
      SplittableRandom r = random.split();
      int worker = w;
      threads.add(new Thread(() -> {
        for (int n = 0; !stop.get(); n++) {
          int from = r.nextInt(ACCOUNTS);
          int to = (from + 1 + r.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
          long amount = 1 + r.nextInt(50);
          String id = "t" + worker + "-" + n;
          String outcome;
          try {
            io.shardwise.client.Versioned a = c.get("bank", account(from)).orElseThrow();
            io.shardwise.client.Versioned b = c.get("bank", account(to)).orElseThrow();
            outcome = c.transact(List.of(
                io.shardwise.core.txn.TxnItem.put("bank", account(from), balance(balanceOf(a) - amount)).onlyIf(a.version()),
                io.shardwise.core.txn.TxnItem.put("bank", account(to), balance(balanceOf(b) + amount)).onlyIf(b.version()),
                io.shardwise.core.txn.TxnItem.put("bank", Key.of("xfer-" + id), (from + ">" + to + ":" + amount).getBytes(StandardCharsets.UTF_8))
                    .onlyIf(io.shardwise.core.txn.TxnItem.ABSENT)), id).status().name();
          } catch (RuntimeException e) {
            outcome = "EXCEPTION";
          }
          transfers.add(new Transfer(id, from, to, amount, outcome));
        }
      }, "transfers-" + w));
    }
    ShardwiseClient auditor = ShardwiseClient.builder().seeds(seeds).build();
    clients.add(auditor);
    threads.add(new Thread(() -> {
      List<io.shardwise.core.txn.TableKey> keys = new ArrayList<>();
      for (int i = 0; i < ACCOUNTS; i++) {
        keys.add(new io.shardwise.core.txn.TableKey("bank", account(i)));
      }
      while (!stop.get()) {
        try {
          long total = 0;
          for (Optional<io.shardwise.client.Versioned> v : auditor.transactGet(keys)) {
            total += balanceOf(v.orElseThrow());
          }
          snapshots.incrementAndGet();
          if (total != ACCOUNTS * OPENING) {
            broken.compareAndSet(null, "a read transaction saw a total of " + total);
          }
        } catch (RuntimeException e) {
          // a node down: the next read goes elsewhere
        }
      }
    }, "auditor"));
    try {
      threads.forEach(Thread::start);
      struck = fault.inject(nodes, random);
      Thread.sleep(6_000);
      stop.set(true);
      for (Thread t : threads) {
        t.join(60_000);
      }
    } finally {
      stop.set(true);
      clients.forEach(ShardwiseClient::close);
    }

    // Past every transaction's deadline: an undecided one is aborted by the first read that meets
    // it, so a coordinator still at work can no longer commit what the check below read as absent.
    Thread.sleep(TXN_TIMEOUT.toMillis() + 500);
    long started = System.nanoTime();
    long[] expected = new long[ACCOUNTS];
    Arrays.fill(expected, OPENING);
    Map<String, Long> outcomes = new java.util.TreeMap<>();
    List<String> wrong = new ArrayList<>();
    try (ShardwiseClient checker = client(nodes)) {
      for (Transfer t : transfers) {
        outcomes.merge(t.outcome(), 1L, Long::sum);
        boolean applied = checker.get("bank", Key.of("xfer-" + t.id())).isPresent();
        if (applied) {
          expected[t.from()] -= t.amount();
          expected[t.to()] += t.amount();
        }
        if (applied ? t.outcome().equals("CANCELLED") || t.outcome().equals("ABORTED") : t.outcome().equals("COMMITTED")) {
          wrong.add(t + (applied ? " was applied" : " is missing"));
        }
      }
      for (int i = 0; i < ACCOUNTS; i++) {
        long actual = balanceOf(checker.get("bank", account(i)).orElseThrow());
        if (actual != expected[i]) {
          wrong.add("account " + i + " holds " + actual + ", its committed transfers make " + expected[i]);
        }
      }
    }
    long checkMillis = (System.nanoTime() - started) / 1_000_000;
    System.out.println("FAULT-RUN scenario=" + scenario + " seed=" + seed + " operations=" + transfers.size() + " acknowledged="
        + outcomes.getOrDefault("COMMITTED", 0L) + " unknown=" + (outcomes.getOrDefault("UNKNOWN", 0L) + outcomes.getOrDefault("EXCEPTION", 0L))
        + " violations=" + (wrong.isEmpty() && broken.get() == null ? 0 : 1) + " outcomes=" + outcomes.toString().replace(" ", "")
        + " read_transactions=" + snapshots.get() + " check_ms=" + checkMillis + " " + struck);
    assertThat(broken.get()).isNull();
    assertThat(wrong).isEmpty();
    assertThat(outcomes.getOrDefault("COMMITTED", 0L)).as("transfers committed").isPositive();
    assertThat(snapshots.get()).as("read transactions").isPositive();
  }

  private Struck killAndRestart(String node) throws Exception {
    processes.kill9(node);
    startNode(node); // at once, on the same data directory: waits out its old session
    return Struck.now(node);
  }

  /** What a move scenario does to the cluster once the first move of table {@code bulk} runs. */
  @FunctionalInterface
  private interface MoveFault {
    Struck inject(MoveRecord moving, RebalanceRecords records, SplittableRandom random) throws Exception;
  }

  /**
   * A fourth node joins under load, and {@code fault} strikes in the copy or catch-up of the first
   * move of a 24 MB table. Afterwards: the histories are linearizable, every bulk key is there, and
   * the struck move is settled (not left moving) — marked done only if the map shows its cutover.
   */
  private void faultInAMove(long seed, String scenario, MoveFault fault) throws Exception {
    faultInAMove(seed, scenario, HASH_RANGES, false, fault);
  }

  /**
   * {@link #faultInAMove}, the tables made as {@code spec}; with {@code indexedDocs}, {@link
   * IndexedDocs}' tables are written throughout too (their shards, with the async index's pending
   * markers, move to the new node with the others') and their indexes checked at the end.
   */
  private void faultInAMove(long seed, String scenario, io.shardwise.client.TableSpec spec, boolean indexedDocs, MoveFault fault)
      throws Exception {
    List<String> nodes = startThreeNodesWithTables(spec, "hist", "bulk");
    // Enough data that a throttled move takes seconds: the fault lands inside one.
    List<Key> bulkKeys;
    try (ShardwiseClient loader = client(nodes)) {
      bulkKeys = loadBulk(loader, seed);
    }
    try (Coordinator admin = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10));
        IndexedDocs docs = indexedDocs ? new IndexedDocs(seedAddresses(), seed) : null) {
      RebalanceRecords records = new RebalanceRecords(admin);
      records.updateSettings(s -> s.toBuilder().setMode(BalancerSettings.Mode.AUTO).setAutoMaxFraction(1.0)
          .setBandwidthBytesPerSecond(2L << 20).setMaxMovesPerNode(1).build());
      MoveRecord[] moving = new MoveRecord[1];
      checkedRun(scenario, seed, Duration.ofSeconds(18), () -> { // the fault lands about 5-10 s in; recovery under load follows
        startNode("n4"); // joins: the balancer moves shards of both tables to it
        moving[0] = awaitMoving(records, Duration.ofSeconds(30));
        SplittableRandom random = new SplittableRandom(seed);
        Thread.sleep(random.nextInt(1_500)); // somewhere in the copy or the catch-up
        return fault.inject(moving[0], records, random);
      });
      try (ShardwiseClient reader = client(List.of("n1", "n2", "n3", "n4"))) {
        for (Key k : bulkKeys) {
          assertThat(reader.get("bulk", k)).as(new String(k.partitionKey(), StandardCharsets.UTF_8)).isPresent();
        }
      }
      MoveRecord settled = awaitSettled(records, moving[0], Duration.ofSeconds(60));
      if (settled.getState() == MoveRecord.State.DONE) {
        long epoch = admin.syncedMap().shard(settled.getTableId(), settled.getNumber()).orElseThrow().epoch();
        assertThat(epoch).as("a move marked done has cut over: the shard's epoch in the map is past the one it moved at").isGreaterThan(
            settled.getShardEpoch());
      }
      if (docs != null) {
        docs.stopAndCheck(scenario, seed, 4);
      }
    }
  }

  /** Writes table {@code bulk}'s 24,000 rows of 1 KiB (24 MB: a throttled move of it takes seconds); returns every hundredth key. */
  private static List<Key> loadBulk(ShardwiseClient loader, long seed) {
    byte[] filler = new byte[1024];
    new SplittableRandom(seed).nextBytes(filler);
    List<Key> sampled = new ArrayList<>();
    for (int batch = 0; batch < 24; batch++) {
      List<Map.Entry<Key, byte[]>> entries = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        Key k = Key.of(("bulk-" + batch + "-" + i).getBytes(StandardCharsets.UTF_8));
        entries.add(new AbstractMap.SimpleEntry<>(k, filler));
        if (i % 100 == 0) {
          sampled.add(k);
        }
      }
      loader.batchPut("bulk", entries);
    }
    return sampled;
  }

  /** The record of {@code move} once it is done, failed or cancelled. */
  private static MoveRecord awaitSettled(RebalanceRecords records, MoveRecord move, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    MoveRecord last = move;
    while (System.nanoTime() < deadline) {
      for (PlanRecord p : records.plans()) {
        for (MoveRecord m : p.getMovesList()) {
          if (m.getTableId() == move.getTableId() && m.getNumber() == move.getNumber() && m.getShardEpoch() == move.getShardEpoch()) {
            last = m;
            if (m.getState() == MoveRecord.State.DONE || m.getState() == MoveRecord.State.FAILED
                || m.getState() == MoveRecord.State.CANCELLED) {
              return m;
            }
          }
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError("the move of bulk/" + move.getNumber() + " was not settled within " + timeout + "; last record: " + last);
  }

  private static MoveRecord awaitMoving(RebalanceRecords records, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      for (PlanRecord p : records.plans()) {
        for (MoveRecord m : p.getMovesList()) {
          if (m.getState() == MoveRecord.State.MOVING && m.getTable().equals("bulk") && !m.getLeadership()) {
            return m;
          }
        }
      }
      Thread.sleep(50);
    }
    throw new AssertionError("no move of table bulk started within " + timeout);
  }
}
