package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.bench.Bench;
import io.shardwise.bench.BenchReport;
import io.shardwise.bench.ClusterTraffic;
import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.bench.RedisCluster;
import io.shardwise.bench.RedisClusterTarget;
import io.shardwise.bench.RocksDbTarget;
import io.shardwise.bench.ShardwiseTarget;
import io.shardwise.bench.Target;
import io.shardwise.bench.Workload;
import io.shardwise.client.Routing;
import io.shardwise.client.NearCacheStats;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise bench}: YCSB-style workloads against a cluster, with baselines in the same run. */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Run a YCSB core workload against a Shardwise cluster, with RocksDB and Redis Cluster baselines if asked.",
        "Load phase, warm-up and measured run; --baseline runs the same workload against one in-process RocksDB and/or a",
        "Redis Cluster in the same run, so results read as ratios.",
        "Reports throughput, latency percentiles per operation (HdrHistogram), errors by kind, and how evenly",
        "requests spread over shards and nodes."},
    footer = {"", "Examples:",
        "  shardwise bench --dev --workload a --records 100000 --duration 30s",
        "  shardwise bench --dev --workload c --baseline rocksdb --baseline redis-cluster -o json",
        "  shardwise bench --dev --during rebalance --workload b --duration 20s",
        "  shardwise bench --zk 127.0.0.1:2181 --via router --workload b"})
final class BenchCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--workload", paramLabel = "W", defaultValue = "a", description = "a, b, c, d, e or f (YCSB's core workloads). Default: ${DEFAULT-VALUE}.")
  String workload;

  @Option(names = "--records", paramLabel = "N", defaultValue = "100000", description = "Records loaded before the run. Default: ${DEFAULT-VALUE}.")
  long records;

  @Option(names = "--operations", paramLabel = "N", description = "Operations in the measured run (instead of --duration).")
  Long operations;

  @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "30s", description = "Length of the measured run. Default: ${DEFAULT-VALUE}.")
  String duration;

  @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "10s",
      description = "Unmeasured warm-up before the run (the JIT needs ~10 s here). Default: ${DEFAULT-VALUE}.")
  String warmup;

  @Option(names = "--threads", paramLabel = "T", defaultValue = "16", description = "Concurrent callers. Default: ${DEFAULT-VALUE}.")
  int threads;

  @Option(names = "--value-size", paramLabel = "BYTES", defaultValue = "100", description = "Bytes per value. Default: ${DEFAULT-VALUE}.")
  int valueSize;

  @Option(names = "--distribution", paramLabel = "D", description = "zipfian (constant 0.99), uniform, latest, or hotkey (one key takes half the operations, the rest zipfian). Default: the workload's (d: latest, others zipfian).")
  String distribution;

  @Option(names = "--via", paramLabel = "MODE", defaultValue = "client", description = "Routing: client (shard-aware), router or node. Default: ${DEFAULT-VALUE}.")
  String via;

  @Option(names = "--zk", paramLabel = "HOSTS", description = "A running cluster's ZooKeeper. Default: $SHARDWISE_ZK or 127.0.0.1:2181.")
  String zk;

  @Option(names = "--router", paramLabel = "HOST:PORT", description = "A running cluster's router (implies --via router).")
  String router;

  @Option(names = "--dev", description = "Start an embedded cluster for the run (in this process) and stop it after.")
  boolean dev;

  @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "--dev: nodes. Default: ${DEFAULT-VALUE}.")
  int nodes;

  @Option(names = "--shards", paramLabel = "N", description = "Shards of the benchmark table. Default: 4 per node.")
  Integer shards;

  @Option(names = "--table", paramLabel = "NAME", defaultValue = ShardwiseTarget.TABLE,
      description = "The benchmark's table; it must not exist (the bench makes it, and never drops data). Default: ${DEFAULT-VALUE}.")
  String table;

  @Option(names = "--baseline", paramLabel = "NAME", description = "rocksdb or redis-cluster; repeatable.")
  List<String> baselines = new ArrayList<>();

  @Option(names = "--redis-masters", paramLabel = "N", defaultValue = "3", description = "redis-cluster: masters. Default: ${DEFAULT-VALUE}.")
  int redisMasters;

  @Option(names = "--during", paramLabel = "EVENT", description = "rebalance (with --dev): add a node after a third of the run, approve its plan, and report before/during/after.")
  String during;

  @Option(names = "--seed", paramLabel = "X", defaultValue = "1", description = "Seed for choices and values. Default: ${DEFAULT-VALUE}.")
  long seed;

  @Option(names = "--near-cache", paramLabel = "TTL",
      description = "Give the benchmark's client a near-cache of this TTL (at most 10s; up to " + NEAR_CACHE_KEYS + " keys): reads of hot keys"
          + " are answered in the client, and may miss other writers' updates for up to the TTL. Off by default.")
  String nearCache;

  static final int NEAR_CACHE_KEYS = 100_000;

  @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
  OutputFormat output;

  @Override
  public Integer call() throws Exception {
    Workload w = Workload.byName(workload);
    Bench.Options options = new Bench.Options(w, records, operations == null ? 0 : operations,
        operations == null ? Durations.parse("--duration", duration) : Duration.ZERO, threads, valueSize,
        distribution == null ? w.defaultDistribution() : Workload.Distribution.byName(distribution),
        Durations.parse("--warmup", warmup), seed);
    for (String b : baselines) {
      if (!b.equals("rocksdb") && !b.equals("redis-cluster")) {
        throw new IllegalArgumentException("--baseline must be rocksdb or redis-cluster, not '" + b + "'");
      }
    }
    boolean rebalance = during != null;
    if (rebalance && !during.equals("rebalance")) {
      throw new IllegalArgumentException("--during knows only: rebalance");
    }
    if (rebalance && !dev) {
      throw new IllegalArgumentException("--during rebalance needs --dev (it adds a node to the cluster it started)");
    }
    if (rebalance && operations != null) {
      throw new IllegalArgumentException("--during rebalance runs by --duration (a third before the move, the move, a third after)");
    }
    if (dev && (zk != null || router != null)) {
      throw new IllegalArgumentException("--dev starts its own cluster; leave out --zk and --router");
    }
    Routing routing = router != null ? Routing.ROUTER : ClusterOptions.routing(via);
    Duration nearCacheTtl = nearCache == null ? null : Durations.parse("--near-cache", nearCache);
    if (nearCacheTtl != null) {
      ShardwiseClient.builder().nearCache(nearCacheTtl, NEAR_CACHE_KEYS); // its limits, named before anything starts
    }
    NearCacheStats nearCacheStats = null;

    PrintWriter out = spec.commandLine().getOut();
    Path work = Files.createTempDirectory("shardwise-bench");
    List<Bench.Result> results = new ArrayList<>();
    ClusterTraffic.Spread spread;
    ObjectNode rebalanceReport = null;
    try {
      EmbeddedCluster cluster = dev ? new EmbeddedCluster(work.resolve("cluster"), nodes) : null;
      try {
        String zkConnect = dev ? cluster.zk() : ClusterOptions.zkOrDefault(zk);
        // Its own session, closed before a --dev cluster stops (the command line's would outlive it).
        try (Coordinator coordinator = router != null ? null : ClusterOptions.connectCoordinator(zkConnect); Peers peers = new Peers(16 << 20)) {
          List<String> seeds = new ArrayList<>();
          if (router != null) {
            seeds.add(router);
          } else if (routing == Routing.ROUTER) {
            coordinator.liveRoutersNow().values().forEach(n -> seeds.add(n.getAddress()));
          } else {
            coordinator.liveNodesNow().values().forEach(n -> seeds.add(n.getAddress()));
          }
          if (seeds.isEmpty()) {
            throw new IllegalStateException("no live " + (routing == Routing.ROUTER ? "router" : "node") + " in ZooKeeper at " + zkConnect);
          }
          int nodeCount = coordinator == null ? 3 : coordinator.liveNodesNow().size();
          Bench bench = new Bench(options);
          ShardwiseClient.Builder clientBuilder = ShardwiseClient.builder().routing(routing).seeds(seeds);
          if (nearCacheTtl != null) {
            clientBuilder.nearCache(nearCacheTtl, NEAR_CACHE_KEYS);
          }
          ShardwiseClient benchClient = clientBuilder.build();
          try (Target target = new ShardwiseTarget(benchClient, table, shards != null ? shards : 4 * Math.max(1, nodeCount))) {
            Bench.Load load = bench.load(target, progress("shardwise"));
            // Requests per shard are counted from the end of the warm-up to the end of the run.
            AtomicReference<ClusterTraffic.Reading> before = new AtomicReference<>();
            Bench.Listener shown = progress("shardwise");
            Bench.Listener listener = new Bench.Listener() {
              @Override
              public void progress(String phase, double seconds, long ops, double rate, double p99, long errors) {
                shown.progress(phase, seconds, ops, rate, p99, errors);
              }

              @Override
              public void measuring() {
                if (coordinator != null) {
                  before.set(ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table));
                }
              }
            };
            Bench.Result result;
            if (rebalance) {
              RebalanceDriver driver = new RebalanceDriver(cluster, coordinator, options);
              driver.start();
              result = bench.run(target, load, driver::phase, listener);
              rebalanceReport = driver.report(result);
            } else {
              result = bench.run(target, load, () -> "run", listener);
            }
            results.add(result);
            spread = before.get() == null ? null
                : ClusterTraffic.between(before.get(), ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table));
            nearCacheStats = benchClient.nearCacheStats().orElse(null);
          }
        }
      } finally {
        if (cluster != null) {
          cluster.close(); // before the baselines: they get the machine to themselves
        }
      }
      for (String b : baselines) {
        results.add(runBaseline(b, options, work));
      }
    } finally {
      deleteTree(work);
    }

    if (System.console() != null) {
      spec.commandLine().getErr().println(); // end the progress line
    }
    if (output == OutputFormat.json) {
      ObjectNode root = BenchReport.json(results.get(0), spread);
      root.put("via", routing.name().toLowerCase(Locale.ROOT));
      if (nearCacheStats != null) {
        root.putObject("nearCache").put("ttl", nearCache).put("hits", nearCacheStats.hits()).put("misses", nearCacheStats.misses())
            .put("hitRate", BenchReport.round(nearCacheStats.hitRate()));
      }
      if (rebalanceReport != null) {
        root.set("rebalance", rebalanceReport);
      }
      if (results.size() > 1) {
        ObjectNode others = root.putObject("baselines");
        ObjectNode ratios = root.putObject("ratios");
        for (Bench.Result r : results.subList(1, results.size())) {
          others.set(r.target(), BenchReport.json(r, null));
          ratios.putObject(r.target())
              .put("throughput", BenchReport.round(results.get(0).run().throughput() / Math.max(1e-9, r.run().throughput())))
              .put("p99", BenchReport.round(results.get(0).run().all().p99() / Math.max(1, r.run().all().p99())));
        }
      }
      Output.json(out, root);
    } else {
      BenchReport.text(out, results, spread);
      if (nearCacheStats != null) {
        out.printf(Locale.ROOT, "near-cache (TTL %s): %.1f%% of reads answered in the client (%,d hits, %,d misses)%n", nearCache,
            100 * nearCacheStats.hitRate(), nearCacheStats.hits(), nearCacheStats.misses());
      }
      if (rebalanceReport != null) {
        ObjectNode r = rebalanceReport;
        out.println(r.has("plan")
            ? String.format(Locale.ROOT, "rebalance: plan %s %s, %d moves, %.2f MB (%,d keys) in %.2f s = %.2f MB/s, longest write pause %.1f ms",
                r.get("plan").asText(), r.get("state").asText(), r.get("moves").asLong(), r.get("movedBytes").asLong() / 1e6,
                r.get("movedKeys").asLong(), r.get("moveSeconds").asDouble(), r.get("moveMBps").asDouble(), r.get("longestWritePauseMs").asDouble())
            : "rebalance: " + r);
      }
    }
    out.flush();
    boolean rebalanceFailed = rebalanceReport != null && (rebalanceReport.has("error") || !rebalanceReport.has("plan"));
    return results.get(0).errorCount() == 0 && !rebalanceFailed ? Main.EXIT_OK : Main.EXIT_FAILURE;
  }

  private Bench.Result runBaseline(String name, Bench.Options options, Path work) {
    Bench bench = new Bench(options);
    if (name.equals("rocksdb")) {
      try (Target target = new RocksDbTarget(work.resolve("rocksdb"))) {
        Bench.Load load = bench.load(target, progress(name));
        return bench.run(target, load, () -> "run", progress(name));
      }
    }
    try (RedisCluster redis = RedisCluster.start(work.resolve("redis"), redisMasters);
        Target target = new RedisClusterTarget(redis.masters(), options.threads())) {
      Bench.Load load = bench.load(target, progress(name));
      return bench.run(target, load, () -> "run", progress(name));
    }
  }

  /** A progress line on stderr, rewritten in place on a terminal, one line a second otherwise. */
  private Bench.Listener progress(String target) {
    boolean terminal = System.console() != null;
    PrintWriter err = spec.commandLine().getErr();
    return (phase, seconds, ops, rate, p99, errors) -> {
      String line = String.format(Locale.ROOT, "%-13s %-7s %6.1f s %,12d ops %,10.0f ops/s%s%s", target, phase, seconds, ops, rate,
          p99 > 0 ? "  p99 " + BenchReport.ms(p99) + " ms" : "", errors > 0 ? "  errors " + errors : "");
      if (terminal) {
        err.print("\r" + line + "   ");
      } else {
        err.println(line);
      }
      err.flush();
    };
  }

  private static void deleteTree(Path dir) {
    try {
      io.shardwise.bench.Directories.delete(dir);
    } catch (IOException e) {
      System.err.println("shardwise bench: could not delete " + dir + ": " + e.getMessage());
    }
  }


  /**
   * Cuts a run into before / during / after a rebalance: after a third of --duration, a node joins,
   * the balancer suggests a plan, the driver approves it, and when the plan is done the run goes
   * on for another third.
   */
  private static final class RebalanceDriver {
    private final EmbeddedCluster cluster;
    private final Coordinator coordinator;
    private final Duration third;
    private final AtomicReference<String> phase = new AtomicReference<>("before");
    private final AtomicReference<PlanRecord> plan = new AtomicReference<>();
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    private final Duration warmup;

    RebalanceDriver(EmbeddedCluster cluster, Coordinator coordinator, Bench.Options options) {
      this.cluster = cluster;
      this.coordinator = coordinator;
      this.third = options.duration().dividedBy(3);
      this.warmup = options.warmup();
    }

    String phase() {
      return phase.get();
    }

    void start() {
      Thread t = new Thread(() -> {
        try {
          Thread.sleep(warmup.toMillis() + third.toMillis());
          Rebalancing rebalancing = new Rebalancing(coordinator);
          cluster.addNode();
          phase.set("during");
          String id = null;
          long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
          while (id == null) {
            for (PlanRecord p : rebalancing.records().plans()) {
              if (p.getState() == PlanRecord.State.PENDING && p.getResizesCount() == 0) { // the join's moves, not a split by load
                id = p.getId();
              }
            }
            if (id == null) {
              if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the balancer suggested no plan within 2 minutes");
              }
              Thread.sleep(100);
            }
          }
          rebalancing.approve(id);
          PlanRecord p;
          do {
            Thread.sleep(100);
            p = rebalancing.records().plan(id).orElseThrow();
          } while (!RebalanceRecords.finished(p.getState()));
          plan.set(p);
          phase.set("after");
          Thread.sleep(third.toMillis());
        } catch (Exception e) {
          failure.set(e);
        } finally {
          phase.set(null);
        }
      }, "bench-rebalance");
      t.setDaemon(true);
      t.start();
    }

    ObjectNode report(Bench.Result result) {
      ObjectNode o = Output.object();
      if (failure.get() != null) {
        o.put("error", failure.get().toString());
      }
      PlanRecord p = plan.get();
      for (Bench.Phase ph : result.phases()) {
        o.putObject(ph.name()).put("seconds", BenchReport.round(ph.seconds())).put("throughput", BenchReport.round(ph.throughput()))
            .put("p99", ph.all().p99()).put("p50", ph.all().p50());
      }
      if (p != null) {
        double seconds = (p.getFinishedMillis() - p.getStartedMillis()) / 1000.0;
        o.put("plan", p.getId()).put("state", Rebalancing.describe(p.getState()))
            .put("moves", p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.DONE).count())
            .put("movedBytes", p.getReportMovedBytes()).put("movedKeys", p.getReportMovedKeys())
            .put("moveSeconds", BenchReport.round(seconds))
            .put("moveMBps", BenchReport.round(seconds <= 0 ? 0 : p.getReportMovedBytes() / 1e6 / seconds))
            .put("longestWritePauseMs", BenchReport.round(p.getReportLongestPauseMicros() / 1000.0));
      }
      return o;
    }
  }
}
