package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The packaged {@code shardwise} command run as separate JVMs: long-running servers (nodes,
 * routers), each logging to {@code <dir>/<name>.log}, and one-shot CLI calls. Every process it
 * starts is stopped by {@link #close}; {@link #kill9} is a real {@code SIGKILL}.
 */
final class ServerProcesses implements AutoCloseable {

  private static final Path JAR = Path.of(System.getProperty("shardwise.jar", "target/shardwise.jar"));
  private static final Pattern SERVING = Pattern.compile("serving on (\\S+)");

  record Result(int exit, String out, String err) {}

  private final Path dir;
  private final Map<String, Process> servers = new LinkedHashMap<>();
  private final java.util.Set<String> zooKeepers = new java.util.HashSet<>(); // stopped last: the others unregister from them
  private int killed;

  ServerProcesses(Path dir) {
    this.dir = dir;
  }

  /**
   * The JVM options the {@code shardwise} script starts one-shot commands with (a {@code kv get},
   * a {@code table create}): the client compiler alone, which takes about half the CPU of a short
   * command. Servers keep the optimizing compiler.
   */
  static final List<String> ONE_SHOT = List.of("-XX:TieredStopAtLevel=1");

  static List<String> java(String... args) {
    return java(List.of(), args);
  }

  private static List<String> java(List<String> jvmOptions, String... args) {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(jvmOptions);
    command.addAll(List.of("-jar", JAR.toString()));
    command.addAll(List.of(args));
    return command;
  }

  /**
   * A process of the packaged command whose RocksDB native library lives in {@code <dir>/native}
   * ({@code SHARDWISE_NATIVE_DIR}), shared by every process of the test, so a test can see that
   * processes reuse one copy of it.
   */
  ProcessBuilder builder(String... args) {
    return builder(List.of(), args);
  }

  private ProcessBuilder builder(List<String> jvmOptions, String... args) {
    ProcessBuilder b = new ProcessBuilder(java(jvmOptions, args));
    b.environment().put("SHARDWISE_NATIVE_DIR", nativeDir().toString());
    return b;
  }

  /** Where the processes keep RocksDB's native library. */
  Path nativeDir() {
    return dir.resolve("native");
  }

  /** Starts a long-running command and waits (up to 60 s) until it prints its "serving on" line. */
  Process start(String name, String... args) throws IOException, InterruptedException {
    launch(name, args);
    return awaitServing(name);
  }

  /** Starts several long-running commands at once (name to arguments) and waits until each serves. */
  void startAll(Map<String, String[]> commands) throws IOException, InterruptedException {
    for (Map.Entry<String, String[]> c : commands.entrySet()) {
      launch(c.getKey(), c.getValue());
    }
    for (String name : commands.keySet()) {
      awaitServing(name);
    }
  }

  private void launch(String name, String... args) throws IOException {
    Path log = dir.resolve(name + ".log");
    Process p = builder(args).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    servers.put(name, p);
    if (args.length > 0 && args[0].equals("zookeeper")) {
      zooKeepers.add(name);
    }
  }

  private Process awaitServing(String name) throws IOException, InterruptedException {
    Path log = dir.resolve(name + ".log");
    Process p = servers.get(name);
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      if (Files.exists(log) && SERVING.matcher(Files.readString(log, StandardCharsets.UTF_8)).find()) {
        return p;
      }
      assertThat(p.isAlive()).as("%s exited early: %s", name, Files.exists(log) ? Files.readString(log) : "").isTrue();
      Thread.sleep(100);
    }
    throw new AssertionError(name + " did not start: " + Files.readString(log));
  }

  /** The address server {@code name} printed in its "serving on" line. */
  String address(String name) throws IOException {
    Matcher m = SERVING.matcher(Files.readString(dir.resolve(name + ".log")));
    assertThat(m.find()).as(name + " printed its address").isTrue();
    return m.group(1);
  }

  /** {@code kill -9}: no shutdown hook runs, nothing unregisters. Its log is kept as {@code <name>-killed-<n>.log}. */
  void kill9(String name) throws IOException, InterruptedException {
    Process p = servers.remove(name);
    p.destroyForcibly();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as(name + " died").isTrue();
    Files.move(dir.resolve(name + ".log"), dir.resolve(name + "-killed-" + (++killed) + ".log"));
  }

  /**
   * {@code SIGSTOP}, then {@code SIGCONT} after {@code pause}: the process stands still (no
   * heartbeat, no reply) and then goes on as if nothing happened, as a long GC pause or a stalled VM.
   * A process must be resumed even if the test fails: {@link #close} sends SIGCONT first.
   */
  void pause(String name, java.time.Duration pause) throws IOException, InterruptedException {
    Process p = servers.get(name);
    signal(p, "STOP");
    try {
      Thread.sleep(pause.toMillis());
    } finally {
      signal(p, "CONT");
    }
  }

  private static void signal(Process p, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -" + signal + " " + p.pid()).isTrue();
  }

  /** Runs one CLI command against {@code zk} and waits for it (at most 2 minutes). */
  Result cli(String zk, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(args));
    command.addAll(List.of("--zk", zk));
    return run(command.toArray(new String[0]));
  }

  /**
   * Runs {@code lines} in one {@code shardwise shell} process against {@code zk}, with {@code \timing}
   * on, so a failed command shows as "exit code N" in the output: many commands for one JVM start.
   */
  Result shell(String zk, String... lines) throws IOException, InterruptedException {
    Path in = Files.createTempFile(dir, "in", ".txt");
    Files.writeString(in, "\\timing\n" + String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
    return run(in, "shell", "--zk", zk, "--history", dir.resolve("shell-history").toString());
  }

  /** Runs a command that is expected to exit (a CLI call, a server that refuses to start) and waits for it (at most 2 minutes). */
  Result run(String... args) throws IOException, InterruptedException {
    return run(null, args);
  }

  private Result run(Path stdin, String... args) throws IOException, InterruptedException {
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    ProcessBuilder b = builder(ONE_SHOT, args).redirectOutput(out.toFile()).redirectError(err.toFile());
    if (stdin != null) {
      b.redirectInput(stdin.toFile());
    }
    Process p = b.start();
    if (!p.waitFor(2, TimeUnit.MINUTES)) {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError(String.join(" ", args) + " did not exit within 2 minutes: " + Files.readString(out, StandardCharsets.UTF_8));
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
  }

  /**
   * SIGTERM to every server still running (the shutdown hook closes it), then SIGKILL to any that
   * hangs: nodes and routers first, ZooKeeper servers after them (a node unregisters on its way out,
   * which waits for a ZooKeeper that is already gone).
   */
  @Override
  public void close() {
    List<Process> first = new ArrayList<>();
    List<Process> last = new ArrayList<>();
    servers.forEach((name, p) -> (zooKeepers.contains(name) ? last : first).add(p));
    stop(first);
    stop(last);
    servers.clear();
  }

  private static void stop(List<Process> processes) {
    for (Process p : processes) {
      try {
        signal(p, "CONT"); // a stopped process ignores SIGTERM until it runs again
      } catch (IOException | InterruptedException | AssertionError ignored) {
        // it may have exited already
      }
      p.destroy();
    }
    try {
      for (Process p : processes) {
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      }
    } catch (InterruptedException e) {
      processes.forEach(Process::destroyForcibly);
      Thread.currentThread().interrupt();
    }
  }

}
