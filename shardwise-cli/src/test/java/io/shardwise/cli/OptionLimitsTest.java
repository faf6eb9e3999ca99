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
  })
  void tableCreateRefusesOutOfRangeCounts(String flag, String value, String message) {
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err, true));
    // The check comes before any connection: no cluster is needed to be refused.
    assertThat(cli.execute("table", "create", "t", "--strategy", "ring", flag, value, "--zk", "127.0.0.1:1")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString().strip()).isEqualTo("shardwise table create: " + message);
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
