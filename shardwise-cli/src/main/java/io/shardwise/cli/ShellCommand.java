package io.shardwise.cli;

import io.shardwise.client.TableDescription;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jline.reader.Candidate;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.ParsedLine;
import org.jline.reader.UserInterruptException;
import org.jline.reader.impl.DefaultParser;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;
import picocli.CommandLine.Option;

/**
 * {@code shardwise shell}: every command of the CLI in one JVM, over one ZooKeeper session and one
 * client (with its shard map) that stay open between commands ({@link Session}), so a command
 * answers in milliseconds instead of a JVM start and a connection. History, completion of commands,
 * options and table names, and {@code \timing}.
 */
@Command(name = "shell", mixinStandardHelpOptions = true,
    description = {"An interactive shell: every command in one JVM over one connection to the cluster, with history and completion.",
        "Inside it: any command without 'shardwise', \\timing to show each command's time, \\reconnect, \\q to leave."})
final class ShellCommand implements Callable<Integer> {

  @Option(names = "--zk", paramLabel = "HOSTS",
      description = "ZooKeeper connect string for every command in the shell. Default: $SHARDWISE_ZK or " + ClusterOptions.DEFAULT_ZK + ".")
  String zk;

  @Option(names = "--history", paramLabel = "FILE", description = "Where the history is kept. Default: ~/.shardwise_history.")
  Path history;

  @Override
  public Integer call() throws IOException {
    boolean tty = System.console() != null;
    TerminalBuilder builder = TerminalBuilder.builder().name("shardwise").system(true);
    if (!tty) {
      builder.dumb(true).type(Terminal.TYPE_DUMB); // input from a file or a pipe: no escape sequences in the output
    }
    try (Terminal terminal = builder.build()) {
      return run(terminal, tty);
    } finally {
      Session.current().close();
    }
  }

  /** The shell over {@code in} and {@code out} (a test's terminal). */
  int run(InputStream in, OutputStream out) throws IOException {
    try (Terminal terminal = TerminalBuilder.builder().system(false).streams(in, out).dumb(true).type(Terminal.TYPE_DUMB).build()) {
      return run(terminal, false);
    } finally {
      Session.current().close();
    }
  }

  private int run(Terminal terminal, boolean interactive) {
    PrintWriter out = terminal.writer();
    CommandLine cli = Main.commandLine();
    cli.setOut(out);
    cli.setErr(out);
    String shellZk = ClusterOptions.zkOrDefault(zk);
    cli.setDefaultValueProvider(arg -> arg instanceof OptionSpec o && o.longestName().equals("--zk") ? shellZk : null);
    Path historyFile = history != null ? history : Path.of(System.getProperty("user.home"), ".shardwise_history");
    DefaultParser parser = new DefaultParser();
    parser.setEscapeChars(new char[0]); // a backslash starts the shell's own commands (\timing), it escapes nothing
    LineReader reader = LineReaderBuilder.builder().appName("shardwise").terminal(terminal).parser(parser)
        .completer(new Completion(cli, shellZk)).variable(LineReader.HISTORY_FILE, historyFile)
        .option(LineReader.Option.DISABLE_EVENT_EXPANSION, true).build();
    if (interactive) {
      out.println("shardwise shell on ZooKeeper " + shellZk + ": commands without 'shardwise' (help lists them), \\timing, \\reconnect, \\q");
    }
    boolean timing = false;
    while (true) {
      String line;
      try {
        line = reader.readLine("shardwise> ").strip();
      } catch (UserInterruptException e) {
        continue; // Ctrl-C: a new line
      } catch (EndOfFileException e) {
        break; // Ctrl-D or the end of the input
      }
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      switch (line) {
        case "\\q", "exit", "quit" -> {
          return Main.EXIT_OK;
        }
        case "\\timing" -> {
          timing = !timing;
          out.println("timing is " + (timing ? "on" : "off"));
          continue;
        }
        case "\\reconnect" -> {
          Session.current().close();
          out.println("connections closed; the next command opens them again");
          continue;
        }
        case "\\status" -> {
          out.println(Session.current().describe());
          continue;
        }
        default -> {
          // a command
        }
      }
      List<String> words = new ArrayList<>(reader.getParsedLine().words());
      words.removeIf(String::isEmpty);
      if (!words.isEmpty() && words.get(0).equals("shardwise")) {
        words.remove(0);
      }
      if (words.isEmpty()) {
        continue;
      }
      if (words.get(0).equals("shell")) {
        out.println("already in the shell");
        continue;
      }
      long started = System.nanoTime();
      int code = cli.execute(words.toArray(String[]::new));
      if (timing) {
        out.printf(Locale.ROOT, "(%.1f ms%s)%n", (System.nanoTime() - started) / 1e6, code == 0 ? "" : ", exit code " + code);
      }
      out.flush();
    }
    return Main.EXIT_OK;
  }

  /** Completes command and subcommand names, options, and table names where a table is expected. */
  private static final class Completion implements org.jline.reader.Completer {
    private static final long TABLES_TTL_NANOS = 5_000_000_000L;

    private final CommandLine root;
    private final String zk;
    private List<String> tables = List.of();
    private long tablesAt = Long.MIN_VALUE;

    Completion(CommandLine root, String zk) {
      this.root = root;
      this.zk = zk;
    }

    @Override
    public void complete(LineReader reader, ParsedLine line, List<Candidate> candidates) {
      List<String> before = line.words().subList(0, line.wordIndex());
      CommandLine at = root;
      int positional = 0;
      String previous = null;
      for (String word : before) {
        CommandLine sub = at.getSubcommands().get(word);
        if (sub != null && positional == 0) {
          at = sub;
        } else if (!word.startsWith("-") && (previous == null || !takesValue(at, previous))) {
          positional++;
        }
        previous = word;
      }
      if (previous != null && takesValue(at, previous)) {
        if (previous.equals("--table")) {
          tables().forEach(t -> candidates.add(new Candidate(t)));
        }
        return; // an option's value: nothing else fits
      }
      if (at == root) {
        for (String builtin : List.of("\\timing", "\\reconnect", "\\status", "\\q")) {
          candidates.add(new Candidate(builtin));
        }
      }
      if (positional == 0) {
        at.getSubcommands().keySet().forEach(name -> candidates.add(new Candidate(name)));
      }
      CommandSpec spec = at.getCommandSpec();
      for (OptionSpec o : spec.options()) {
        candidates.add(new Candidate(o.longestName()));
      }
      List<PositionalParamSpec> params = spec.positionalParameters();
      if (positional < params.size()) {
        String label = params.get(positional).paramLabel();
        if (label.equals("TABLE") || (label.equals("NAME") && spec.parent() != null && spec.parent().name().equals("table")
            && !spec.name().equals("create"))) {
          tables().forEach(t -> candidates.add(new Candidate(t)));
        }
      }
    }

    private static boolean takesValue(CommandLine at, String word) {
      OptionSpec o = at.getCommandSpec().findOption(word);
      return o != null && o.arity().max() > 0;
    }

    /** The cluster's table names, fetched at most every 5 s; none while the cluster cannot be reached. */
    private List<String> tables() {
      if (System.nanoTime() - tablesAt < TABLES_TTL_NANOS) {
        return tables;
      }
      tablesAt = System.nanoTime();
      try {
        ClusterOptions options = new ClusterOptions();
        options.zk = zk;
        options.via = "client";
        tables = options.connect().listTables().stream().map(TableDescription::name).sorted().toList();
      } catch (RuntimeException e) {
        tables = List.of();
      }
      return tables;
    }
  }

  static {
    // JLine logs through java.util.logging; its notes about the terminal are not for users.
    java.util.logging.Logger.getLogger("org.jline").setLevel(java.util.logging.Level.SEVERE);
  }
}
