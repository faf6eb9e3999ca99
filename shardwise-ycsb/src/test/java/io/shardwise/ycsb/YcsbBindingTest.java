package io.shardwise.ycsb;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.bench.EmbeddedCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * YCSB's own driver ({@code site.ycsb.Client} with {@code CoreWorkload}) loads and runs the
 * shipped workloads through the binding against a real cluster, in a JVM of its own as a user runs
 * it; every operation must come back OK.
 */
@Tag("integration")
class YcsbBindingTest {

  @TempDir Path dir;

  private static String ycsb(String phase, String workload, String zk, Path dir, String... extra) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), "site.ycsb.Client", phase, "-db", ShardwiseDB.class.getName(),
        "-P", Path.of("src/main/resources/workloads/workload" + workload).toAbsolutePath().toString(),
        "-p", "shardwise.zk=" + zk, "-p", "recordcount=300", "-threads", "4"));
    command.addAll(List.of(extra));
    Path log = dir.resolve("ycsb-" + phase.substring(1) + "-" + workload + ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("YCSB finished").isTrue();
    String out = Files.readString(log);
    assertThat(p.exitValue()).as(out).isZero();
    return out;
  }

  /** "[READ], Operations, 123" and friends: operations per type, and every Return= line. */
  private static Map<String, Long> counts(String out) {
    Map<String, Long> counts = new LinkedHashMap<>();
    Matcher m = Pattern.compile("^\\[([A-Z-]+)\\], (Operations|Return=[A-Z_]+), (\\d+)$", Pattern.MULTILINE).matcher(out);
    while (m.find()) {
      counts.put(m.group(1) + " " + m.group(2), Long.parseLong(m.group(3)));
    }
    return counts;
  }

  @Test
  void ycsbLoadsAndRunsWorkloadsAAndEThroughTheBinding() throws Exception {
    try (EmbeddedCluster cluster = new EmbeddedCluster(dir.resolve("cluster"), 3)) {
      Map<String, Long> load = counts(ycsb("-load", "a", cluster.zk(), dir));
      assertThat(load).containsEntry("INSERT Operations", 300L).containsEntry("INSERT Return=OK", 300L);

      Map<String, Long> a = counts(ycsb("-t", "a", cluster.zk(), dir, "-p", "operationcount=600"));
      assertThat(a.get("READ Operations") + a.get("UPDATE Operations")).isEqualTo(600);
      assertThat(a).containsEntry("READ Return=OK", a.get("READ Operations")).containsEntry("UPDATE Return=OK", a.get("UPDATE Operations"));
      assertThat(a.keySet()).noneMatch(k -> k.contains("ERROR") || k.contains("NOT_FOUND"));

      Map<String, Long> e = counts(ycsb("-t", "e", cluster.zk(), dir, "-p", "operationcount=200"));
      assertThat(e.get("SCAN Operations") + e.getOrDefault("INSERT Operations", 0L)).isEqualTo(200);
      assertThat(e).containsEntry("SCAN Return=OK", e.get("SCAN Operations"));
      assertThat(e.keySet()).noneMatch(k -> k.contains("ERROR"));
    }
  }

  @Test
  void recordsRoundTripThroughTheFieldEncoding() {
    Map<String, byte[]> record = new LinkedHashMap<>();
    record.put("field0", "hello".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    record.put("field1", new byte[0]);
    Map<String, byte[]> back = new LinkedHashMap<>();
    ShardwiseDB.decodeRaw(ShardwiseDB.encode(record), back);
    assertThat(back.keySet()).containsExactly("field0", "field1");
    assertThat(back.get("field0")).isEqualTo(record.get("field0"));
    assertThat(back.get("field1")).isEmpty();
  }
}
