package io.shardwise.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code shardwise} command. Exit codes, for scripts: 0 success, 1 the operation failed, 2 bad
 * usage or bad input, 3 not found (a key, a table, an entry), 4 conflict (a version mismatch, a
 * name that exists), 5 unavailable (ZooKeeper, the owner, a deadline), 6 outcome unknown (a write
 * that may or may not have been applied). Errors are one line on stderr, never a stack trace
 * ({@code SHARDWISE_DEBUG=1} adds it).
 */
@Command(
    name = "shardwise",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "A sharded key-value store that shows every sharding decision before it is made.",
    subcommands = {
      SimulateCommand.class,
      BenchCommand.class,
      DevCommand.class,
      NodeCommand.class,
      RouterCommand.class,
      TableCommand.class,
      KvCommand.class,
      TxnCommand.class,
      QueryCommand.class,
      IndexCommand.class,
      ClusterCommand.class,
      RebalanceCommand.class,
      HotspotsCommand.class,
      ZooKeeperCommand.class,
      ShellCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main implements Runnable {

  public static final int EXIT_OK = 0;
  public static final int EXIT_FAILURE = 1;
  public static final int EXIT_USAGE = 2;
  public static final int EXIT_NOT_FOUND = 3;
  public static final int EXIT_CONFLICT = 4;
  public static final int EXIT_UNAVAILABLE = 5;
  public static final int EXIT_UNKNOWN = 6;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(args));
  }

  /** Runs the command line and returns its exit code, closing the connections it opened; used by tests. */
  public static int execute(String... args) {
    try {
      return commandLine().execute(args);
    } finally {
      Session.current().close();
    }
  }

  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Main());
    cli.setExitCodeExceptionMapper(Main::exitCode);
    cli.setParameterExceptionHandler(
        (e, args) -> {
          CommandLine cmd = e.getCommandLine();
          // One line: the command, the problem and (in the message) the valid choices.
          cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
          if (e instanceof CommandLine.UnmatchedArgumentException unmatched) {
            CommandLine.UnmatchedArgumentException.printSuggestions(unmatched, cmd.getErr()); // "Did you mean: shardwise table?"
          }
          cmd.getErr().flush();
          return EXIT_USAGE;
        });
    cli.setExecutionExceptionHandler(
        (e, cmd, parsed) -> {
          String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
          cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + message);
          if (System.getenv("SHARDWISE_DEBUG") != null) {
            e.printStackTrace(cmd.getErr());
          }
          cmd.getErr().flush();
          return cmd.getExitCodeExceptionMapper().getExitCode(e);
        });
    return cli;
  }

  /** The exit code for a command that failed with {@code e} (see the class comment). */
  static int exitCode(Throwable e) {
    if (e instanceof CliException c) {
      return c.exitCode();
    }
    if (e instanceof IllegalArgumentException) {
      return EXIT_USAGE;
    }
    if (e instanceof io.shardwise.client.VersionMismatchException) {
      return EXIT_CONFLICT;
    }
    if (e instanceof io.shardwise.client.OutcomeUnknownException) {
      return EXIT_UNKNOWN;
    }
    if (e instanceof io.shardwise.client.ShardwiseException s) {
      return switch (s.code()) {
        case NOT_FOUND -> EXIT_NOT_FOUND;
        case ALREADY_EXISTS, ABORTED -> EXIT_CONFLICT;
        case INVALID_ARGUMENT, OUT_OF_RANGE -> EXIT_USAGE;
        case UNAVAILABLE, DEADLINE_EXCEEDED -> EXIT_UNAVAILABLE;
        default -> EXIT_FAILURE;
      };
    }
    return EXIT_FAILURE;
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /**
   * The version and the commit it was built from ({@code git.properties}, written by the build), for
   * example {@code shardwise 0.1.0-SNAPSHOT (commit 310023f)}; {@code -dirty} marks uncommitted changes.
   */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      java.util.Properties git = new java.util.Properties();
      try (java.io.InputStream in = Main.class.getResourceAsStream("git.properties")) {
        if (in != null) {
          git.load(in);
        }
      } catch (java.io.IOException e) {
        // no commit to show
      }
      String version = Main.class.getPackage().getImplementationVersion();
      if (version == null) {
        version = git.getProperty("git.build.version", "(unknown version)");
      }
      String commit = git.getProperty("git.commit.id.abbrev", "");
      boolean dirty = Boolean.parseBoolean(git.getProperty("git.dirty", "false"));
      return new String[] {"shardwise " + version + (commit.isEmpty() ? "" : " (commit " + commit + (dirty ? "-dirty" : "") + ")")};
    }
  }
}
