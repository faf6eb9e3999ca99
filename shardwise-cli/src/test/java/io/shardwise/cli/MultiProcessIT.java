package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nodes and a router as separate JVMs, started with the real {@code shardwise node} and
 * {@code shardwise router} commands against one ZooKeeper, and driven by the command line as an
 * operator would: a few commands as processes of their own, many from one {@code shardwise shell}
 * process, and the rest in this JVM ({@link #cli}).
 */
@Tag("integration")
class MultiProcessIT {

  @TempDir Path dir;
  private EmbeddedZooKeeper zk;
  private ServerProcesses processes;

  private static List<String> java(String... args) {
    return ServerProcesses.java(args);
  }

  @BeforeEach
  void processes() {
    processes = new ServerProcesses(dir);
  }

  private Process startServer(String name, String... args) throws Exception {
    return processes.start(name, args);
  }

  private String servingAddress(String name) throws IOException {
    return processes.address(name);
  }

  /**
   * Runs a command of the command line against the node processes, in this JVM, as a process of its
   * own would: its own ZooKeeper session and clients, closed when it ends, and its exit code. A JVM
   * start per command cost this test about two seconds each (some 80 of them); the launcher, the
   * process's exit code and its streams are what {@link #cliProcess} and {@link ShardwiseJarIT} test.
   */
  private ServerProcesses.Result cli(String... args) {
    List<String> command = new ArrayList<>(List.of(args));
    command.addAll(List.of("--zk", zk.connectString()));
    try {
      SimulateCommandTest.Run r = SimulateCommandTest.run(command.toArray(new String[0]));
      return new ServerProcesses.Result(r.exit(), r.out(), r.err());
    } finally {
      Session.current().close();
    }
  }

  /** Runs a command of the command line as a process of its own (the {@code shardwise} jar in a new JVM). */
  private ServerProcesses.Result cliProcess(String... args) throws IOException, InterruptedException {
    return processes.cli(zk.connectString(), args);
  }

  @AfterEach
  void stop() throws InterruptedException {
    processes.close();
    if (zk != null) {
      zk.close();
    }
  }

  @Test
  void separateNodeProcessesServeTheCliInEveryRoutingMode() throws Exception {
    zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    int consolePort;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      consolePort = probe.getLocalPort();
    }
    java.util.Map<String, String[]> nodes = new java.util.LinkedHashMap<>();
    for (int i = 1; i <= 3; i++) {
      List<String> args = new ArrayList<>(List.of("node", "--zk", zk.connectString(), "--data-dir", dir.resolve("n" + i).toString(), "--id", "n" + i));
      if (i == 1) {
        args.addAll(List.of("--console-port", String.valueOf(consolePort))); // n1 also serves the web console
      }
      nodes.put("n" + i, args.toArray(new String[0]));
    }
    processes.startAll(nodes); // at once: a JVM start each, not three in a row
    startServer("router", "router", "--zk", zk.connectString());

    ServerProcesses.Result created = cliProcess("table", "create", "orders", "--strategy", "hashrange", "--shards", "6", "--replicas", "1");
    assertThat(created.exit()).as(created.err()).isZero();
    // Each node's first start grants its replicas to its store (map epochs 1-3); the table comes next.
    assertThat(created.out()).contains("table orders (id 4): hashrange");

    // Writes and reads in every routing mode, from one shell process (one JVM, one client per mode).
    String[] modes = {"client", "router", "node"};
    List<String> commands = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      commands.add("kv put orders order-" + i + " amount=" + i + " --via " + modes[i % 3]);
    }
    for (String mode : modes) {
      commands.add("kv get orders order-" + (mode.equals("node") ? 7 : 4) + " --via " + mode + " -o json");
    }
    ServerProcesses.Result shell = processes.shell(zk.connectString(), commands.toArray(String[]::new));
    assertThat(shell.exit()).as(shell.out() + shell.err()).isZero();
    assertThat(shell.out()).as(shell.out()).doesNotContain("exit code").contains("\"value\" : \"amount=4\"")
        .contains("\"value\" : \"amount=7\"").containsPattern("\\(\\d+\\.\\d ms\\)");
    // One of them as a process of its own in each mode.
    for (String mode : modes) {
      ServerProcesses.Result get = cliProcess("kv", "get", "orders", "order-4", "--via", mode);
      assertThat(get.exit()).as(get.err()).isZero();
      assertThat(get.out().strip()).isEqualTo("amount=4");
    }
    // Bytes that are not text: written as hex, shown escaped, in JSON as base64, never lost.
    ServerProcesses.Result binary = cli("kv", "put", "orders", "blob", "ff00fe41", "--format", "hex");
    assertThat(binary.exit()).as(binary.err()).isZero();
    assertThat(cli("kv", "get", "orders", "blob").out().strip()).isEqualTo("\\xff\\x00\\xfeA");
    assertThat(new ObjectMapper().readTree(cli("kv", "get", "orders", "blob", "-o", "json").out()).get("value_base64").asText())
        .isEqualTo("/wD+QQ==");
    assertThat(cli("kv", "del", "orders", "blob").exit()).isZero();
    // Counters and lists: merged at the owner, read back whole.
    assertThat(cli("kv", "incr", "orders", "views", "5").exit()).isZero();
    assertThat(cli("kv", "incr", "orders", "views", "-2").exit()).isZero();
    assertThat(cli("kv", "counter", "orders", "views").out().strip()).isEqualTo("3");
    assertThat(cli("kv", "append", "orders", "log", "created").exit()).isZero();
    assertThat(cli("kv", "append", "orders", "log", "paid").exit()).isZero();
    assertThat(cli("kv", "list", "orders", "log").out().lines()).containsExactly("created", "paid");
    ServerProcesses.Result notAList = cli("kv", "append", "orders", "views", "x");
    assertThat(notAList.exit()).as(notAList.err()).isNotZero();
    assertThat(notAList.err()).contains("not a list");
    assertThat(cli("kv", "del", "orders", "views").exit()).isZero();
    assertThat(cli("kv", "del", "orders", "log").exit()).isZero();

    // A transaction across shards from a file, read back as of one moment, looked up by its id.
    Path txn = dir.resolve("transfer.json");
    java.nio.file.Files.writeString(txn, "{\"items\": [{\"op\": \"put\", \"table\": \"orders\", \"key\": \"acct-a\", \"value\": \"90\"},"
        + " {\"op\": \"put\", \"table\": \"orders\", \"key\": \"acct-b\", \"value\": \"110\", \"if\": \"absent\"}]}");
    ServerProcesses.Result ran = cli("txn", "run", txn.toString(), "-o", "json");
    assertThat(ran.exit()).as(ran.err()).isZero();
    JsonNode outcome = new ObjectMapper().readTree(ran.out());
    assertThat(outcome.get("outcome").asText()).isEqualTo("COMMITTED");
    ServerProcesses.Result both = cli("txn", "get", "orders/acct-a", "orders/acct-b");
    assertThat(both.exit()).as(both.err()).isZero();
    assertThat(both.out()).contains("90").contains("110");
    assertThat(cli("txn", "status", outcome.get("txn_id").asText()).out()).startsWith("COMMITTED");
    ServerProcesses.Result again = cli("txn", "run", txn.toString());
    assertThat(again.exit()).as("acct-b is no longer absent: cancelled").isEqualTo(Main.EXIT_CONFLICT);
    assertThat(again.out()).contains("CANCELLED").contains("item 1: CONDITION_FAILED");
    Path undo = dir.resolve("undo.json");
    java.nio.file.Files.writeString(undo, "{\"items\": [{\"op\": \"delete\", \"table\": \"orders\", \"key\": \"acct-a\", \"if\": \"exists\"},"
        + " {\"op\": \"delete\", \"table\": \"orders\", \"key\": \"acct-b\", \"if\": 1}]}");
    ServerProcesses.Result undone = cli("txn", "run", undo.toString());
    assertThat(undone.exit()).as(undone.out() + undone.err()).isZero();

    // Exit codes a script can tell apart (see Main): 3 not found, 4 conflict.
    ServerProcesses.Result missing = cli("kv", "get", "orders", "order-99");
    assertThat(missing.exit()).isEqualTo(Main.EXIT_NOT_FOUND);
    assertThat(missing.err()).contains("no key 'order-99' in table orders");
    ServerProcesses.Result deleteMissing = cli("kv", "del", "orders", "order-99");
    assertThat(deleteMissing.exit()).as(deleteMissing.err()).isEqualTo(Main.EXIT_NOT_FOUND);
    ServerProcesses.Result noTable = cliProcess("kv", "get", "no-such-table", "k");
    assertThat(noTable.exit()).as(noTable.err()).isEqualTo(Main.EXIT_NOT_FOUND);
    ServerProcesses.Result mismatch = cli("kv", "put", "orders", "order-1", "x", "--if-version", "99");
    assertThat(mismatch.exit()).as(mismatch.err()).isEqualTo(Main.EXIT_CONFLICT);
    ServerProcesses.Result exists = cli("table", "create", "orders", "--strategy", "hashrange", "--shards", "6", "--replicas", "1");
    assertThat(exists.exit()).as(exists.err()).isEqualTo(Main.EXIT_CONFLICT);

    ServerProcesses.Result status = cli("cluster", "status", "--output", "json");
    assertThat(status.exit()).as(status.err()).isZero();
    JsonNode json = new ObjectMapper().readTree(status.out());
    assertThat(json.get("epoch").asLong()).isEqualTo(4);
    assertThat(json.get("nodes")).hasSize(3).allMatch(n -> n.get("up").asBoolean());
    long keys = 0;
    for (JsonNode n : json.get("nodes")) {
      keys += n.get("keys").asLong();
    }
    assertThat(keys).as("the nine orders (a transaction's record is not a key)").isEqualTo(9);
    assertThat(json.get("shards")).hasSize(6);
    // As text: a summary, one line per node and per table, not every shard.
    ServerProcesses.Result summary = cli("cluster", "status");
    assertThat(summary.exit()).as(summary.err()).isZero();
    assertThat(summary.out()).contains("map epoch 4, 3 nodes, 1 table").contains("--list-shards").doesNotContain("orders/5");
    assertThat(summary.out().lines().filter(l -> l.startsWith("orders "))).hasSize(1);

    // The console n1 serves sees the same cluster.
    java.net.http.HttpResponse<String> console = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + consolePort + "/api/v1/cluster")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(console.statusCode()).isEqualTo(200);
    JsonNode view = new ObjectMapper().readTree(console.body());
    assertThat(view.get("nodes").asInt()).isEqualTo(3);
    assertThat(view.get("shards").asInt()).isEqualTo(6);

    // The planner's preview: balanced as it is; draining n1 moves exactly n1's two shards.
    ServerProcesses.Result plan = cli("rebalance", "plan", "--preview", "--output", "json");
    assertThat(plan.exit()).as(plan.err()).isZero();
    JsonNode balanced = new ObjectMapper().readTree(plan.out());
    assertThat(balanced.get("moves")).isEmpty();
    assertThat(balanced.get("notes").get(0).asText()).isEqualTo("table orders: already balanced");
    ServerProcesses.Result whatIf = cli("rebalance", "plan", "--drain", "n1", "--output", "json");
    assertThat(whatIf.exit()).as(whatIf.err()).isZero();
    JsonNode moves = new ObjectMapper().readTree(whatIf.out()).get("moves");
    assertThat(moves).hasSize(2).allMatch(m -> m.get("from").asText().equals("n1") && !m.get("to").asText().equals("n1"));

    // Draining for real, suggest mode (the default): the balancer proposes, the operator approves,
    // the shards move between the node processes, and every key is still there.
    ServerProcesses.Result drain = cli("node", "drain", "n1");
    assertThat(drain.exit()).as(drain.err()).isZero();
    String id = null;
    for (int i = 0; i < 120 && id == null; i++) {
      JsonNode st = new ObjectMapper().readTree(cli("rebalance", "status", "--output", "json").out());
      if (st.has("plan") && st.get("plan").get("state").asText().equals("pending")) {
        id = st.get("plan").get("id").asText();
      } else {
        Thread.sleep(250);
      }
    }
    assertThat(id).as("the balancer proposed a plan").isNotNull();
    ServerProcesses.Result approve = cli("rebalance", "approve", id);
    assertThat(approve.exit()).as(approve.err()).isZero();
    ServerProcesses.Result await = cli("rebalance", "status", id, "--wait", "--timeout", "2m");
    assertThat(await.exit()).as(await.out() + await.err()).isZero();
    assertThat(await.out()).contains("done");
    JsonNode after = new ObjectMapper().readTree(cli("cluster", "status", "--output", "json").out());
    for (JsonNode n : after.get("nodes")) {
      assertThat(n.get("draining").asBoolean()).as(n.toString()).isEqualTo(n.get("id").asText().equals("n1"));
      if (n.get("id").asText().equals("n1")) {
        assertThat(n.get("shards").asInt()).isZero();
      }
    }
    List<String> gets = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      gets.add("kv get orders order-" + i);
    }
    ServerProcesses.Result read = processes.shell(zk.connectString(), gets.toArray(String[]::new));
    assertThat(read.out()).as(read.out()).doesNotContain("exit code");
    for (int i = 0; i < 9; i++) {
      assertThat(read.out()).contains("amount=" + i);
    }
    ServerProcesses.Result stale = cli("rebalance", "approve", id);
    assertThat(stale.exit()).isEqualTo(1);
    assertThat(stale.err()).contains("not pending");

    JsonNode metrics = new ObjectMapper().readTree(cli("cluster", "metrics", "--output", "json").out());
    double movedBytes = 0;
    for (JsonNode m : metrics.get("n1")) {
      if (m.get("name").asText().equals("shardwise.move.bytes")) {
        movedBytes = m.get("value").asDouble();
      }
    }
    assertThat(movedBytes).as("n1 sent its shards").isPositive();

    // A per-table mode, shown with the settings, and back to the cluster's mode.
    ServerProcesses.Result pin = cli("rebalance", "mode", "manual", "--table", "orders");
    assertThat(pin.exit()).as(pin.err()).isZero();
    assertThat(pin.out()).contains("mode suggest").contains("tables: orders manual");
    ServerProcesses.Result unpin = cli("rebalance", "mode", "default", "--table", "orders");
    assertThat(unpin.out()).doesNotContain("tables:");
    ServerProcesses.Result bad = cli("rebalance", "mode", "--table", "orders");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).contains("--table needs a MODE");

    // A dropped table's data waits in its owners' trash, and comes back with it.
    ServerProcesses.Result drop = cli("table", "drop", "orders");
    assertThat(drop.out()).contains("table undrop orders");
    JsonNode trash = null;
    for (long deadline = System.nanoTime() + 30_000_000_000L; System.nanoTime() < deadline; ) { // each try is a CLI process
      trash = new ObjectMapper().readTree(cli("node", "trash", "list", "--output", "json").out());
      if (keysOfKind(trash, "table_dropped") == 9) {
        break;
      }
    }
    assertThat(keysOfKind(trash, "table_dropped")).as(trash.toString()).isEqualTo(9);
    long entries = 0;
    for (JsonNode e : trash.get("entries")) {
      entries += e.get("kind").asText().equals("table_dropped") ? 1 : 0;
    }
    JsonNode trashed = new ObjectMapper().readTree(cli("cluster", "status", "--output", "json").out());
    assertThat(trashed.get("nodes").findValues("trash_entries").stream().mapToLong(JsonNode::asLong).sum()).isGreaterThanOrEqualTo(entries);
    ServerProcesses.Result undrop = cli("table", "undrop", "orders");
    assertThat(undrop.exit()).as(undrop.err()).isZero();
    assertThat(undrop.out()).contains("undropped orders").contains(entries + " shards' data found");
    String scanned = cli("kv", "scan", "orders", "--all").out();
    for (int i = 0; i < 9; i++) {
      assertThat(scanned).contains("amount=" + i);
    }

    // A range table that starts with one shard is split and merged by the map alone.
    assertThat(cli("table", "create", "log", "--strategy", "range", "--shards", "1", "--replicas", "1").exit()).isZero();
    for (String k : List.of("apple", "mango", "zebra")) {
      assertThat(cli("kv", "put", "log", k, "fruit-" + k).exit()).isZero();
    }
    ServerProcesses.Result byHash = cli("table", "split", "log", "--shard", "0", "--at-hash", "5");
    assertThat(byHash.exit()).isEqualTo(2);
    assertThat(byHash.err()).contains("splits at a partition key");
    ServerProcesses.Result split = cli("table", "split", "log", "--shard", "0"); // by size: the owner finds the key
    assertThat(split.exit()).as(split.err()).isZero();
    assertThat(split.out()).contains("2 shards");
    ServerProcesses.Result upper = cli("kv", "scan", "log", "--from", "m");
    assertThat(upper.out()).contains("mango").contains("zebra").doesNotContain("apple");
    ServerProcesses.Result merged = cli("table", "merge", "log", "--shard", "1");
    assertThat(merged.exit()).as(merged.err()).isZero();
    assertThat(merged.out()).contains("1 shard ");
    assertThat(cli("kv", "scan", "log", "--all").out()).contains("fruit-apple").contains("fruit-mango").contains("fruit-zebra");
    ServerProcesses.Result sized = cli("rebalance", "split-size", "64MiB", "--table", "log");
    assertThat(sized.exit()).as(sized.err()).isZero();
    assertThat(sized.out()).contains("split size 512 MiB (log 64 MiB)");
    ServerProcesses.Result load = cli("rebalance", "split-load", "800", "--window", "20s");
    assertThat(load.exit()).as(load.err()).isZero();
    assertThat(load.out()).contains("split rate 800 requests/s over 20 s");
    ServerProcesses.Result merge = cli("rebalance", "merge", "0.2", "--window", "2m");
    assertThat(merge.exit()).as(merge.err()).isZero();
    assertThat(merge.out()).contains("merge under 20% of both over 120 s");
    ServerProcesses.Result described = cli("table", "describe", "log");
    assertThat(described.out()).contains("resize policy: splits past 64.0 MiB or 800 requests/s for 20 s; merges neighbours the balancer"
        + " split under 20% of that for 120 s (mode suggest: the balancer proposes a plan to approve)");
    ServerProcesses.Result presplit = cli("table", "presplit", "log", "--shards", "4");
    assertThat(presplit.exit()).as(presplit.err()).isZero();
    assertThat(presplit.out()).contains("the table has 3 shards (fewer than asked: too few partition keys to cut at)");

    // A table of JSON documents: a value that is not one is refused, naming the byte.
    ServerProcesses.Result docs = cli("table", "create", "docs", "--strategy", "hashrange", "--shards", "2", "--replicas", "1", "--format",
        "json");
    assertThat(docs.exit()).as(docs.err()).isZero();
    assertThat(docs.out()).contains("json values");
    assertThat(cli("kv", "put", "docs", "car-1", "{\"color\": \"red\"}").exit()).isZero();
    ServerProcesses.Result notADocument = cli("kv", "put", "docs", "car-2", "{\"color\": red}");
    assertThat(notADocument.exit()).as(notADocument.err()).isEqualTo(Main.EXIT_USAGE);
    assertThat(notADocument.err()).contains("not a JSON document at byte 10");
    ServerProcesses.Result query = cli("query", "docs", "--where", "color = 'red'", "--explain");
    assertThat(query.exit()).as(query.err()).isZero();
    assertThat(query.out()).contains("car-1").contains("1 row").contains("plan: scan of 2 shards").contains("rows examined 1, matched 1");
    // A local index, built online; the same query then reads through it.
    assertThat(cli("kv", "put", "docs", "car-2", "{\"color\": \"blue\"}").exit()).isZero();
    ServerProcesses.Result index = cli("index", "create", "docs", "color", "--local", "--wait", "30s");
    assertThat(index.exit()).as(index.err()).isZero();
    assertThat(index.out()).contains("color").contains("local").contains("ready").contains("1 index on table docs");
    ServerProcesses.Result indexed = cli("query", "docs", "--where", "color = 'red'", "--explain");
    assertThat(indexed.exit()).as(indexed.err()).isZero();
    assertThat(indexed.out()).contains("car-1").contains("1 row").contains("plan: index on color (local index): color = 'red', 2 shards")
        .containsPattern("posting list color \\(local index\\): color = 'red': [1-5] entries");
    assertThat(cli("table", "describe", "docs").out()).contains("indexes: color (local, ready)");
    ServerProcesses.Result indexStatus = cli("index", "status", "docs", "-o", "json");
    assertThat(indexStatus.out()).contains("\"state\" : \"ready\"").contains("\"rows_indexed\" : 2");
    ServerProcesses.Result unknownField = cli("index", "drop", "docs", "make");
    assertThat(unknownField.exit()).isNotZero();
    assertThat(unknownField.err()).contains("table docs has no index on make");
    assertThat(cli("index", "drop", "docs", "color").exit()).isZero();
    // A global index: a table of its own; a query of one value reads one index shard, then the rows by key.
    ServerProcesses.Result global = cli("index", "create", "docs", "color", "--global", "--sync", "--wait", "30s");
    assertThat(global.exit()).as(global.err()).isZero();
    assertThat(global.out()).contains("global sync (docs.color)").contains("ready");
    ServerProcesses.Result throughGlobal = cli("query", "docs", "--where", "color = 'red'", "--explain");
    assertThat(throughGlobal.exit()).as(throughGlobal.err()).isZero();
    assertThat(throughGlobal.out()).contains("car-1").contains("1 row")
        .contains("plan: index on color (global index): color = 'red': posting lists from 1 index shard, then the rows they name fetched by"
            + " key from 1 data shard");
    assertThat(cli("table", "list").out()).containsPattern("docs\\.color\\s+hashrange.*global index of docs");
    ServerProcesses.Result direct = cli("kv", "put", "docs.color", "x", "y");
    assertThat(direct.exit()).isNotZero();
    assertThat(direct.err()).contains("written by the index only");
    ServerProcesses.Result badScope = cli("index", "create", "docs", "make", "--strategy", "range");
    assertThat(badScope.exit()).isNotZero();
    assertThat(badScope.err()).contains("--strategy, --shards, --async, --sync and --covering are for a global index");
    assertThat(cli("index", "drop", "docs", "color").exit()).isZero();
    assertThat(cli("table", "describe", "docs.color").exit()).as("the index's table went with it").isNotZero();
    // An async covering index (the default mode): writes commit alone, a consistent query sees them, from the entries alone.
    ServerProcesses.Result async = cli("index", "create", "docs", "color", "--global", "--covering", "size", "--wait", "30s");
    assertThat(async.exit()).as(async.err()).isZero();
    assertThat(async.out()).contains("global async (docs.color), covering size").contains("ready");
    assertThat(cli("kv", "put", "docs", "car-3", "{\"color\": \"green\", \"size\": 7}").exit()).isZero();
    ServerProcesses.Result covered = cli("query", "docs", "--where", "color = 'green'", "--fields", "size", "--consistent", "--explain");
    assertThat(covered.exit()).as(covered.err()).isZero();
    assertThat(covered.out()).contains("car-3").contains("{\"size\":7}").contains("answered from their entries")
        .contains("consistent: waited");
    ServerProcesses.Result loose = cli("query", "docs", "--where", "color = 'red'", "--explain");
    assertThat(loose.out()).contains("car-1").contains("async index: may miss writes newer than its lag");
    ServerProcesses.Result lag = cli("index", "status", "docs", "-o", "json");
    assertThat(lag.out()).contains("\"mode\" : \"async\"").contains("\"pending_rows\" : ").contains("\"covering\" : [ \"size\" ]");
    assertThat(cli("index", "check", "docs").exit()).isZero();
    assertThat(cli("index", "drop", "docs", "color").exit()).isZero();
  }

  /** Live keys in the trash entries of one kind. */
  private static long keysOfKind(JsonNode trash, String kind) {
    long n = 0;
    for (JsonNode e : trash.get("entries")) {
      if (e.get("kind").asText().equals(kind)) {
        n += e.get("keys").asLong();
      }
    }
    return n;
  }

  /**
   * {@code kill -9} of a node process and an immediate restart on its data directory: the restart
   * waits out the dead process's ZooKeeper session instead of refusing the id, and every write
   * acknowledged before the kill is read back with its value.
   */
  @Test
  void aNodeKilledWithSigkillAndRestartedAtOnceServesEveryAcknowledgedWrite() throws Exception {
    zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    startServer("n1", "node", "--zk", zk.connectString(), "--data-dir", dir.resolve("n1").toString(), "--id", "n1", "--session-timeout", "4s");
    startServer("n2", "node", "--zk", zk.connectString(), "--data-dir", dir.resolve("n2").toString(), "--id", "n2");
    ServerProcesses.Result created = cli("table", "create", "crash", "--strategy", "hashrange", "--shards", "4", "--replicas", "1");
    assertThat(created.exit()).as(created.err()).isZero();
    // A table of documents with a local index, written to while n1 is killed: a row and its entries are one batch.
    ServerProcesses.Result docs = cli("table", "create", "crashdocs", "--strategy", "hashrange", "--shards", "4", "--replicas", "1",
        "--format", "json");
    assertThat(docs.exit()).as(docs.err()).isZero();
    ServerProcesses.Result indexed = cli("index", "create", "crashdocs", "color", "--wait", "30s");
    assertThat(indexed.exit()).as(indexed.err()).isZero();
    // And a global one: every write is then a transaction of the row and its entries, some cut by the kill.
    ServerProcesses.Result globalIndexed = cli("index", "create", "crashdocs", "color", "--global", "--sync", "--shards", "2", "--wait", "30s");
    assertThat(globalIndexed.exit()).as(globalIndexed.err()).isZero();
    java.util.Map<String, String> acknowledged = new java.util.TreeMap<>();
    List<String> seeds = List.of(servingAddress("n1"), servingAddress("n2"));
    java.util.concurrent.atomic.AtomicBoolean writing = new java.util.concurrent.atomic.AtomicBoolean(true);
    java.util.concurrent.atomic.AtomicLong docWrites = new java.util.concurrent.atomic.AtomicLong();
    Thread docWriter;
    try (io.shardwise.client.ShardwiseClient client = io.shardwise.client.ShardwiseClient.builder().seeds(seeds).build()) {
      for (int i = 0; i < 300; i++) {
        String k = "key-" + (i % 100);
        client.put("crash", io.shardwise.core.key.Key.of(k.getBytes(StandardCharsets.UTF_8)), ("v" + i).getBytes(StandardCharsets.UTF_8));
        acknowledged.put(k, "v" + i);
      }
    }
    io.shardwise.client.ShardwiseClient docClient = io.shardwise.client.ShardwiseClient.builder().seeds(seeds).build();
    docWriter = new Thread(() -> {
      java.util.Random random = new java.util.Random(3);
      String[] colors = {"red", "blue", "green"};
      while (writing.get()) {
        try {
          docClient.put("crashdocs", io.shardwise.core.key.Key.of("doc-" + random.nextInt(200)),
              ("{\"color\": \"" + colors[random.nextInt(3)] + "\"}").getBytes(StandardCharsets.UTF_8));
          docWrites.incrementAndGet();
        } catch (RuntimeException e) {
          // refused or unknown while n1 is down: the index must match whatever the rows became
        }
      }
    }, "crashdocs-writer");
    docWriter.start();
    long before = docWrites.get();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> docWrites.get() >= before + 200);
    processes.kill9("n1"); // SIGKILL: no shutdown hook, no unregistration, the session lingers in ZooKeeper
    startServer("n1", "node", "--zk", zk.connectString(), "--data-dir", dir.resolve("n1").toString(), "--id", "n1",
        "--session-timeout", "4s"); // waits out the dead process's 4 s session (up to twice its own)
    long restarted = docWrites.get();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> docWrites.get() >= restarted + 200);
    writing.set(false);
    docWriter.join();
    docClient.close();
    ServerProcesses.Result check = cli("index", "check", "crashdocs");
    assertThat(check.exit()).as(check.out() + check.err()).isZero();
    assertThat(check.out()).contains("every index exact on every node").contains("n1").contains("n2").contains("global");
    ServerProcesses.Result red = cli("query", "crashdocs", "--where", "color = 'red'", "--limit", "1000", "--explain");
    assertThat(red.exit()).as(red.err()).isZero();
    assertThat(red.out()).contains("plan: index on color");
    ServerProcesses.Result redByScan = cli("query", "crashdocs", "--where", "color = 'red' OR make = 'none'", // a branch no index serves: a scan
        "--limit", "1000");
    assertThat(redByScan.exit()).as(redByScan.err()).isZero();
    assertThat(red.out().lines().filter(l -> l.startsWith("doc-")).sorted().toList())
        .isEqualTo(redByScan.out().lines().filter(l -> l.startsWith("doc-")).sorted().toList());
    // Every process (two nodes, the CLI, the killed node's restart) loaded RocksDB's native library
    // from one copy: a killed process leaves no 15 MB file behind.
    try (var files = Files.walk(processes.nativeDir())) {
      assertThat(files.filter(f -> Files.isRegularFile(f) && !Files.isSymbolicLink(f)).map(f -> f.getFileName().toString()).toList())
          .containsExactly(org.rocksdb.util.Environment.getJniLibraryFileName("rocksdb"));
    }
    ServerProcesses.Result first = cliProcess("kv", "get", "crash", "key-0");
    assertThat(first.exit()).as(first.err()).isZero();
    assertThat(first.out().strip()).isEqualTo(acknowledged.get("key-0"));
    // A sample through one shell process; all of them through one client below.
    List<String> sample = acknowledged.keySet().stream().filter(k -> k.endsWith("7")).map(k -> "kv get crash " + k).toList();
    ServerProcesses.Result read = processes.shell(zk.connectString(), sample.toArray(String[]::new));
    assertThat(read.out()).as(read.out()).doesNotContain("exit code");
    acknowledged.forEach((k, v) -> {
      if (k.endsWith("7")) {
        assertThat(read.out()).contains(v);
      }
    });
    try (io.shardwise.client.ShardwiseClient client = io.shardwise.client.ShardwiseClient.builder()
        .seeds(List.of(servingAddress("n1"), servingAddress("n2"))).build()) {
      for (var e : acknowledged.entrySet()) {
        var v = client.get("crash", io.shardwise.core.key.Key.of(e.getKey().getBytes(StandardCharsets.UTF_8)));
        assertThat(v).as(e.getKey()).isPresent();
        assertThat(new String(v.get().value(), StandardCharsets.UTF_8)).as(e.getKey()).isEqualTo(e.getValue());
      }
    }
    // Killed again: once its (4 s) session is gone it is down, and what it holds is unknown, not zero.
    processes.kill9("n1");
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    JsonNode down = null;
    while (down == null && System.nanoTime() < deadline) {
      ServerProcesses.Result st = cli("cluster", "status", "--output", "json");
      if (st.exit() != 0) {
        continue; // while its session lingers, ZooKeeper still names the dead n1 as a seed, and the call may go there
      }
      for (JsonNode n : new ObjectMapper().readTree(st.out()).get("nodes")) {
        if (n.get("id").asText().equals("n1") && !n.get("up").asBoolean()) {
          down = n;
        }
      }
    }
    assertThat(down).as("n1 shown down").isNotNull();
    assertThat(down.get("keys").isNull() && down.get("bytes").isNull()).as(down.toString()).isTrue();
    ServerProcesses.Result text = cli("cluster", "status");
    assertThat(text.out()).containsPattern("n1\\s+-?\\S*\\s+down\\s+\\d+\\s+\\?\\s+\\?").contains("not known while n1 does not answer");
  }

  @Test
  void anUnreachableClusterIsAClearError() throws Exception {
    zk = null;
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    Process p = new ProcessBuilder(java("kv", "get", "t", "k", "--zk", "127.0.0.1:1")).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertThat(p.waitFor(1, TimeUnit.MINUTES)).isTrue();
    assertThat(p.exitValue()).isEqualTo(Main.EXIT_UNAVAILABLE);
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    assertThat(stderr.strip()).isEqualTo(
        "shardwise kv get: cannot reach ZooKeeper at 127.0.0.1:1 within 5 s (is a cluster running? start one with: ./shardwise dev)");
  }
}
