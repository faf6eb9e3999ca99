package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.GlobalIndexMode;
import io.shardwise.client.IndexInfo;
import io.shardwise.client.ShardwiseClient;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise index create|drop|status}: secondary indexes of a table of JSON documents. */
@Command(name = "index", mixinStandardHelpOptions = true,
    description = "Secondary indexes of a table created with --format json: queries on an indexed field read its entries, not every row.",
    subcommands = {IndexCommand.Create.class, IndexCommand.Drop.class, IndexCommand.Status.class, IndexCommand.Check.class})
final class IndexCommand {

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = {"Create an index on a field (a path such as owner.id), built online.",
          "Writes maintain it at once, every node indexes the rows it already holds, and queries use it once it is ready",
          "('index status'). A local index keeps its entries beside each shard's rows, written in the same atomic batch:",
          "a query without the partition key still asks every shard. A global index keeps them in a table of its own,",
          "partitioned by value: a query of one value reads one index shard, then fetches the rows. Kept async (the",
          "default: a write commits in its row's shard alone and its entry follows, lag in 'index status'; query",
          "--consistent waits for it) or --sync (each write a transaction with its entries: never stale, a two-phase commit)."})
  static final class Create implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Parameters(index = "1", paramLabel = "FIELD") String field;

    @picocli.CommandLine.ArgGroup(exclusive = true)
    Scope scope = new Scope();

    static final class Scope {
      @Option(names = "--local", description = "Entries beside each shard's rows, in the same atomic batch (the default).")
      boolean local;

      @Option(names = "--global", description = {"Entries in a table of their own (TABLE.FIELD), partitioned by the value: a query of one",
          "value reads one index shard; every write of a row is a transaction with its entries."})
      boolean global;
    }

    @Option(names = "--strategy", paramLabel = "hashrange|range",
        description = "A global index's partitioning by value: hashrange (default; values spread) or range (values in order).")
    String strategy;

    @Option(names = "--shards", paramLabel = "N", description = "A global index's shards (hashrange; default one per live node).")
    int shards;

    @Option(names = "--covering", paramLabel = "F1,F2", split = ",", description = {"A global index whose entries also hold these fields:",
        "a query needing only them and the indexed field (query --fields) is answered from the index, no row fetched."})
    List<String> covering = new ArrayList<>();

    @picocli.CommandLine.ArgGroup(exclusive = true)
    Mode mode = new Mode();

    static final class Mode {
      @Option(names = "--async", description = "A global index kept asynchronously (the default): writes cost their own shard; the index lags.")
      boolean async;

      @Option(names = "--sync", description = "A global index kept in sync: each write a transaction with its entries; never stale.")
      boolean sync;
    }

    @Option(names = "--wait", paramLabel = "DURATION", description = "Wait until the index is ready (ms, s, m), printing its progress.")
    String wait;

    @Override
    public Integer call() throws InterruptedException {
      ShardwiseClient client = common.cluster.connect();
      if (!scope.global && (strategy != null || shards != 0 || mode.async || mode.sync || !covering.isEmpty())) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--strategy, --shards, --async, --sync and --covering are for a"
            + " global index (--global)");
      }
      List<IndexInfo> indexes = scope.global
          ? client.createGlobalIndex(table, field, mode.sync ? GlobalIndexMode.SYNC : GlobalIndexMode.ASYNC, strategy, shards, covering)
          : client.createIndex(table, field);
      String kind = scope.global ? "global" : "local";
      if (wait != null) {
        indexes = awaitReady(client, spec.commandLine().getErr(), table, field, kind, Durations.parse("--wait", wait));
      }
      print(spec.commandLine().getOut(), common.output, table, indexes);
      return indexes.stream().filter(i -> i.field().equals(field) && i.scope().equals(kind)).allMatch(IndexInfo::ready) || wait == null
          ? Main.EXIT_OK : Main.EXIT_UNAVAILABLE;
    }
  }

  @Command(name = "drop", mixinStandardHelpOptions = true,
      description = "Drop the index on a field: queries stop using it at once; each node deletes its entries.")
  static final class Drop implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Parameters(index = "1", paramLabel = "FIELD") String field;

    @Override
    public Integer call() {
      print(spec.commandLine().getOut(), common.output, table, common.cluster.connect().dropIndex(table, field));
      return Main.EXIT_OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "A table's indexes: building or ready, replicas built, rows indexed, nodes still building.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Override
    public Integer call() {
      print(spec.commandLine().getOut(), common.output, table, common.cluster.connect().indexes(table));
      return Main.EXIT_OK;
    }
  }

  @Command(name = "check", mixinStandardHelpOptions = true,
      description = {"The consistency checker: each index of the table compared with the rows (all read).",
          "Each local index on every node against the node's rows; each ready global index's table against every row (NODE 'global').",
          "Exit code 0 when every entry matches a row and every row has its entries, on every node; 1 otherwise."})
  static final class Check implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "TABLE") String table;

    @Override
    public Integer call() {
      io.shardwise.client.IndexCheck.Report report = common.cluster.connect().checkIndexes(table);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ObjectNode o = Output.object().put("table", table).put("exact", report.exact());
        ArrayNode list = o.putArray("checks");
        for (io.shardwise.client.IndexCheck c : report.checks()) {
          list.addObject().put("node", c.node()).put("field", c.field()).put("rows", c.rows()).put("entries", c.entries())
              .put("missing", c.missing()).put("extra", c.extra());
        }
        report.unreachable().forEach(o.putArray("unreachable")::add);
        Output.json(out, o);
      } else {
        List<List<String>> rows = new ArrayList<>();
        for (io.shardwise.client.IndexCheck c : report.checks()) {
          rows.add(List.of(c.node(), c.field(), Output.number(c.rows()), Output.number(c.entries()), Output.number(c.missing()),
              Output.number(c.extra()), c.exact() ? "exact" : "MISMATCH"));
        }
        Output.table(out, List.of("NODE", "FIELD", "ROWS", "ENTRIES", "MISSING", "EXTRA", ""), rows);
        out.println(report.exact() ? "every index exact on every node"
            : "NOT EXACT" + (report.unreachable().isEmpty() ? "" : "; not checked (no answer): " + String.join(", ", report.unreachable())));
      }
      return report.exact() ? Main.EXIT_OK : 1;
    }
  }

  private static List<IndexInfo> awaitReady(ShardwiseClient client, PrintWriter err, String table, String field, String scope,
      Duration atMost) throws InterruptedException {
    long deadline = System.nanoTime() + atMost.toNanos();
    String last = "";
    while (true) {
      List<IndexInfo> indexes = client.indexes(table);
      IndexInfo mine = indexes.stream().filter(i -> i.field().equals(field) && i.scope().equals(scope)).findFirst().orElse(null);
      if (mine == null || mine.ready() || System.nanoTime() > deadline) {
        return indexes;
      }
      String progress = String.format(java.util.Locale.ROOT, "%s: %d of %d replicas built, %,d rows indexed", field, mine.replicasBuilt(),
          mine.replicas(), mine.rowsIndexed());
      if (!progress.equals(last)) {
        err.println(progress);
        err.flush();
        last = progress;
      }
      Thread.sleep(200); // a poll of the cluster: nothing here to be told by
    }
  }

  private static void print(PrintWriter out, OutputFormat format, String table, List<IndexInfo> indexes) {
    if (format == OutputFormat.json) {
      ObjectNode o = Output.object().put("table", table);
      ArrayNode list = o.putArray("indexes");
      for (IndexInfo i : indexes) {
        ObjectNode n = list.addObject().put("id", i.id()).put("field", i.field()).put("scope", i.scope()).put("state", i.state())
            .put("replicas", i.replicas()).put("replicas_built", i.replicasBuilt()).put("rows_indexed", i.rowsIndexed());
        if (!i.indexTable().isEmpty()) {
          n.put("index_table", i.indexTable()).put("mode", i.mode());
        }
        if ("async".equals(i.mode())) {
          n.put("pending_rows", i.pendingRows()).put("lag_millis", i.lagMillis());
        }
        if (!i.covering().isEmpty()) {
          i.covering().forEach(n.putArray("covering")::add);
        }
        i.buildingOn().forEach(n.putArray("building_on")::add);
      }
      Output.json(out, o);
      return;
    }
    List<List<String>> rows = new ArrayList<>();
    for (IndexInfo i : indexes) {
      rows.add(List.of(i.field(), (i.indexTable().isEmpty() ? i.scope() : i.scope() + " " + i.mode() + " (" + i.indexTable() + ")")
          + (i.covering().isEmpty() ? "" : ", covering " + String.join(",", i.covering())), i.state(),
          i.replicasBuilt() + " of " + i.replicas(), Output.number(i.rowsIndexed()),
          "async".equals(i.mode()) ? String.format(java.util.Locale.ROOT, "%,d rows, %,d ms", i.pendingRows(), i.lagMillis()) : "-",
          i.buildingOn().isEmpty() ? "-" : String.join(", ", i.buildingOn())));
    }
    Output.table(out, List.of("FIELD", "SCOPE", "STATE", "REPLICAS BUILT", "ROWS INDEXED", "LAG", "BUILDING ON"), rows);
    out.println(indexes.size() + (indexes.size() == 1 ? " index" : " indexes") + " on table " + table);
  }
}
