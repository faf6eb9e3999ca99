package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The packaged command as users run it: the shaded jar in its own JVM, and the {@code ./shardwise}
 * launcher at the repository root. Exit codes and streams are the real ones.
 */
@Tag("integration")
class ShardwiseJarIT {

  private static final Path JAR = Path.of(System.getProperty("shardwise.jar", "target/shardwise.jar"));
  private static final Path ROOT = Path.of(System.getProperty("shardwise.root", ".."));

  record Result(int exit, String out, String err) {}

  private static Result run(List<String> command) throws IOException, InterruptedException {
    Path out = Files.createTempFile("shardwise-out", ".txt");
    Path err = Files.createTempFile("shardwise-err", ".txt");
    try {
      ProcessBuilder pb = new ProcessBuilder(command).directory(ROOT.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile());
      pb.environment().put("SHARDWISE_NO_BUILD", "1");
      Process p = pb.start();
      assertThat(p.waitFor(2, TimeUnit.MINUTES)).as("finished").isTrue();
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  private static List<String> java(String... args) {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", JAR.toString()));
    command.addAll(List.of(args));
    return command;
  }

  @Test
  void theJarSimulatesAndPrintsJson() throws Exception {
    Result r = run(java("simulate", "--count", "2000", "--hash", "blake2b-32", "--output", "json"));
    assertThat(r.exit()).as(r.err()).isZero();
    JsonNode root = new ObjectMapper().readTree(r.out());
    assertThat(root.get("keys").asInt()).isEqualTo(2000);
    assertThat(root.get("hash").asText()).isEqualTo("blake2b-32");
    assertThat(root.get("results")).hasSize(8);
  }

  @Test
  void badInputExitsWith2AndNoStackTrace() throws Exception {
    Result r = run(java("simulate", "--strategy", "nope"));
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).startsWith("shardwise simulate: unknown strategy 'nope'").doesNotContain("Exception").doesNotContain("\tat ");
    assertThat(r.err().strip().lines()).hasSize(1);
  }

  @Test
  void theLauncherRunsTheBuiltJar() throws Exception {
    Result r = run(List.of("bash", ROOT.resolve("shardwise").toString(), "simulate", "--keys", "key-%02d", "--count", "40", "--from", "4", "--to", "5", "--strategy", "ring"));
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).startsWith("40 keys (key-%02d from 0), 4 -> 5 nodes, hash murmur3-128");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void versionNamesTheReleaseAndTheCommit() throws Exception {
    Result r = run(java("--version"));
    assertThat(r.exit()).as(r.err()).isZero();
    // The commit is there when the build ran in a git checkout (it always does here and in CI).
    assertThat(r.out().strip()).matches("shardwise \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?( \\(commit [0-9a-f]{7,}(-dirty)?\\))?");
    if (Files.isDirectory(ROOT.resolve(".git")) || Files.isRegularFile(ROOT.resolve(".git"))) {
      assertThat(r.out()).contains("(commit ");
    }
  }
}
