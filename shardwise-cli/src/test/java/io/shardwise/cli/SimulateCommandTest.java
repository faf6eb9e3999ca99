package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class SimulateCommandTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  record Run(int exit, String out, String err) {}

  static Run run(String... args) {
    CommandLine cli = Main.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int exit = cli.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  @Test
  void jsonHasOneResultPerStrategyWithTheDocumentedFields() throws IOException {
    Run r = run("simulate", "--count", "5000", "--output", "json");
    assertThat(r.exit()).isZero();
    JsonNode root = JSON.readTree(r.out());
    assertThat(root.get("keys").asLong()).isEqualTo(5000);
    assertThat(root.get("from").asInt()).isEqualTo(10);
    assertThat(root.get("to").asInt()).isEqualTo(11);
    assertThat(root.get("hash").asText()).isEqualTo("murmur3-128");
    JsonNode results = root.get("results");
    assertThat(results).hasSize(8);
    List<String> strategies = new java.util.ArrayList<>();
    results.forEach(n -> strategies.add(n.get("strategy").asText()));
    assertThat(strategies).containsExactly("range", "mod", "ring", "slots", "hashrange", "tokens", "jump", "rendezvous");
    for (JsonNode result : results) {
      assertThat(result.get("moved").asLong()).isBetween(0L, 5000L);
      assertThat(result.get("movedFraction").asDouble()).isEqualTo(result.get("moved").asLong() / 5000.0, org.assertj.core.data.Offset.offset(1e-6));
      assertThat(result.get("theoreticalFraction").asDouble()).isEqualTo(0.090909);
      for (String side : List.of("before", "after")) {
        for (String field : List.of("min", "max", "mean", "stddev", "peakToAverage")) {
          assertThat(result.get(side).has(field)).as("%s.%s", side, field).isTrue();
        }
      }
      assertThat(result.has("movedKeys")).isFalse();
    }
  }

  @Test
  void listAddsTheMovedKeysInInputOrder() throws IOException {
    Run r = run("simulate", "--keys", "key-%02d", "--count", "40", "--start", "1", "--from", "4", "--to", "5", "--strategy", "mod,ring", "--list", "-o", "json");
    assertThat(r.exit()).isZero();
    JsonNode results = JSON.readTree(r.out()).get("results");
    for (JsonNode result : results) {
      JsonNode moved = result.get("movedKeys");
      assertThat(moved).hasSize(result.get("moved").asInt());
      String previous = "";
      for (JsonNode k : moved) {
        assertThat(k.get("key").asText()).isGreaterThan(previous);
        previous = k.get("key").asText();
        if (result.get("strategy").asText().equals("ring")) {
          assertThat(k.get("to").asInt()).isEqualTo(4);
        }
      }
    }
  }

  @Test
  void theSameArgumentsPrintTheSameOutput() {
    String[] args = {"simulate", "--keys", "uuid", "--count", "3000", "--from", "3", "--to", "7", "--seed", "5"};
    Run a = run(args);
    Run b = run(args);
    assertThat(a.exit()).isZero();
    assertThat(a.out()).isEqualTo(b.out()).contains("rendezvous");
  }

  @Test
  void csvHasAHeaderAndARowPerStrategy() {
    Run r = run("simulate", "--count", "1000", "--strategy", "ring,jump", "--output", "csv");
    String[] lines = r.out().split("\n");
    assertThat(lines).hasSize(3);
    assertThat(lines[0]).startsWith("strategy,keys,from,to,moved,movedFraction,theoreticalFraction,beforeMin");
    assertThat(lines[1]).startsWith("ring,1000,10,11,");
    assertThat(lines[2]).startsWith("jump,1000,10,11,");
  }

  @Test
  void tableShowsTheHeadlineNumbers() {
    Run r = run("simulate", "--count", "20000", "--strategy", "mod,ring");
    assertThat(r.out()).startsWith("20,000 keys (user-%06d from 0), 10 -> 11 nodes, hash murmur3-128");
    assertThat(r.out()).containsPattern("mod\\s+1[0-9],[0-9]{3}\\s+9[0-9]\\.[0-9]{2}%\\s+9\\.09%");
  }

  @Test
  void keysComeFromAFileOnePerLine(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("keys.txt");
    Files.writeString(file, "alpha\nbeta\n\ngamma\n", StandardCharsets.UTF_8);
    Run r = run("simulate", "--keys-file", file.toString(), "--from", "2", "--to", "3", "-o", "json");
    assertThat(r.exit()).isZero();
    assertThat(JSON.readTree(r.out()).get("keys").asInt()).isEqualTo(3);
  }

  @Test
  void aKeysFileThatIsNotUtf8IsABadInputNamingTheLine(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("keys.bin");
    Files.write(file, new byte[] {'a', '\n', 'b', '\n', (byte) 0xff, (byte) 0xfe, '\n'});
    Run r = run("simulate", "--keys-file", file.toString(), "--from", "2", "--to", "3");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("shardwise simulate: keys file '" + file + "' is not UTF-8 text: line 3 holds bytes that are not UTF-8"
        + " (keys files are text, one key per line)");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "--strategy foo | unknown strategy 'foo'; valid strategies: range, mod, ring, slots, hashrange, tokens, jump, rendezvous",
        "--hash crc32 | unknown hash 'crc32'; valid hashes: murmur3-32, murmur3-128",
        "--from 0 | --from must be in [1, 1024] nodes, not 0",
        "--to -2 | --to must be in [1, 1024] nodes, not -2",
        "--count -5 | --count must not be negative, not -5",
        "--strategy range --split-points m,f | split points are not sorted: 'm' comes before 'f'",
        "--strategy range --split-points f,f | duplicate split point 'f'",
        "--strategy slots --slots 8 --from 4 --to 9 | slots: more nodes (9) than slots (8)",
        "--keys-file /nonexistent/keys.txt | cannot read keys file '/nonexistent/keys.txt': no such file",
        "--keys a%sb%s | key pattern 'a%sb%s' must format one integer",
        "--output xml | Invalid value for option '--output': expected one of [table, json, csv]",
        "--vnode-name shard-{shard} | must contain {v} and {node}",
        "--from ten | Invalid value for option '--from': 'ten' is not an int",
      })
  void badInputIsAOneLineErrorWithExitCode2(String args, String message) {
    String base = args.contains("--count") ? "simulate " : "simulate --count 10 ";
    String[] argv = (base + args.trim()).split(" ");
    Run r = run(argv);
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    String[] lines = r.err().split("\n");
    assertThat(lines[0]).startsWith("shardwise simulate: ").contains(message.trim());
    assertThat(lines).hasSize(1);
  }

  @Test
  void helpListsEveryOption() {
    Run r = run("simulate", "--help");
    assertThat(r.exit()).isZero();
    for (String option : List.of("--keys-file", "--keys", "--count", "--start", "--from", "--to", "--strategy", "--hash", "--vnodes", "--vnode-name", "--slots", "--tokens", "--seed", "--list", "--output")) {
      assertThat(r.out()).contains(option);
    }
  }

  @Test
  void theConsoleApiAnswersTheSameJsonForTheSameParameters(@TempDir Path dir) throws Exception {
    Run cli = run("simulate", "--keys", "order-%05d", "--count", "3000", "--start", "7", "--from", "5", "--to", "7",
        "--strategy", "mod,ring,slots,tokens", "--hash", "xxhash64", "--vnodes", "32", "--slots", "256", "--tokens", "8",
        "--seed", "3", "--output", "json");
    assertThat(cli.exit()).as(cli.err()).isZero();
    try (io.shardwise.server.coordination.EmbeddedZooKeeper zk = io.shardwise.server.coordination.EmbeddedZooKeeper.start(0, dir);
        io.shardwise.console.Console console = io.shardwise.console.Console.start("127.0.0.1", 0, zk.connectString())) {
      String query = "keys=order-%2505d&count=3000&start=7&from=5&to=7&strategy=mod,ring,slots,tokens&hash=xxhash64"
          + "&vnodes=32&slots=256&tokens=8&seed=3";
      java.net.http.HttpResponse<String> api = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(console.url() + "api/v1/simulate?" + query)).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(api.statusCode()).as(api.body()).isEqualTo(200);
      JsonNode fromApi = JSON.readTree(api.body());
      JsonNode fromCli = JSON.readTree(cli.out());
      fromApi.fieldNames().forEachRemaining(f -> assertThat(fromApi.get(f)).as(f).isEqualTo(fromCli.get(f)));
      assertThat(fromApi).isEqualTo(fromCli);
    }
  }
}
