package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.bench.EmbeddedCluster;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.Key;
import java.io.IOException;
import java.io.StringWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java snippet of the README, compiled and run against a real cluster (an embedded ZooKeeper
 * and three RocksDB nodes on loopback), so the README cannot drift from the client again. A
 * snippet's {@code import} lines go to the top of a class, the rest into a method; its seed list
 * is replaced by the cluster's addresses.
 */
class ReadmeJavaSnippetsTest {

  private static final Path README = Path.of("..", "README.md");
  private static final Pattern SNIPPET = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern SEEDS = Pattern.compile("\\.seeds\\(List\\.of\\([^)]*\\)\\)");

  @TempDir Path dir;

  @Test
  void everyJavaSnippetOfTheReadmeCompilesAndRuns() throws Exception {
    List<String> snippets = snippets();
    assertThat(snippets).as("the README's Java snippets").isNotEmpty();
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 3);
        ShardwiseClient client = ShardwiseClient.builder().seeds(cluster.nodeAddresses()).build()) {
      client.createTable("users", TableSpec.builder("ring").build()); // as the README's CLI steps do
      String seeds = cluster.nodeAddresses().stream().map(a -> "\"" + a + "\"").collect(Collectors.joining(", "));
      for (int i = 0; i < snippets.size(); i++) {
        Matcher m = SEEDS.matcher(snippets.get(i));
        assertThat(m.find()).as("snippet %d names its seeds", i).isTrue();
        run("ReadmeSnippet" + i, m.replaceAll(Matcher.quoteReplacement(".seeds(List.of(" + seeds + "))")));
      }
      // What the snippet did, seen by another client.
      Optional<Versioned> alice = client.get("users", Key.of("alice"));
      assertThat(alice).isPresent();
      assertThat(new String(alice.get().value(), StandardCharsets.UTF_8)).as("written last by the transaction").isEqualTo("{\"name\": \"Alice C.\"}");
      assertThat(alice.get().version()).isEqualTo(3);
      assertThat(client.describeTable("events", false).spec().splitPoints()).hasSize(2);
      assertThat(client.get("events", Key.of("hana", 1_733_011_200L))).isPresent();
      assertThat(client.get("events", Key.of("hana", 1_733_011_201L))).as("the transaction's other item").isPresent();
    }
  }

  private static List<String> snippets() throws IOException {
    Matcher m = SNIPPET.matcher(Files.readString(README, StandardCharsets.UTF_8));
    List<String> out = new ArrayList<>();
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  /** Compiles the snippet as {@code name.run()} and calls it. */
  private void run(String name, String snippet) throws Exception {
    StringBuilder imports = new StringBuilder();
    StringBuilder body = new StringBuilder();
    for (String line : snippet.split("\n")) {
      (line.startsWith("import ") ? imports : body).append(line).append('\n');
    }
    String source = imports + "\npublic class " + name + " {\n  public static void run() throws Exception {\n" + body + "  }\n}\n";
    Path src = dir.resolve("src").resolve(name + ".java");
    Path classes = dir.resolve("classes");
    Files.createDirectories(src.getParent());
    Files.createDirectories(classes);
    Files.writeString(src, source, StandardCharsets.UTF_8);

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    StringWriter diagnostics = new StringWriter();
    boolean compiled = javac.getTask(diagnostics, null, null,
        List.of("-classpath", System.getProperty("java.class.path"), "-d", classes.toString(), "-proc:none"), null,
        javac.getStandardFileManager(null, null, StandardCharsets.UTF_8).getJavaFileObjects(src)).call();
    assertThat(compiled).as("the README snippet compiles:\n%s\n%s", source, diagnostics).isTrue();

    try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
      loader.loadClass(name).getMethod("run").invoke(null);
    }
  }
}
