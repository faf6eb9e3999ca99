package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every command's help, as a user reads it: complete one-line summaries, no picocli warnings. */
class HelpTest {

  private static List<CommandLine> allCommands(CommandLine root) {
    List<CommandLine> out = new ArrayList<>();
    out.add(root);
    for (CommandLine sub : root.getSubcommands().values()) {
      out.addAll(allCommands(sub));
    }
    return out;
  }

  @Test
  void everySummaryInACommandListIsACompleteSentence() {
    for (CommandLine c : allCommands(Main.commandLine())) {
      String[] description = c.getCommandSpec().usageMessage().description();
      String[] header = c.getCommandSpec().usageMessage().header();
      String summary = header.length > 0 ? header[0] : description.length > 0 ? description[0] : "";
      assertThat(summary.strip()).as("the summary of '%s'", c.getCommandSpec().qualifiedName()).isNotEmpty().endsWith(".");
    }
  }

  @Test
  void noHelpPrintsAWarning() {
    PrintStream before = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      for (CommandLine c : allCommands(Main.commandLine())) {
        c.getUsageMessage();
      }
    } finally {
      System.setErr(before);
    }
    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }
}
