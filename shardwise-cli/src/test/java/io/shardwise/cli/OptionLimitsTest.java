package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** Options out of their limits are refused where they are parsed, naming the flag and the limit, exit 2 — never a default. */
class OptionLimitsTest {

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
    "--shards, 0, '--shards must be between 1 and 65,536, not 0'",
    "--shards, -1, '--shards must be between 1 and 65,536, not -1'",
    "--vnodes, 0, '--vnodes must be between 1 and 4,096, not 0'",
    "--vnodes, 5000, '--vnodes must be between 1 and 4,096, not 5000'",
    "--slots, 0, '--slots must be between 1 and 1,048,576, not 0'",
    "--tokens, 0, '--tokens must be between 1 and 4,096, not 0'",
    "--format, xml, '--format: a value format is bytes or json, not ''xml'''",
  })
  void tableCreateRefusesOutOfRangeCounts(String flag, String value, String message) {
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err, true));
    // The check comes before any connection: no cluster is needed to be refused.
    assertThat(cli.execute("table", "create", "t", "--strategy", "ring", flag, value, "--zk", "127.0.0.1:1")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString().strip()).isEqualTo("shardwise table create: " + message);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', value = {
    "rebalance split-size '64 parsecs' | shardwise rebalance split-size: SIZE takes a size such as 512MiB, 64KiB, 2GiB or a number of bytes, not '64 parsecs'",
    "rebalance split-size 0 | shardwise rebalance split-size: SIZE must be more than 0 bytes (off turns splitting by size off)",
    "rebalance split-size 99999999TiB | shardwise rebalance split-size: SIZE is too large: '99999999TiB'",
    "rebalance split-size --table t | shardwise rebalance split-size: --table needs a SIZE, off or default",
    "rebalance split-load 0 | shardwise rebalance split-load: RATE must be between 1 and 100000000 requests per second, not 0",
    "rebalance split-load fast | shardwise rebalance split-load: RATE must be a number of requests per second, off or default, not 'fast'",
    "rebalance split-load --table t | shardwise rebalance split-load: --table needs a RATE, off or default",
    "rebalance split-load 500 --window 181s | shardwise rebalance split-load: --window must be between 1s and 3m, not 181s",
    "rebalance merge 0.5 | shardwise rebalance merge: FRACTION must be more than 0 and at most 0.45 (above it a merged shard is close to splitting again), not 0.5",
    "rebalance merge 0 | shardwise rebalance merge: FRACTION must be more than 0 and at most 0.45 (above it a merged shard is close to splitting again), not 0",
    "table split t --shard 1 --at m --at-hash 5 | shardwise table split: give --at or --at-hash, not both",
    "table presplit t --shards 1 | shardwise table presplit: --shards must be between 2 and 65536, not 1",
    "rebalance schedule presplit t --shards 8 | shardwise rebalance schedule presplit: give --at TIME or --in DURATION (one of them)",
    "rebalance schedule presplit t --shards 8 --at tomorrow | shardwise rebalance schedule presplit: --at takes an ISO-8601 instant such as 2026-12-24T08:00:00Z, not 'tomorrow'",
    "rebalance schedule presplit t --shards 1 --in 1h | shardwise rebalance schedule presplit: --shards must be between 2 and 65536, not 1",
    "rebalance schedule plan --in 9000h | shardwise rebalance schedule plan: --in must be between 1s and 8784h, not 9000h",
    "rebalance schedule plan --in 1h --at 2026-12-24T08:00:00Z | shardwise rebalance schedule plan: give --at TIME or --in DURATION (one of them)",
    "rebalance schedule cancel p-1 | shardwise rebalance schedule cancel: 'p-1' is not a scheduled action's id (they look like s-0000000003)",
    "table split t --shard 1 --at-hash -5 | shardwise table split: --at-hash takes an unsigned 64-bit decimal number, not '-5'",
    "table set t | shardwise table set: say what to change: --replicas N and/or --min-in-sync M",
    "kv get t k --read-from nearest | shardwise kv get: --read-from is leader or follower, not 'nearest'",
    "kv get t k --read-from follower --max-staleness 2h | shardwise kv get: --max-staleness must be between 1ms and 1h, not 2h",
    "bench --records 10 --operations 10 --read-from-followers 1s | shardwise bench: --read-from-followers needs --replicas 2 or more: a table of one replica has no followers",
    "bench --records 10 --operations 10 --baseline redis-cluster --redis-replicas 5 | shardwise bench: --redis-replicas must be between 0 and 4, not 5",
    "bench --records 10 --operations 10 --baseline redis-cluster --redis-masters 2 | shardwise bench: --redis-masters must be 3 or more (a Redis Cluster's least), not 2",
  })
  void splitOptionsAreCheckedBeforeAnyConnection(String args, String message) {
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err, true));
    java.util.List<String> argv = new java.util.ArrayList<>();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("'([^']*)'|(\\S+)").matcher(args);
    while (m.find()) {
      argv.add(m.group(1) != null ? m.group(1) : m.group(2));
    }
    argv.addAll(java.util.List.of("--zk", "127.0.0.1:1"));
    assertThat(cli.execute(argv.toArray(String[]::new))).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString().strip()).isEqualTo(message);
  }

  @ParameterizedTest(name = "--limit {0}")
  @CsvSource({"0", "-1", "1001"})
  void scanRefusesAPageOutsideOneToAThousand(String limit) {
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err, true));
    assertThat(cli.execute("kv", "scan", "t", "--all", "--limit", limit, "--zk", "127.0.0.1:1")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString().strip()).isEqualTo("shardwise kv scan: --limit must be between 1 and 1,000, not " + limit);
  }
}
