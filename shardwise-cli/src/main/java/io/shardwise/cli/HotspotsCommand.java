package io.shardwise.cli;

import io.shardwise.server.hot.HotspotReport;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise hotspots}: the busiest shards, their hottest keys, and what would fix them. */
@Command(name = "hotspots", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"The busiest shards over --interval, the keys that take most of their requests, and a remedy for each hotspot.",
        "Keys are sampled on the request path (one request in 16) and their counts halve every 10 s."},
    subcommands = {HotspotsCommand.Fix.class, HotspotsCommand.Salt.class, HotspotsCommand.Unsalt.class, HotspotsCommand.Salted.class})
final class HotspotsCommand implements Callable<Integer> {

  @Spec CommandSpec spec;
  @Mixin RebalanceCommand.Zk zk;

  @Option(names = "--interval", paramLabel = "DURATION", defaultValue = "2s",
      description = "Time between the two readings that rates come from, 100ms to 1h. Default: ${DEFAULT-VALUE}.")
  String interval;

  @Option(names = "--shards", paramLabel = "N", defaultValue = "5", description = "Busiest shards to show, 1 to 100. Default: ${DEFAULT-VALUE}.")
  int shards;

  @Option(names = "--keys", paramLabel = "N", defaultValue = "3", description = "Hottest keys per shard, 1 to 64. Default: ${DEFAULT-VALUE}.")
  int keys;

  @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
  OutputFormat output;

  @Option(names = "--watch", description = "A new report every --interval until Ctrl-C (or --count reports).")
  boolean watch;

  @Option(names = "--count", paramLabel = "N", description = "With --watch: stop after N reports, 1 to 1,000,000.")
  Integer count;

  @Override
  public Integer call() throws InterruptedException {
    Duration between = Durations.parseWithin("--interval", interval, Duration.ofMillis(100), Duration.ofHours(1));
    TableCommand.inRange("--shards", shards, 1, 100);
    TableCommand.inRange("--keys", keys, 1, io.shardwise.server.hot.ShardHeat.KEYS_PER_SHARD);
    if (count != null && !watch) {
      throw new IllegalArgumentException("--count needs --watch");
    }
    int reports = count == null ? (watch ? Integer.MAX_VALUE : 1) : TableCommand.inRange("--count", count, 1, 1_000_000);
    for (int i = 0; i < reports; i++) {
      if (i > 0) {
        spec.commandLine().getOut().println();
      }
      report(between);
      spec.commandLine().getOut().flush();
    }
    return Main.EXIT_OK;
  }

  /** One report: two readings {@code between} apart, then the busiest shards and the findings. */
  private void report(Duration between) throws InterruptedException {
    Coordinator c = ClusterOptions.coordinator(zk.zk);
    List<NodeStatsResponse> first = new ArrayList<>();
    List<NodeStatsResponse> second = new ArrayList<>();
    long firstAt;
    long secondAt;
    ShardMap map;
    try (Peers peers = new Peers(16 << 20)) {
      List<String> addresses = c.liveNodesNow().values().stream().map(NodeInfo::getAddress).toList();
      firstAt = System.nanoTime();
      addresses.forEach(a -> first.add(stats(peers, a, 0)));
      Thread.sleep(between.toMillis());
      secondAt = System.nanoTime();
      addresses.forEach(a -> second.add(stats(peers, a, keys)));
      map = c.readMap().map();
    }
    Map<String, HotspotReport.TableShape> tables = new TreeMap<>();
    map.tables().values().forEach(t -> tables.put(t.name(),
        new HotspotReport.TableShape(t.shards().size(), t.layout().strategy().name().toLowerCase(Locale.ROOT))));
    List<HotspotReport.Shard> all = HotspotReport.shards(first, second, tables, (secondAt - firstAt) / 1e9);
    List<HotspotReport.Shard> top = all.subList(0, Math.min(shards, all.size()));
    List<String> findings = HotspotReport.findings(all);
    PrintWriter out = spec.commandLine().getOut();
    if (output == OutputFormat.json) {
      ObjectNode root = Output.object().put("intervalSeconds", between.toMillis() / 1000.0);
      ArrayNode array = root.putArray("shards");
      for (HotspotReport.Shard s : top) {
        ObjectNode o = array.addObject().put("shard", s.name()).put("owner", s.owner()).put("readsPerSecond", s.readsPerSecond())
            .put("writesPerSecond", s.writesPerSecond()).put("timesTableAverage", s.timesAverage())
            .put("writeShareOfTable", s.writeShareOfTable()).put("risingWriteShare", s.risingShare()).put("highestKey", s.highestKey())
            .put("trend", HotspotReport.trend(s.shareHistory()));
        ArrayNode shares = o.putArray("shareOfTableBySecond");
        for (double share : s.shareHistory()) {
          shares.add(Math.round(share * 1000) / 1000.0);
        }
        ArrayNode ks = o.putArray("keys");
        s.keys().forEach(k -> ks.addObject().put("key", k.key()).put("share", k.share()).put("guaranteedShare", k.guaranteedShare())
            .put("writeShare", k.writeShare()));
      }
      ArrayNode f = root.putArray("findings");
      findings.forEach(f::add);
      Output.json(out, root);
      return;
    }
    List<List<String>> rows = new ArrayList<>();
    for (HotspotReport.Shard s : top) {
      rows.add(List.of(s.name(), s.owner(), String.format(Locale.ROOT, "%,.0f", s.requestsPerSecond()),
          String.format(Locale.ROOT, "%,.0f / %,.0f", s.readsPerSecond(), s.writesPerSecond()), String.format(Locale.ROOT, "%.1f×", s.timesAverage()),
          hottest(s)));
    }
    Output.table(out, List.of("SHARD", "OWNER", "REQUESTS/S", "READS/S / WRITES/S", "× TABLE AVG", "HOTTEST KEYS (share of the shard's requests)"), rows);
    out.println();
    findings.forEach(out::println);
  }

  @Command(name = "fix", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Turn a hotspot's remedy into a plan: isolate KEY of TABLE in a shard of its own.",
          "The shard is cut at the key and just after it (only the map changes), and the key's shard moves to the least-loaded",
          "node (only nodes labelled role=hot, if any are) when that node would still serve fewer requests than the key's node",
          "does now. The plan shows its forecast; it waits for 'shardwise rebalance approve ID' unless --approve is given.",
          "Range and hashrange tables (and ring or tokens tables made of hash ranges)."})
  static final class Fix implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;

    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Parameters(index = "1", paramLabel = "KEY", description = "The hot partition key, as shardwise hotspots names it.") String key;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "How KEY is written: text (UTF-8), hex or base64."
        + " Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Option(names = "--to", paramLabel = "NODE", description = "Move the key's shard to NODE (default: the least-loaded node that helps).")
    String to;

    @Option(names = "--approve", description = "Approve the plan at once: the balancer runs it.")
    boolean approve;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      byte[] partitionKey = format.parse(key);
      io.shardwise.server.balance.Rebalancing rebalancing = new io.shardwise.server.balance.Rebalancing(ClusterOptions.coordinator(zk.zk));
      io.shardwise.proto.v1.PlanRecord plan;
      try (Peers peers = new Peers(16 << 20)) {
        plan = rebalancing.isolate(peers, table, partitionKey, java.util.Optional.ofNullable(to).map(io.shardwise.core.map.NodeId::of),
            approve);
      }
      io.shardwise.proto.v1.ResizeRecord r = plan.getResizes(0);
      PrintWriter out = spec.commandLine().getOut();
      if (output == OutputFormat.json) {
        Output.json(out, Output.object().put("plan", plan.getId()).put("state", plan.getState().name().toLowerCase(Locale.ROOT))
            .put("table", r.getTable()).put("shard", r.getNumber()).put("owner", r.getOwner()).put("to", r.getIsolateTo())
            .put("keyRequestsPerSecond", r.getKeyRequestsPerSecond()).put("shardRequestsPerSecond", r.getRequestsPerSecond())
            .put("fromRequestsPerSecond", r.getFromRequestsPerSecond()).put("toRequestsPerSecond", r.getToRequestsPerSecond())
            .put("why", r.getWhy()));
        return Main.EXIT_OK;
      }
      out.println("plan " + plan.getId() + " (" + io.shardwise.server.balance.Rebalancing.describe(plan.getState()) + "): " + r.getWhy());
      out.println(approve ? "the balancer runs it now; follow it with: shardwise rebalance status --wait"
          : "run it with: shardwise rebalance approve " + plan.getId() + "   (or reject it: shardwise rebalance reject " + plan.getId() + ")");
      return Main.EXIT_OK;
    }
  }

  /** TABLE KEY [--format F]: the key a salting command is about. */
  static final class SaltedKeyArgs {
    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Parameters(index = "1", paramLabel = "KEY", description = "The counter's partition key.") String key;

    @Option(names = "--sort-key", paramLabel = "SK") String sortKey;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "How KEY is written: text (UTF-8), hex or base64."
        + " Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    io.shardwise.core.key.Key key() {
      byte[] pk = format.parse(key);
      return sortKey == null ? io.shardwise.core.key.Key.of(pk) : io.shardwise.core.key.Key.of(pk, sortKey.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  @Command(name = "salt", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Salt a write-hot counter (kv incr) or list (kv append) into N sub-keys on other shards.",
          "Increments (appends) go to one sub-key at random and reads merge them: writes to the key are divided by N, reads of it",
          "multiplied by N+1. Tables placed by hash only (a range table keeps the sub-keys beside the key: isolate it instead).",
          "The key's value says whether it is a list. 'hotspots unsalt' undoes it; no write is lost or counted twice either way."})
  static final class Salt implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;
    @Mixin SaltedKeyArgs args;

    @Option(names = "--fanout", paramLabel = "N", description = "Sub-keys, 2 to 64. Default: as the balancer salts, 4 per live node.")
    Integer fanout;

    @Override
    public Integer call() {
      io.shardwise.proto.v1.SaltedKey k;
      try (Peers peers = new Peers(16 << 20)) {
        Coordinator c = ClusterOptions.coordinator(zk.zk);
        int n = fanout != null ? fanout : io.shardwise.server.hot.Salting.defaultFanout(c.liveNodesNow().size());
        k = new io.shardwise.server.hot.Salting(c, peers).promote(args.table, args.key(), n,
            "operator: shardwise hotspots salt");
      }
      spec.commandLine().getOut().printf(Locale.ROOT, "%s '%s' of %s is %s (generation %d): each write now goes to one of them,"
          + " each read reads %d keys%n", k.getList() ? "list" : "counter", args.key, args.table, io.shardwise.server.hot.Salting.describe(k),
          k.getGeneration(), k.getFanout() + 1);
      return Main.EXIT_OK;
    }
  }

  @Command(name = "unsalt", mixinStandardHelpOptions = true,
      description = {"Demote a salted counter or list: its sub-keys are sealed and folded back into the key, which is one value again."})
  static final class Unsalt implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;
    @Mixin SaltedKeyArgs args;

    @Override
    public Integer call() {
      try (Peers peers = new Peers(16 << 20)) {
        new io.shardwise.server.hot.Salting(ClusterOptions.coordinator(zk.zk), peers).demote(args.table, args.key(),
            "operator: shardwise hotspots unsalt");
      }
      spec.commandLine().getOut().printf(Locale.ROOT, "key '%s' of %s is one value again%n", args.key, args.table);
      return Main.EXIT_OK;
    }
  }

  @Command(name = "salted", mixinStandardHelpOptions = true, description = "List the salted keys (and those being salted or demoted).")
  static final class Salted implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin RebalanceCommand.Zk zk;

    @Option(names = "--table", paramLabel = "TABLE", description = "Only this table's.") String table;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      List<io.shardwise.proto.v1.SaltedKey> keys = io.shardwise.server.hot.Salting.list(c, c.readMap().map(), table == null ? "" : table);
      PrintWriter out = spec.commandLine().getOut();
      if (output == OutputFormat.json) {
        ArrayNode array = Output.JSON.createArrayNode();
        for (var k : keys) {
          array.addObject().put("table", k.getTable()).put("key", ValueFormat.escaped(k.getKey().getPartitionKey().toByteArray()))
              .put("kind", k.getList() ? "list" : "counter").put("state", k.getState().name().toLowerCase(Locale.ROOT)).put("fanout", k.getFanout()).put("generation", k.getGeneration())
              .put("sinceMillis", k.getSinceMillis()).put("why", k.getWhy());
        }
        Output.json(out, array);
        return Main.EXIT_OK;
      }
      if (keys.isEmpty()) {
        out.println("no salted keys" + (table == null ? "" : " in " + table));
        return Main.EXIT_OK;
      }
      List<List<String>> rows = new ArrayList<>();
      for (var k : keys) {
        rows.add(List.of(k.getTable(), ValueFormat.escaped(k.getKey().getPartitionKey().toByteArray()), k.getList() ? "list" : "counter",
            k.getState().name().toLowerCase(Locale.ROOT), Integer.toString(k.getFanout()), Integer.toString(k.getGeneration()),
            java.time.Instant.ofEpochMilli(k.getSinceMillis()).toString(), k.getWhy()));
      }
      Output.table(out, List.of("TABLE", "KEY", "KIND", "STATE", "SUB-KEYS", "GENERATION", "SINCE", "WHY"), rows);
      return Main.EXIT_OK;
    }
  }

  private String hottest(HotspotReport.Shard s) {
    List<String> parts = new ArrayList<>();
    for (HotspotReport.Key k : s.keys()) {
      parts.add(String.format(Locale.ROOT, "%s %.0f%%", k.key(), 100 * k.share()));
    }
    return parts.isEmpty() ? "-" : String.join(", ", parts);
  }

  private static NodeStatsResponse stats(Peers peers, String address, int hotKeys) {
    return AdminServiceGrpc.newBlockingStub(peers.channel(address)).withDeadlineAfter(10, TimeUnit.SECONDS)
        .nodeStats(NodeStatsRequest.newBuilder().setSkipSizes(true).setHotKeys(hotKeys)
            .setHistorySeconds(hotKeys > 0 ? HotspotReport.HISTORY_SECONDS : 0).build());
  }
}
