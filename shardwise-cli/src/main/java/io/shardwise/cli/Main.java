package io.shardwise.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code shardwise} command. Exit codes: 0 success, 1 failure, 2 bad usage or bad input. Errors
 * are one line on stderr, never a stack trace ({@code SHARDWISE_DEBUG=1} adds it).
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
      ClusterCommand.class,
      RebalanceCommand.class,
      ZooKeeperCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main implements Runnable {

  public static final int EXIT_OK = 0;
  public static final int EXIT_FAILURE = 1;
  public static final int EXIT_USAGE = 2;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(args));
  }

  /** Runs the command line and returns its exit code; used by tests. */
  public static int execute(String... args) {
    return commandLine().execute(args);
  }

  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Main());
    cli.setExitCodeExceptionMapper(e -> e instanceof IllegalArgumentException ? EXIT_USAGE : EXIT_FAILURE);
    cli.setParameterExceptionHandler(
        (e, args) -> {
          CommandLine cmd = e.getCommandLine();
          // One line: the command, the problem and (in the message) the valid choices.
          cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
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

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The version from the jar manifest, or "dev" when run from classes. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"shardwise " + (v == null ? "dev" : v)};
    }
  }
}
