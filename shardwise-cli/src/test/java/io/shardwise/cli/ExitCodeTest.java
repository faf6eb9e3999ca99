package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.shardwise.client.ShardwiseException;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The exit codes scripts rely on (documented in {@link Main} and the README); MultiProcessIT runs them against a cluster. */
class ExitCodeTest {

  @Test
  void everyKindOfFailureHasItsOwnCode() {
    assertThat(Main.exitCode(new IllegalArgumentException("--limit must be at least 1"))).isEqualTo(2);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.INVALID_ARGUMENT, "key too long"))).isEqualTo(2);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.NOT_FOUND, "no table named 't'"))).isEqualTo(3);
    assertThat(Main.exitCode(CliException.notFound("no plan p-1"))).isEqualTo(3);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.ALREADY_EXISTS, "table t already exists"))).isEqualTo(4);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.UNAVAILABLE, "owner down"))).isEqualTo(5);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.DEADLINE_EXCEEDED, "slow"))).isEqualTo(5);
    assertThat(Main.exitCode(CliException.unavailable("cannot reach ZooKeeper", null))).isEqualTo(5);
    assertThat(Main.exitCode(new ShardwiseException(Status.Code.INTERNAL, "bug"))).isEqualTo(1);
    assertThat(Main.exitCode(new IllegalStateException("not pending"))).isEqualTo(1);
  }

  @Test
  void aTypoIsAUsageErrorWithASuggestion() {
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err, true));
    assertThat(cli.execute("tabel", "list")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("Unmatched argument").contains("Did you mean").contains("table");
  }
}
