package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.bench.Bench;
import io.shardwise.bench.QueryBench;
import io.shardwise.bench.BenchReport;
import io.shardwise.bench.ClusterTraffic;
import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.bench.RedisCluster;
import io.shardwise.bench.RedisClusterTarget;
import io.shardwise.bench.RocksDbTarget;
import io.shardwise.bench.ShardwiseTarget;
import io.shardwise.bench.Target;
import io.shardwise.bench.TxnBench;
import io.shardwise.bench.Workload;
import io.shardwise.client.Routing;
import io.shardwise.client.NearCacheStats;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.node.NodeConfig;
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
        "  shardwise bench --dev --during split --workload d --insert-order ordered --duration 60s",
        "  shardwise bench --zk 127.0.0.1:2181 --via router --workload b"})
final class BenchCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--workload", paramLabel = "W", defaultValue = "a",
      description = "a, b, c, d, e or f (YCSB's core workloads), k (counters), txn (what transactions cost: single-key puts, then"
          + " transactions of 1, 2, 4 and 8 shards, uniform and zipfian; --records accounts) or query (queries of JSON documents"
          + " without an index on tables of --query-shards shards; --records documents). Default: ${DEFAULT-VALUE}.")
  String workload;

  @Option(names = "--query-shards", paramLabel = "N,N...", split = ",", defaultValue = "3,6,12",
      description = "--workload query: the tables' shard counts, in order. Default: ${DEFAULT-VALUE}.")
  List<Integer> queryShards;

  @Option(names = "--query-mixes", paramLabel = "PCT,PCT...", split = ",", defaultValue = "99,90,50,10",
      description = "--workload query: read percentages of the mixed runs (queries and puts by the same threads) through each index, on"
          + " the table of the most shards; 0 runs none. Default: ${DEFAULT-VALUE}.")
  List<Integer> queryMixes;

  @Option(names = "--query-colors", paramLabel = "N", defaultValue = "20",
      description = "--workload query: distinct values of the queried field (a query matches 1 in N documents). Default: ${DEFAULT-VALUE}.")
  int queryColors;

  @Option(names = "--txn-spans", paramLabel = "N,N...", split = ",", defaultValue = "0,1,2,4,8",
      description = "--workload txn: what to run, in order; 0 is a single-key put, 1 a one-shard transaction, N a transaction of N shards."
          + " Default: ${DEFAULT-VALUE}.")
  List<Integer> txnSpans;

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

  @Option(names = "--strategy", paramLabel = "S", defaultValue = "range",
      description = "The benchmark table's partitioning: range (split evenly over the key space) or hashrange. Default: ${DEFAULT-VALUE}.")
  String strategy;

  @Option(names = "--replicas", paramLabel = "R", defaultValue = "1",
      description = "Replicas of each shard of the benchmark table (writes acknowledged by a majority in sync). Default: ${DEFAULT-VALUE}.")
  int replicas;

  @Option(names = "--table", paramLabel = "NAME", defaultValue = ShardwiseTarget.TABLE,
      description = "The benchmark's table; it must not exist (the bench makes it, and never drops data). Default: ${DEFAULT-VALUE}.")
  String table;

  @Option(names = "--baseline", paramLabel = "NAME", description = "rocksdb or redis-cluster; repeatable.")
  List<String> baselines = new ArrayList<>();

  @Option(names = "--redis-masters", paramLabel = "N", defaultValue = "3", description = "redis-cluster: masters. Default: ${DEFAULT-VALUE}.")
  int redisMasters;

  @Option(names = "--redis-replicas", paramLabel = "R", defaultValue = "-1",
      description = "redis-cluster: replicas per master, 0 to 4 (Redis replicates asynchronously). Default: --replicas minus 1.")
  int redisReplicas;

  @Option(names = "--during", paramLabel = "EVENT", description = {"With --dev, cut the run into before / during / after an event a third of the way in:",
      "rebalance: a node joins and its plan is approved;",
      "split: the table starts as one range shard and the balancer (auto mode) starts splitting it by size and load and spreading the shards;",
      "node-loss: (--replicas 2 or more, --nodes above it) a node holding replicas stops for good; the balancer's leader fails its",
      "shards over and rebuilds its replicas on the others (absence grace 1 s); 'during' ends when every shard is whole and in sync again;",
      "isolate: the hottest key gets a shard of its own on the least-loaded node (shardwise hotspots fix --approve);",
      "salt: the hottest key, a counter (--workload k), is salted into --salt-fanout sub-keys (shardwise hotspots salt).",
      "Each phase reports how evenly requests spread over shards and nodes."})
  String during;

  @Option(names = "--salt-fanout", paramLabel = "N", description = "--during salt: sub-keys, 2 to 64. Default: as the balancer salts (4 per node).")
  Integer saltFanout;

  @Option(names = "--hot-key-sampling", paramLabel = "ON_OFF", defaultValue = "on",
      description = "--dev: on, or off to measure what sampling hot keys costs the request path (nothing is hot then). Default: ${DEFAULT-VALUE}.")
  String hotKeySampling;

  @Option(names = "--read-lease", paramLabel = "DURATION",
      description = "--dev: the nodes' read lease (0: off, every leader read asks its followers; as `shardwise node --read-lease`). "
          + "Default: the nodes' default.")
  String readLease;

  @Option(names = "--sync-writes",
      description = "--dev: the nodes fsync their write-ahead log on every write (as `shardwise node --sync-writes`).")
  boolean syncWrites;

  @Option(names = "--split-size", paramLabel = "SIZE",
      description = "--during split: the table's split size. Default: the loaded bytes / 16 (at least 64KiB), so it grows to 16 shards or more.")
  String splitSize;

  @Option(names = "--split-rate", paramLabel = "RPS",
      description = "--during split: the table's split rate (requests/s a shard may take before it splits by load). Default: the balancer's (2,500).")
  Long splitRate;

  @Option(names = "--insert-order", paramLabel = "ORDER", defaultValue = "hashed",
      description = "hashed (YCSB's default: key names spread over the key space) or ordered (each insert's key above every one before: a monotonic key). Default: ${DEFAULT-VALUE}.")
  String insertOrder;

  @Option(names = "--seed", paramLabel = "X", defaultValue = "1", description = "Seed for choices and values. Default: ${DEFAULT-VALUE}.")
  long seed;

  @Option(names = "--near-cache", paramLabel = "TTL",
      description = "Give the benchmark's client a near-cache of this TTL (at most 10s; up to " + NEAR_CACHE_KEYS + " keys): reads of hot keys"
          + " are answered in the client, and may miss other writers' updates for up to the TTL. Off by default.")
  String nearCache;

  static final int NEAR_CACHE_KEYS = 100_000;

  @Option(names = "--read-from-followers", paramLabel = "STALENESS",
      description = "With --replicas above 1: reads go to any replica of the key's shard, answered by a follower at most this stale"
          + " (e.g. 1s), else by the leader. Off by default (linearizable reads at the leader).")
  String followerReads;

  @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
  OutputFormat output;

  /** What a bench of its own does with a client. */
  @FunctionalInterface
  private interface ClientWork<T> {
    T run(ShardwiseClient client) throws Exception;
  }

  /**
   * Runs {@code work} with a client (routed as --via says) of a --dev cluster started here, or of the
   * cluster --zk names; the --dev cluster and its directory are gone afterwards.
   */
  private <T> T onCluster(ClientWork<T> work) throws Exception {
    Path dir = Files.createTempDirectory("shardwise-bench");
    try (EmbeddedCluster cluster = dev ? new EmbeddedCluster(dir.resolve("cluster"), nodes) : null) {
      String zkConnect = dev ? cluster.zk() : ClusterOptions.zkOrDefault(zk);
      List<String> seeds = new ArrayList<>();
      try (Coordinator coordinator = ClusterOptions.connectCoordinator(zkConnect)) {
        coordinator.liveNodesNow().values().forEach(n -> seeds.add(n.getAddress()));
      }
      if (seeds.isEmpty()) {
        throw new IllegalStateException("no live node in ZooKeeper at " + zkConnect);
      }
      try (ShardwiseClient client = ShardwiseClient.builder().routing(ClusterOptions.routing(via)).seeds(seeds).build()) {
        return work.run(client);
      }
    } finally {
      io.shardwise.bench.Directories.delete(dir);
    }
  }

  /** {@code --workload query}: {@link QueryBench} on a --dev cluster (or the one --zk names). */
  private Integer callQuery() throws Exception {
    for (int n : queryShards) {
      TableCommand.inRange("--query-shards", n, 1, io.shardwise.server.rpc.TableAdmin.MAX_SHARDS);
    }
    TableCommand.inRange("--query-colors", queryColors, 1, 1_000_000);
    List<Integer> mixes = queryMixes.equals(List.of(0)) ? List.of() : queryMixes;
    for (int pct : mixes) {
      TableCommand.inRange("--query-mixes", pct, 1, 99);
    }
    if (records < 1 || records > 10_000_000) {
      throw new IllegalArgumentException("--workload query: --records (documents) is 1 to 10,000,000, not " + records);
    }
    if (during != null || !baselines.isEmpty() || operations != null) {
      throw new IllegalArgumentException("--workload query runs by --duration, without --during or --baseline");
    }
    if (dev && (zk != null || router != null)) {
      throw new IllegalArgumentException("--dev starts its own cluster; leave out --zk and --router");
    }
    QueryBench.Options options = new QueryBench.Options((int) records, queryColors, threads, Durations.parse("--duration", duration),
        Durations.parse("--warmup", warmup), queryShards, TableCommand.inRange("--replicas", replicas, 1, io.shardwise.core.map.Replication.MAX_FACTOR),
        mixes);
    PrintWriter out = spec.commandLine().getOut();
    QueryBench.Report report = onCluster(client -> {
      QueryBench.load(client, options);
      return QueryBench.run(client, options);
    });
    if (output == OutputFormat.json) {
      com.fasterxml.jackson.databind.node.ObjectNode o = Output.object();
      com.fasterxml.jackson.databind.node.ArrayNode a = o.putArray("queries");
      for (QueryBench.Result r : report.queries()) {
        a.addObject().put("access", r.access()).put("shards", r.shards()).put("queries", r.queries()).put("incomplete", r.failed())
            .put("queries_per_second", r.queriesPerSecond()).put("p50_micros", r.p50()).put("p99_micros", r.p99())
            .put("rows_per_query", r.rowsPerQuery()).put("examined_per_query", r.examinedPerQuery()).put("shards_per_query", r.shardsPerQuery());
      }
      com.fasterxml.jackson.databind.node.ArrayNode m = o.putArray("mixes");
      for (QueryBench.Mix x : report.mixes()) {
        m.addObject().put("access", x.access()).put("shards", x.shards()).put("read_percent", x.readPercent())
            .put("operations_per_second", x.operationsPerSecond());
      }
      com.fasterxml.jackson.databind.node.ArrayNode w = o.putArray("writes");
      for (QueryBench.WriteCost c : report.writes()) {
        w.addObject().put("shards", c.shards()).put("indexes", c.indexes()).put("puts_per_second", c.putsPerSecond())
            .put("p50_micros", c.p50()).put("p99_micros", c.p99());
      }
      com.fasterxml.jackson.databind.node.ArrayNode l = o.putArray("async_lag");
      for (QueryBench.Lag g : report.lags()) {
        l.addObject().put("shards", g.shards()).put("samples", g.samples()).put("lag_p50_millis", g.p50Millis())
            .put("lag_max_millis", g.maxMillis()).put("max_pending_rows", g.maxPendingRows()).put("caught_up_millis", g.caughtUpMillis());
      }
      Output.json(out, o);
    } else {
      out.printf("%d documents, 1 in %d matching each query, %d replica(s), %d threads, %s each (writes: half that)%n", records,
          queryColors, replicas, threads, duration);
      List<List<String>> rows = new ArrayList<>();
      for (QueryBench.Result r : report.queries()) {
        rows.add(List.of(r.access(), Integer.toString(r.shards()), String.format("%,.1f", r.queriesPerSecond()),
            String.format("%.2f ms", r.p50() / 1000.0), String.format("%.2f ms", r.p99() / 1000.0), String.format("%,.0f", r.rowsPerQuery()),
            String.format("%,.0f", r.examinedPerQuery()), String.format("%.1f", r.shardsPerQuery()), Long.toString(r.failed())));
      }
      Output.table(out, List.of("ACCESS", "SHARDS", "QUERIES/S", "P50", "P99", "ROWS/QUERY", "EXAMINED/QUERY", "SHARDS/QUERY", "INCOMPLETE"),
          rows);
      out.println("(examined: rows read by a scan; index entries read through an index. shards/query: a global index's are its index"
          + " shard plus the data shards its rows were fetched from)");
      List<List<String>> writes = new ArrayList<>();
      for (QueryBench.WriteCost c : report.writes()) {
        writes.add(List.of(Integer.toString(c.shards()), c.indexes(), String.format("%,.0f", c.putsPerSecond()),
            String.format("%.2f ms", c.p50() / 1000.0), String.format("%.2f ms", c.p99() / 1000.0)));
      }
      Output.table(out, List.of("SHARDS", "INDEXES", "PUTS/S", "P50", "P99"), writes);
      List<List<String>> lagRows = new ArrayList<>();
      for (QueryBench.Lag g : report.lags()) {
        lagRows.add(List.of(Integer.toString(g.shards()), Integer.toString(g.samples()), g.p50Millis() + " ms", g.maxMillis() + " ms",
            String.format("%,d", g.maxPendingRows()), g.caughtUpMillis() + " ms"));
      }
      out.println("async index's lag while the puts above ran (index status every 100 ms), and the time to show them all once they stopped:");
      Output.table(out, List.of("SHARDS", "SAMPLES", "LAG P50", "LAG MAX", "MOST PENDING", "CAUGHT UP IN"), lagRows);
      if (!report.mixes().isEmpty()) {
        List<List<String>> mixRows = new ArrayList<>();
        for (QueryBench.Mix x : report.mixes()) {
          mixRows.add(List.of(x.access(), Integer.toString(x.shards()), x.readPercent() + " : " + (100 - x.readPercent()),
              String.format("%,.0f", x.operationsPerSecond())));
        }
        Output.table(out, List.of("ACCESS", "SHARDS", "READS : WRITES", "OPS/S"), mixRows);
      }
    }
    return Main.EXIT_OK;
  }

  /** {@code --workload txn}: {@link TxnBench} on a --dev cluster (or the one --zk names), one table of --shards shards. */
  private Integer callTxn() throws Exception {
    int tableShards = shards != null ? shards : 4 * nodes;
    for (int span : txnSpans) {
      if (span < 0 || span > Math.min(tableShards, io.shardwise.server.txn.Transactions.MAX_ITEMS)) {
        throw new IllegalArgumentException("--txn-spans are 0 (a put) to the table's " + tableShards + " shards, not " + span);
      }
    }
    if (records < 16 || records > 10_000_000) {
      throw new IllegalArgumentException("--workload txn: --records (accounts) is 16 to 10,000,000, not " + records);
    }
    if (during != null || !baselines.isEmpty() || operations != null) {
      throw new IllegalArgumentException("--workload txn runs by --duration, without --during or --baseline");
    }
    if (dev && (zk != null || router != null)) {
      throw new IllegalArgumentException("--dev starts its own cluster; leave out --zk and --router");
    }
    List<Workload.Distribution> distributions = distribution == null ? List.of(Workload.Distribution.UNIFORM, Workload.Distribution.ZIPFIAN)
        : List.of(Workload.Distribution.byName(distribution));
    TxnBench.Options options = new TxnBench.Options((int) records, threads, Durations.parse("--duration", duration),
        Durations.parse("--warmup", warmup), txnSpans, distributions);
    PrintWriter out = spec.commandLine().getOut();
    List<TxnBench.Result> results = onCluster(client -> {
      try (Target target = new ShardwiseTarget(client, table, tableShards,
          TableCommand.inRange("--replicas", replicas, 1, io.shardwise.core.map.Replication.MAX_FACTOR), strategy)) {
        target.prepare();
        TxnBench.load(client, table, (int) records);
        return TxnBench.run(client, table, options);
      }
    });
    if (output == OutputFormat.json) {
      com.fasterxml.jackson.databind.node.ArrayNode a = Output.JSON.createArrayNode();
      for (TxnBench.Result r : results) {
        a.addObject().put("write", r.kind()).put("distribution", r.distribution().id()).put("committed", r.committed())
            .put("ops_per_second", r.opsPerSecond()).put("p50_micros", r.p50()).put("p99_micros", r.p99()).put("attempts", r.attempts())
            .put("aborted", r.aborted()).put("abort_rate", r.abortRate());
      }
      Output.json(out, a);
    } else {
      out.printf("%d accounts, table %s of %d shards, %d replica(s), %d threads, %s each%n", records, table, tableShards, replicas, threads,
          duration);
      List<List<String>> rows = new ArrayList<>();
      for (TxnBench.Result r : results) {
        rows.add(List.of(r.kind(), r.distribution().id(), String.format("%,.0f", r.opsPerSecond()), String.format("%.2f ms", r.p50() / 1000.0),
            String.format("%.2f ms", r.p99() / 1000.0), String.format("%.1f%%", 100 * r.abortRate())));
      }
      Output.table(out, List.of("WRITE", "ACCOUNTS", "OPS/S", "P50", "P99", "ABORTED ATTEMPTS"), rows);
    }
    return Main.EXIT_OK;
  }

  @Override
  public Integer call() throws Exception {
    if (workload.equalsIgnoreCase("txn")) {
      return callTxn();
    }
    if (workload.equalsIgnoreCase("query")) {
      return callQuery();
    }
    Workload w = Workload.byName(workload);
    if (!insertOrder.equals("hashed") && !insertOrder.equals("ordered")) {
      throw new IllegalArgumentException("--insert-order must be hashed or ordered, not '" + insertOrder + "'");
    }
    Bench.Options options = new Bench.Options(w, records, operations == null ? 0 : operations,
        operations == null ? Durations.parse("--duration", duration) : Duration.ZERO, threads, valueSize,
        distribution == null ? w.defaultDistribution() : Workload.Distribution.byName(distribution),
        Durations.parse("--warmup", warmup), seed, insertOrder.equals("ordered"));
    for (String b : baselines) {
      if (!b.equals("rocksdb") && !b.equals("redis-cluster")) {
        throw new IllegalArgumentException("--baseline must be rocksdb or redis-cluster, not '" + b + "'");
      }
    }
    if (redisReplicas != -1) {
      TableCommand.inRange("--redis-replicas", redisReplicas, 0, io.shardwise.bench.RedisCluster.MAX_REPLICAS_PER_MASTER);
    }
    if (redisMasters < 3) {
      throw new IllegalArgumentException("--redis-masters must be 3 or more (a Redis Cluster's least), not " + redisMasters);
    }
    boolean rebalance = during != null;
    if (rebalance && !List.of("rebalance", "split", "node-loss", "isolate", "salt").contains(during)) {
      throw new IllegalArgumentException("--during must be rebalance, split, node-loss, isolate or salt, not '" + during + "'");
    }
    boolean remedy = rebalance && (during.equals("isolate") || during.equals("salt"));
    if (rebalance && during.equals("salt") && (!w.counters() || !strategy.equals("hashrange"))) {
      throw new IllegalArgumentException("--during salt needs --workload k (counters: only a counter is salted) and --strategy hashrange"
          + " (a range table keeps a key's sub-keys beside it)");
    }
    if (saltFanout != null && (!remedy || !during.equals("salt"))) {
      throw new IllegalArgumentException("--salt-fanout is for --during salt");
    }
    if (saltFanout != null) {
      TableCommand.inRange("--salt-fanout", saltFanout, 2, io.shardwise.core.key.Counters.MAX_FANOUT);
    }
    if (!strategy.equals("range") && !strategy.equals("hashrange")) {
      throw new IllegalArgumentException("--strategy must be range or hashrange, not '" + strategy + "'");
    }
    if (w.counters() && baselines.contains("rocksdb")) {
      throw new IllegalArgumentException("--workload k has no rocksdb baseline (it has no counters here); use redis-cluster");
    }
    if (!hotKeySampling.equals("on") && !hotKeySampling.equals("off")) {
      throw new IllegalArgumentException("--hot-key-sampling must be on or off, not '" + hotKeySampling + "'");
    }
    if (hotKeySampling.equals("off") && (!dev || remedy)) {
      throw new IllegalArgumentException("--hot-key-sampling off needs --dev, and no --during isolate or salt (they need the hot keys)");
    }
    boolean nodeLoss = rebalance && during.equals("node-loss");
    if (nodeLoss && (replicas < 2 || nodes <= replicas)) {
      throw new IllegalArgumentException("--during node-loss needs --replicas 2 or more and more --nodes than replicas (the lost replicas are"
          + " rebuilt on a node that has none), not " + replicas + " replicas on " + nodes + " nodes");
    }
    if (rebalance && !dev) {
      throw new IllegalArgumentException("--during " + during + " needs --dev (it changes the cluster it started)");
    }
    if (rebalance && operations != null) {
      throw new IllegalArgumentException("--during " + during + " runs by --duration (a third before the event, a third during, a third after)");
    }
    boolean split = rebalance && during.equals("split");
    if (splitSize != null && !split) {
      throw new IllegalArgumentException("--split-size is for --during split");
    }
    long splitBytes = splitSize != null ? Sizes.parse("--split-size", splitSize)
        : Math.max(64 << 10, records * (valueSize + RECORD_OVERHEAD_BYTES) / 16);
    if (splitBytes < 1) {
      throw new IllegalArgumentException("--split-size must be more than 0 bytes");
    }
    if (splitRate != null && (!split || splitRate < 1)) {
      throw new IllegalArgumentException(!split ? "--split-rate is for --during split" : "--split-rate must be at least 1 request/s, not " + splitRate);
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
    io.shardwise.server.replication.Replicator.Sent replicationSent = null; // --dev: leaders to followers over the measured run
    Duration followerStaleness = followerReads == null ? null
        : Durations.parseWithin("--read-from-followers", followerReads, Duration.ofMillis(1), Duration.ofHours(1));
    Duration lease = readLease == null ? null : NodeCommand.readLease(readLease);
    if (lease != null && !dev) {
      throw new IllegalArgumentException("--read-lease needs --dev: a running cluster's nodes have theirs");
    }
    if (syncWrites && !dev) {
      throw new IllegalArgumentException("--sync-writes needs --dev: a running cluster's nodes have theirs");
    }
    if (followerStaleness != null && replicas < 2) {
      throw new IllegalArgumentException("--read-from-followers needs --replicas 2 or more: a table of one replica has no followers");
    }

    PrintWriter out = spec.commandLine().getOut();
    Path work = Files.createTempDirectory("shardwise-bench");
    List<Bench.Result> results = new ArrayList<>();
    ClusterTraffic.Spread spread;
    ObjectNode rebalanceReport = null;
    try {
      EmbeddedCluster cluster = dev ? new EmbeddedCluster(work.resolve("cluster"), nodes, c -> {
        NodeConfig tuned = c.withHotKeySampling(hotKeySampling.equals("on")).withSyncWrites(syncWrites);
        return lease == null ? tuned : tuned.withReplication(tuned.replication().withReadLease(lease));
      }) : null;
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
          if (followerStaleness != null) {
            clientBuilder.readFromFollowers(followerStaleness);
          }
          ShardwiseClient benchClient = clientBuilder.build();
          SplitDriver splitDriver = split ? new SplitDriver(coordinator, peers, table, splitBytes, splitRate, options) : null;
          if (splitDriver != null) {
            splitDriver.prepare(); // the table does not split or move before the event
          }
          try (Target target = new ShardwiseTarget(benchClient, table, shards != null ? shards : split ? 1 : 4 * Math.max(1, nodeCount),
              TableCommand.inRange("--replicas", replicas, 1, io.shardwise.core.map.Replication.MAX_FACTOR), strategy)) {
            Bench.Load load = bench.load(target, progress("shardwise"));
            // Requests per shard are counted from the end of the warm-up to the end of the run.
            AtomicReference<ClusterTraffic.Reading> before = new AtomicReference<>();
            AtomicReference<io.shardwise.server.replication.Replicator.Sent> sentBefore = new AtomicReference<>();
            Bench.Listener shown = progress("shardwise");
            Bench.Listener listener = new Bench.Listener() {
              @Override
              public void progress(String phase, double seconds, long ops, double rate, double p99, long errors) {
                shown.progress(phase, seconds, ops, rate, p99, errors);
              }

              @Override
              public void measuring() {
                if (cluster != null) {
                  sentBefore.set(cluster.replicationSent());
                }
                if (coordinator != null) {
                  before.set(ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table));
                }
              }
            };
            Bench.Result result;
            if (splitDriver != null) {
              splitDriver.start();
              result = bench.run(target, load, splitDriver::phase, listener);
              rebalanceReport = splitDriver.report(result);
            } else if (remedy) {
              RemedyDriver driver = new RemedyDriver(during, coordinator, peers, table, options, saltFanout);
              driver.start();
              result = bench.run(target, load, driver::phase, listener);
              rebalanceReport = driver.report(result);
            } else if (nodeLoss) {
              NodeLossDriver driver = new NodeLossDriver(cluster, coordinator, benchClient, table, options);
              driver.start();
              result = bench.run(target, load, driver::phase, listener);
              rebalanceReport = driver.report(result);
            } else if (rebalance) {
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
            if (sentBefore.get() != null) {
              replicationSent = cluster.replicationSent().minus(sentBefore.get());
            }
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
      if (replicationSent != null && replicationSent.messages() > 0) {
        root.putObject("replication").put("messages", replicationSent.messages()).put("entries", replicationSent.entries())
            .put("entriesPerMessage", BenchReport.round((double) replicationSent.entries() / replicationSent.messages()));
      }
      if (nearCacheStats != null) {
        root.putObject("nearCache").put("ttl", nearCache).put("hits", nearCacheStats.hits()).put("misses", nearCacheStats.misses())
            .put("hitRate", BenchReport.round(nearCacheStats.hitRate()));
      }
      if (rebalanceReport != null) {
        root.set(split ? "split" : nodeLoss ? "nodeLoss" : remedy ? during : "rebalance", rebalanceReport);
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
      if (replicationSent != null && replicationSent.messages() > 0) {
        out.printf(Locale.ROOT, "replication over the measured run: %,d append messages from leaders to followers carrying %,d log entries"
            + " (%.2f per message; heartbeats are messages of none)%n", replicationSent.messages(), replicationSent.entries(),
            (double) replicationSent.entries() / replicationSent.messages());
      }
      if (nearCacheStats != null) {
        out.printf(Locale.ROOT, "near-cache (TTL %s): %.1f%% of reads answered in the client (%,d hits, %,d misses)%n", nearCache,
            100 * nearCacheStats.hitRate(), nearCacheStats.hits(), nearCacheStats.misses());
      }
      if (rebalanceReport != null && remedy) {
        RemedyDriver.print(out, during, rebalanceReport);
      } else if (rebalanceReport != null && split) {
        SplitDriver.print(out, rebalanceReport);
      } else if (rebalanceReport != null && nodeLoss) {
        NodeLossDriver.print(out, rebalanceReport);
      } else if (rebalanceReport != null) {
        ObjectNode r = rebalanceReport;
        out.println(r.has("plan")
            ? String.format(Locale.ROOT, "rebalance: plan %s %s, %d moves, %.2f MB (%,d keys) in %.2f s = %.2f MB/s, longest write pause %.1f ms",
                r.get("plan").asText(), r.get("state").asText(), r.get("moves").asLong(), r.get("movedBytes").asLong() / 1e6,
                r.get("movedKeys").asLong(), r.get("moveSeconds").asDouble(), r.get("moveMBps").asDouble(), r.get("longestWritePauseMs").asDouble())
            : "rebalance: " + r);
      }
    }
    out.flush();
    boolean rebalanceFailed = rebalanceReport != null && (rebalanceReport.has("error")
        || (!split && !nodeLoss && !remedy && !rebalanceReport.has("plan")));
    return results.get(0).errorCount() == 0 && !rebalanceFailed ? Main.EXIT_OK : Main.EXIT_FAILURE;
  }

  /** Replicas per Redis master: as asked, or as many copies of each key as the Shardwise table keeps. */
  private int redisReplicas() {
    return redisReplicas >= 0 ? redisReplicas : Math.max(0, replicas - 1);
  }

  private Bench.Result runBaseline(String name, Bench.Options options, Path work) {
    Bench bench = new Bench(options);
    if (name.equals("rocksdb")) {
      try (Target target = new RocksDbTarget(work.resolve("rocksdb"))) {
        Bench.Load load = bench.load(target, progress(name));
        return bench.run(target, load, () -> "run", progress(name));
      }
    }
    try (RedisCluster redis = RedisCluster.start(work.resolve("redis"), redisMasters, redisReplicas());
        Target target = new RedisClusterTarget(redis.masters(), options.threads(), redisReplicas())) {
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
   * Puts into {@code p} how evenly phase {@code phase}'s requests spread over the table's shards and
   * nodes: between the reading at its start and the next phase's (the "end" reading after the last);
   * nothing if either reading is missing.
   */
  static void putSpread(ObjectNode p, java.util.Map<String, ClusterTraffic.Reading> readings, String phase) {
    String next = phase.equals("before") ? (readings.containsKey("during") ? "during" : "after")
        : phase.equals("during") ? "after" : "end";
    ClusterTraffic.Reading from = readings.get(phase);
    ClusterTraffic.Reading to = readings.get(next);
    if (from != null && to != null) {
      ClusterTraffic.Spread spread = ClusterTraffic.between(from, to);
      p.put("shardPeakToAverage", BenchReport.round(spread.shardPeakToAverage()))
          .put("nodePeakToAverage", BenchReport.round(spread.nodePeakToAverage()));
    }
  }

  /**
   * Cuts a run into before / during / after an event: a third of the way in (after the warm-up)
   * {@link #event} makes it happen and returns when it has played out ("during" from {@link
   * #enterDuring}), and "after" lasts another third. The report gives each phase's throughput and
   * latency beside the driver's {@link #facts}.
   */
  private abstract static class PhaseDriver {
    private final String name;
    private final Duration third;
    private final Duration warmup;
    private final AtomicReference<String> phase = new AtomicReference<>("before");
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    /** Readings of the table's per-shard requests at each phase's start and at the end (for drivers that can take them). */
    private final java.util.Map<String, ClusterTraffic.Reading> readings = new java.util.concurrent.ConcurrentHashMap<>();
    private java.util.function.Supplier<ClusterTraffic.Reading> traffic;

    /** Lets {@link #report} give each phase's spread of requests over shards and nodes. */
    final void readTrafficWith(java.util.function.Supplier<ClusterTraffic.Reading> reader) {
      this.traffic = reader;
    }

    private void reading(String at) {
      if (traffic != null) {
        try {
          readings.put(at, traffic.get());
        } catch (RuntimeException e) {
          // no spread for this phase
        }
      }
    }

    PhaseDriver(String name, Bench.Options options) {
      this.name = name;
      this.third = options.duration().dividedBy(3);
      this.warmup = options.warmup();
    }

    /** Makes the event happen; returns when it is over. */
    abstract void event() throws Exception;

    /** What the event did, for the report. */
    abstract void facts(ObjectNode report);

    final void enterDuring() {
      reading("during");
      phase.set("during");
    }

    final String phase() {
      return phase.get();
    }

    final void start() {
      Thread t = new Thread(() -> {
        try {
          Thread.sleep(warmup.toMillis());
          reading("before");
          Thread.sleep(third.toMillis());
          event();
          reading("after");
          phase.set("after");
          Thread.sleep(third.toMillis());
          reading("end");
        } catch (Exception e) {
          failure.set(e);
        } finally {
          phase.set(null);
        }
      }, name);
      t.setDaemon(true);
      t.start();
    }

    final ObjectNode report(Bench.Result result) {
      ObjectNode o = Output.object();
      if (failure.get() != null) {
        o.put("error", failure.get().toString());
      }
      facts(o);
      for (Bench.Phase ph : result.phases()) {
        ObjectNode p = o.putObject(ph.name()).put("seconds", BenchReport.round(ph.seconds())).put("throughput", BenchReport.round(ph.throughput()))
            .put("p99", ph.all().p99()).put("p50", ph.all().p50());
        putSpread(p, readings, ph.name());
      }
      return o;
    }
  }

  /**
   * Cuts a run into before / during / after a hotspot remedy: a third of the way in, the hottest
   * partition key of the table (the top hot key of its busiest shard, as the nodes sample them) is
   * isolated in a shard of its own on the least-loaded node (an approved plan, run to its end), or,
   * for counters, salted into {@code --salt-fanout} sub-keys. Each phase reports the spread of requests over
   * shards and nodes.
   */
  private static final class RemedyDriver extends PhaseDriver {
    private final String kind;
    private final Coordinator coordinator;
    private final Peers peers;
    private final String table;
    private final ObjectNode facts = Output.object();
    private final Integer fanout;

    RemedyDriver(String kind, Coordinator coordinator, Peers peers, String table, Bench.Options options, Integer fanout) {
      super("bench-" + kind, options);
      this.kind = kind;
      this.fanout = fanout;
      this.coordinator = coordinator;
      this.peers = peers;
      this.table = table;
      readTrafficWith(() -> ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table));
    }

    @Override
    void event() throws Exception {
      var stats = io.shardwise.server.rpc.NodeStatsPoll.ask(peers, coordinator.liveNodesNow().values(),
          io.shardwise.proto.v1.NodeStatsRequest.newBuilder().setSkipSizes(true).setHotKeys(1).build(), Duration.ofSeconds(5)).answers();
      io.shardwise.proto.v1.ShardInfo busiest = null;
      for (var n : stats) {
        for (var sh : n.getShardsList()) {
          if (sh.getTable().equals(table) && sh.getHotKeysCount() > 0 && (busiest == null || sh.getHotSampled() > busiest.getHotSampled())) {
            busiest = sh;
          }
        }
      }
      if (busiest == null) {
        throw new IllegalStateException("no hot key sampled in table " + table);
      }
      byte[] key = busiest.getHotKeys(0).getKey().toByteArray();
      facts.put("key", ValueFormat.escaped(key)).put("keyShareOfShard", BenchReport.round(
          (double) (busiest.getHotKeys(0).getCount() - busiest.getHotKeys(0).getError()) / Math.max(1, busiest.getHotSampled())));
      enterDuring();
      long started = System.nanoTime();
      if (kind.equals("salt")) {
        int n = fanout != null ? fanout : io.shardwise.server.hot.Salting.defaultFanout(coordinator.liveNodesNow().size());
        new io.shardwise.server.hot.Salting(coordinator, peers).promote(table, io.shardwise.core.key.Key.of(key), n, "bench: --during salt");
        facts.put("fanout", n);
      } else {
        Rebalancing rebalancing = new Rebalancing(coordinator);
        PlanRecord p = rebalancing.isolate(peers, table, key, java.util.Optional.empty(), true);
        facts.put("why", p.getResizes(0).getWhy());
        do {
          Thread.sleep(100);
          p = rebalancing.records().plan(p.getId()).orElseThrow();
        } while (!RebalanceRecords.finished(p.getState()));
        facts.put("plan", p.getId()).put("state", Rebalancing.describe(p.getState()));
      }
      facts.put("remedySeconds", BenchReport.round((System.nanoTime() - started) / 1e9));
    }

    @Override
    void facts(ObjectNode o) {
      o.setAll(facts);
    }

    static void print(PrintWriter out, String kind, ObjectNode r) {
      if (r.has("error")) {
        out.println(kind + ": " + r.get("error").asText());
        return;
      }
      out.printf(Locale.ROOT, "%s key '%s' (at least %.0f%% of its shard's requests) in %.1f s%s%n", kind.equals("salt") ? "salted" : "isolated",
          r.path("key").asText(), 100 * r.path("keyShareOfShard").asDouble(), r.path("remedySeconds").asDouble(),
          kind.equals("salt") ? " into " + r.path("fanout").asInt() + " sub-keys" : "");
      for (String ph : List.of("before", "during", "after")) {
        if (r.has(ph)) {
          printPhase(out, ph, r.get(ph));
        }
      }
    }
  }

  /** One phase's line of a driver's report: throughput, p99, and how evenly requests spread. */
  private static void printPhase(PrintWriter out, String phase, com.fasterxml.jackson.databind.JsonNode p) {
    out.printf(Locale.ROOT, "  %-7s %,10.0f ops/s  p99 %s ms%s%n", phase, p.path("throughput").asDouble(), BenchReport.ms(p.path("p99").asLong()),
        spreadText(p));
  }

  /** A phase's spread ({@link #putSpread}) as the text reports say it; empty if it has none. */
  static String spreadText(com.fasterxml.jackson.databind.JsonNode p) {
    return p.has("nodePeakToAverage") ? String.format(Locale.ROOT, "  busiest node %.2f× the average, busiest shard %.2f×",
        p.path("nodePeakToAverage").asDouble(), p.path("shardPeakToAverage").asDouble()) : "";
  }

  /**
   * Cuts a run into before / during / after a rebalance: after a third of --duration, a node joins,
   * the balancer suggests a plan, the driver approves it, and when the plan is done the run goes
   * on for another third.
   */
  private static final class RebalanceDriver extends PhaseDriver {
    private final EmbeddedCluster cluster;
    private final Coordinator coordinator;
    private final AtomicReference<PlanRecord> plan = new AtomicReference<>();

    RebalanceDriver(EmbeddedCluster cluster, Coordinator coordinator, Bench.Options options) {
      super("bench-rebalance", options);
      this.cluster = cluster;
      this.coordinator = coordinator;
    }

    @Override
    void event() throws Exception {
      Rebalancing rebalancing = new Rebalancing(coordinator);
      cluster.addNode();
      enterDuring();
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
    }

    @Override
    void facts(ObjectNode o) {
      PlanRecord p = plan.get();
      if (p != null) {
        double seconds = (p.getFinishedMillis() - p.getStartedMillis()) / 1000.0;
        o.put("plan", p.getId()).put("state", Rebalancing.describe(p.getState()))
            .put("moves", p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.DONE).count())
            .put("movedBytes", p.getReportMovedBytes()).put("movedKeys", p.getReportMovedKeys())
            .put("moveSeconds", BenchReport.round(seconds))
            .put("moveMBps", BenchReport.round(seconds <= 0 ? 0 : p.getReportMovedBytes() / 1e6 / seconds))
            .put("longestWritePauseMs", BenchReport.round(p.getReportLongestPauseMicros() / 1000.0));
      }
    }
  }


  /**
   * Cuts a run into before / during / after the loss of a node: a third of the way in, the node
   * holding the most replicas of the table stops for good; the absence grace is 1 s, so the
   * balancer's leader fails its shards over at once (it left ZooKeeper) and then rebuilds its
   * replicas on the other nodes. "During" lasts until every shard again has its replicas, all in
   * sync; the report gives the failover time (until no shard is led by the lost node), the rebuild
   * time, and the rebuilt keys and bytes per second (the lost replicas' shards, as their leaders
   * count them).
   */
  private static final class NodeLossDriver extends PhaseDriver {
    private final EmbeddedCluster cluster;
    private final Coordinator coordinator;
    private final ShardwiseClient client;
    private final String table;
    private final ObjectNode facts = Output.object();

    NodeLossDriver(EmbeddedCluster cluster, Coordinator coordinator, ShardwiseClient client, String table, Bench.Options options) {
      super("bench-node-loss", options);
      this.cluster = cluster;
      this.coordinator = coordinator;
      this.client = client;
      this.table = table;
      new RebalanceRecords(coordinator).updateSettings(s -> s.toBuilder().setAbsentGraceSeconds(1).build());
    }

    @Override
    void event() throws Exception {
      io.shardwise.client.TableDescription before = client.describeTable(table, true);
      java.util.Map<String, Long> replicasPerNode = new java.util.TreeMap<>();
      for (var s : before.shards()) {
        replicasPerNode.merge(s.owner(), 1L, Long::sum);
        s.followers().forEach(f -> replicasPerNode.merge(f, 1L, Long::sum));
      }
      String victim = replicasPerNode.entrySet().stream().max(java.util.Map.Entry.comparingByValue()).orElseThrow().getKey();
      long keys = 0;
      long bytes = 0;
      int lost = 0;
      for (var s : before.shards()) {
        if (s.owner().equals(victim) || s.followers().contains(victim)) {
          keys += s.keys();
          bytes += s.bytes();
          lost++;
        }
      }
      long stopped = System.nanoTime();
      cluster.stopNode(victim);
      enterDuring();
      double failoverSeconds = -1;
      int factor = before.replicas();
      while (true) {
        io.shardwise.core.map.Table now = coordinator.readMapSynced().map().table(table).orElseThrow();
        double elapsed = (System.nanoTime() - stopped) / 1e9;
        if (failoverSeconds < 0 && now.shards().stream().noneMatch(s -> s.owner().value().equals(victim))) {
          failoverSeconds = elapsed;
        }
        boolean whole = now.shards().stream().allMatch(s -> s.replicas().size() == factor && !s.isReplica(io.shardwise.core.map.NodeId.of(victim))
            && s.inSync().size() == factor - 1);
        if (whole) {
          facts.put("lostNode", victim).put("lostReplicas", lost).put("rebuiltKeys", keys).put("rebuiltBytes", bytes)
              .put("failoverSeconds", BenchReport.round(failoverSeconds)).put("rebuildSeconds", BenchReport.round(elapsed))
              .put("keysPerSecond", BenchReport.round(keys / elapsed)).put("mbPerSecond", BenchReport.round(bytes / 1e6 / elapsed));
          return;
        }
        if (elapsed > 600) {
          throw new IllegalStateException("the lost node's replicas were not rebuilt within 10 minutes");
        }
        Thread.sleep(100);
      }
    }

    @Override
    void facts(ObjectNode o) {
      o.setAll(facts);
    }

    static void print(PrintWriter out, ObjectNode r) {
      if (!r.has("lostNode")) {
        out.println("node loss: " + r);
        return;
      }
      out.printf(Locale.ROOT, "node loss: %s stopped holding %d replicas; failover %.2f s; replicas rebuilt in %.2f s: %,d keys, %.2f MB"
          + " = %,.0f keys/s, %.2f MB/s%n", r.get("lostNode").asText(), r.get("lostReplicas").asInt(), r.get("failoverSeconds").asDouble(),
          r.get("rebuildSeconds").asDouble(), r.get("rebuiltKeys").asLong(), r.get("rebuiltBytes").asLong() / 1e6,
          r.get("keysPerSecond").asDouble(), r.get("mbPerSecond").asDouble());
    }
  }

  /** What a record costs on disk beyond its value, for the default split size: its key and RocksDB's overhead, roughly. */
  private static final long RECORD_OVERHEAD_BYTES = 40;

  /**
   * Cuts a run into before / during / after the table starts to split: the table is one range
   * shard with every resize policy off and the balancer in manual mode for it; a third of the way
   * in, the driver turns the table to auto mode with the split size (and the default split rate),
   * so the balancer splits it by size and load and spreads the shards; it counts the table's shards
   * every 250 ms, and at the end measures what share of the last seconds' writes went to the
   * table's last shard (the hotspot of a monotonic key that splitting alone cannot fix).
   */
  private static final class SplitDriver {
    private static final Duration LAST_WRITES = Duration.ofSeconds(5);

    private final Coordinator coordinator;
    private final Peers peers;
    private final String table;
    private final long splitBytes;
    private final Long splitRate;
    private final Duration third;
    private final Duration warmup;
    private final AtomicReference<String> phase = new AtomicReference<>("before");
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    private final List<long[]> shardsOverTime = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicReference<double[]> lastShardWrites = new AtomicReference<>();
    private volatile long eventMillis;

    /** The table's requests per shard and node at the start of each phase and at the end (for the phases' spread). */
    private final java.util.Map<String, ClusterTraffic.Reading> readings = new java.util.concurrent.ConcurrentHashMap<>();

    SplitDriver(Coordinator coordinator, Peers peers, String table, long splitBytes, Long splitRate, Bench.Options options) {
      this.coordinator = coordinator;
      this.peers = peers;
      this.table = table;
      this.splitBytes = splitBytes;
      this.splitRate = splitRate;
      this.third = options.duration().dividedBy(3);
      this.warmup = options.warmup();
    }

    void prepare() {
      new RebalanceRecords(coordinator).updateSettings(s -> s.toBuilder().putTableModes(table, BalancerSettings.Mode.MANUAL)
          .putTableSplitBytes(table, -1).putTableSplitRps(table, -1).build());
    }

    String phase() {
      return phase.get();
    }

    private Thread thread;

    void start() {
      Thread t = new Thread(() -> {
        try {
          long start = System.currentTimeMillis();
          long measureFrom = start + warmup.toMillis();
          long event = measureFrom + third.toMillis();
          long during = event + third.toMillis();
          long end = during + third.toMillis();
          boolean switched = false;
          boolean after = false;
          ClusterTraffic.Reading writesBefore = null;
          for (long now = start; now < end; now = System.currentTimeMillis()) {
            if (!readings.containsKey("before") && now >= measureFrom) {
              reading("before");
            }
            if (!switched && now >= event) {
              reading("during");
              new RebalanceRecords(coordinator).updateSettings(s -> {
                BalancerSettings.Builder b = s.toBuilder().putTableModes(table, BalancerSettings.Mode.AUTO).setAutoMaxFraction(1)
                    .putTableSplitBytes(table, splitBytes).removeTableSplitRps(table);
                return (splitRate == null ? b : b.putTableSplitRps(table, splitRate)).build();
              });
              eventMillis = now;
              phase.set("during");
              switched = true;
            }
            if (!after && now >= during) {
              reading("after");
              phase.set("after");
              after = true;
            }
            if (writesBefore == null && now >= end - LAST_WRITES.toMillis()) {
              writesBefore = writes();
            }
            if (now >= measureFrom) {
              shardsOverTime.add(new long[] {now - measureFrom, coordinator.readMap().map().table(table).map(x -> x.shards().size()).orElse(0)});
            }
            Thread.sleep(250);
          }
          reading("end");
          if (writesBefore != null) {
            lastShardWrites.set(lastShardShare(writesBefore, writes()));
          }
        } catch (Exception e) {
          failure.set(e);
        } finally {
          phase.set(null);
        }
      }, "bench-split");
      t.setDaemon(true);
      t.start();
      thread = t;
    }

    private void reading(String at) {
      try {
        readings.put(at, ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table));
      } catch (RuntimeException e) {
        System.err.println("split: no reading of the table's requests at '" + at + "' (that phase has no spread): " + e);
      }
    }

    private ClusterTraffic.Reading writes() {
      return ClusterTraffic.read(peers, coordinator.liveNodesNow().values(), table, true);
    }

    /** Of the writes between the two readings: {total, to the shard that is last in key order now}. */
    private double[] lastShardShare(ClusterTraffic.Reading before, ClusterTraffic.Reading after) {
      var t = coordinator.readMap().map().table(table).orElseThrow();
      String last = table + "/" + t.shards().get(t.shards().size() - 1).id().number(); // ClusterTraffic's "table/number"
      ClusterTraffic.Spread spread = ClusterTraffic.between(before, after);
      long total = spread.perShard().values().stream().mapToLong(Long::longValue).sum();
      return new double[] {total, spread.perShard().getOrDefault(last, 0L)};
    }

    ObjectNode report(Bench.Result result) {
      try {
        thread.join(Duration.ofSeconds(20).toMillis()); // its last reading comes at the end of its own clock, which may lag the run's
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ObjectNode o = Output.object();
      if (failure.get() != null) {
        o.put("error", failure.get().toString());
      }
      o.put("splitSizeBytes", splitBytes);
      if (splitRate != null) {
        o.put("splitRate", splitRate);
      }
      for (Bench.Phase ph : result.phases()) {
        ObjectNode p = o.putObject(ph.name()).put("seconds", BenchReport.round(ph.seconds())).put("throughput", BenchReport.round(ph.throughput()))
            .put("p50", ph.all().p50()).put("p99", ph.all().p99()).put("max", ph.all().max());
        putSpread(p, readings, ph.name());
      }
      long splits = 0;
      long merges = 0;
      long moves = 0;
      long halvesMoved = 0;
      for (PlanRecord p : new RebalanceRecords(coordinator).plans()) {
        if (p.getCreatedMillis() < eventMillis) {
          continue;
        }
        for (ResizeRecord r : p.getResizesList()) {
          if (r.getState() == ResizeRecord.State.DONE) {
            if (r.getKind() == ResizeRecord.Kind.SPLIT) {
              splits++;
              if (!r.getUpperTo().isEmpty() && r.getError().isEmpty()) {
                halvesMoved++; // a split by load whose upper half went to the least-loaded node
              }
            } else {
              merges++;
            }
          }
        }
        moves += p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.DONE).count();
      }
      o.put("splits", splits).put("merges", merges).put("moves", moves).put("halvesMoved", halvesMoved);
      var shards = o.putArray("shardsOverTime"); // [seconds since the run's start, shards], one a second
      long lastSecond = -1;
      synchronized (shardsOverTime) {
        for (long[] s : shardsOverTime) {
          if (s[0] / 1000 != lastSecond) {
            lastSecond = s[0] / 1000;
            shards.addArray().add(lastSecond).add(s[1]);
          }
        }
      }
      double[] last = lastShardWrites.get();
      if (last != null && last[0] > 0) {
        o.put("lastShardWriteShare", BenchReport.round(last[1] / last[0])).put("lastSecondsWrites", (long) last[0]);
      }
      return o;
    }

    static void print(PrintWriter out, ObjectNode r) {
      if (r.has("error")) {
        out.println("split: " + r.get("error").asText());
      }
      out.printf(Locale.ROOT, "split: split size %s%s; %d splits (%d upper halves moved with them), %d merges, %d moves of the planner"
              + " after the policies were turned on%n", io.shardwise.core.util.Bytes.human(r.get("splitSizeBytes").asLong()),
          r.has("splitRate") ? String.format(Locale.ROOT, ", split rate %,d/s", r.get("splitRate").asLong()) : "", r.get("splits").asLong(),
          r.get("halvesMoved").asLong(), r.get("merges").asLong(), r.get("moves").asLong());
      for (String ph : List.of("before", "during", "after")) {
        if (r.has(ph)) {
          var p = r.get(ph);
          out.printf(Locale.ROOT, "  %-7s %6.1f s %,10.0f ops/s  p50 %s ms  p99 %s ms  max %s ms%s%n", ph, p.get("seconds").asDouble(),
              p.get("throughput").asDouble(), BenchReport.ms(p.get("p50").asDouble()), BenchReport.ms(p.get("p99").asDouble()),
              BenchReport.ms(p.get("max").asDouble()), spreadText(p));
        }
      }
      List<String> over = new ArrayList<>();
      r.get("shardsOverTime").forEach(x -> over.add(x.get(0).asLong() + "s:" + x.get(1).asLong()));
      int step = Math.max(1, over.size() / 12);
      List<String> shown = new ArrayList<>();
      for (int i = 0; i < over.size(); i += step) {
        shown.add(over.get(i));
      }
      out.println("  shards over time: " + String.join(" ", shown));
      if (r.has("lastShardWriteShare")) {
        out.printf(Locale.ROOT, "  writes of the last %d s on the table's last shard: %.1f%% of %,d%n", LAST_WRITES.toSeconds(),
            100 * r.get("lastShardWriteShare").asDouble(), r.get("lastSecondsWrites").asLong());
      }
    }
  }
}
