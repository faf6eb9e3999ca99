package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.bench.EmbeddedCluster;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shell against a real cluster: commands run in one JVM over one ZooKeeper session and one client. */
class ShellTest {

  @TempDir Path dir;

  @Test
  void commandsShareOneConnectionAndReportTheirTimeAndFailures() throws Exception {
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 2)) {
      String input = String.join("\n",
          "\\timing",
          "table create t --strategy mod --shards 4",
          "kv put t a 'hello world'",
          "shardwise kv get t a",
          "kv get t missing",
          "tabel list",
          "shell",
          "\\status",
          "\\q") + "\n";
      ShellCommand shell = new ShellCommand();
      shell.zk = cluster.zk();
      shell.history = dir.resolve("history");
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      int code = shell.run(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)), out);
      String printed = out.toString(StandardCharsets.UTF_8);

      assertThat(code).isZero();
      assertThat(printed).contains("timing is on").contains("table t (id").contains("hello world");
      assertThat(printed).containsPattern("\\(\\d+\\.\\d ms\\)");
      assertThat(printed).as("a missing key: its error and exit code").contains("exit code " + Main.EXIT_NOT_FOUND);
      assertThat(printed).as("a typo: a suggestion").contains("Did you mean").contains("exit code " + Main.EXIT_USAGE);
      assertThat(printed).contains("already in the shell");
      assertThat(printed).as("every command over the same session and client").contains("1 ZooKeeper session").contains("1 client");
    }
  }
}
