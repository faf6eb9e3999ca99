package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.console.PlanJson;
import io.shardwise.core.map.NodeId;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.MoveRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ScheduledAction;
import io.shardwise.server.balance.Schedule;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code shardwise rebalance plan|approve|apply|reject|status|pause|resume|cancel|mode|split-size|split-load|merge|schedule}: the
 * operator's side of the balancer. Plans live in ZooKeeper; the balancer (on the node that leads
 * it) runs approved plans.
 */
@Command(name = "rebalance", mixinStandardHelpOptions = true,
    description = {"Plan, preview, approve and follow shard moves.",
        "Modes: manual (plans only on request), suggest (default: the balancer proposes, you approve), auto (it applies plans within limits)."},
    subcommands = {RebalanceCommand.PlanCommand.class, RebalanceCommand.Approve.class, RebalanceCommand.Apply.class,
        RebalanceCommand.Reject.class, RebalanceCommand.Cancel.class, RebalanceCommand.Status.class, RebalanceCommand.Pause.class,
        RebalanceCommand.Resume.class, RebalanceCommand.Mode.class, RebalanceCommand.SplitSize.class, RebalanceCommand.SplitLoad.class,
        RebalanceCommand.Merge.class, RebalanceCommand.ScheduleCommand.class})
final class RebalanceCommand {

  /** {@code --zk}, shared by every subcommand. */
  static final class Zk {
    @Option(names = "--zk", paramLabel = "HOSTS", description = "ZooKeeper connect string. Default: $SHARDWISE_ZK or 127.0.0.1:2181.")
    String zk;
  }

  @Command(name = "plan", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Compute and store a plan that gives every live node its weighted share of each table's bytes.",
          "Weight: the node's capacity=N label, default 1; shard counts are the tie-breaker. The plan shows bytes moved",
          "against the minimum and the balance after, and waits as pending: run it with 'shardwise rebalance apply ID'."})
  static final class PlanCommand implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Option(names = "--drain", paramLabel = "NODE", description = "Plan as if NODE were drained (a what-if; implies --preview); repeatable.")
    List<String> drain = new ArrayList<>();

    @Option(names = "--preview", description = "Print the plan without storing it.")
    boolean preview;

    @Option(names = "--moves", description = "List every move (default: moves per route).")
    boolean moves;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      try (Peers peers = new Peers(4 << 20)) {
        Set<NodeId> extra = new TreeSet<>();
        for (String d : drain) {
          if (!c.liveNodesNow().containsKey(NodeId.of(d))) {
            throw new IllegalArgumentException("--drain " + d + ": no live node has that id; live nodes: " + c.liveNodesNow().keySet());
          }
          extra.add(NodeId.of(d));
        }
        PlanRecord plan = new Rebalancing(c).propose(peers, extra, !preview && extra.isEmpty());
        PrintWriter out = spec.commandLine().getOut();
        if (output == OutputFormat.json) {
          Output.json(out, PlanOutput.json(plan));
        } else {
          PlanOutput.print(out, plan, moves);
          if (plan.getMovesCount() > 0 && !plan.getId().isEmpty()) {
            out.println("run it with: shardwise rebalance apply " + plan.getId());
          }
        }
      }
      return Main.EXIT_OK;
    }
  }

  /** Approve or apply: the same act. */
  abstract static class ApproveBase implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(paramLabel = "PLAN-ID", description = "The plan, e.g. p-0000000003.")
    String id;

    @Option(names = "--accept-data-loss",
        description = "Approve a plan that gives shards of absent nodes to other nodes empty (their data stays on the absent nodes).")
    boolean acceptDataLoss;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      PlanRecord p = new Rebalancing(c).approve(id, acceptDataLoss);
      spec.commandLine().getOut().println("plan " + p.getId() + " approved: " + (p.getResizesCount() > 0
          ? p.getResizesCount() + " splits and merges" : Output.count(p.getMovesCount(), "move"))
          + "; follow it with: shardwise rebalance status --wait");
      return Main.EXIT_OK;
    }
  }

  @Command(name = "approve", mixinStandardHelpOptions = true, description = "Approve a pending plan: the balancer runs it.")
  static final class Approve extends ApproveBase {}

  @Command(name = "apply", mixinStandardHelpOptions = true, description = "Run a plan made by 'rebalance plan' (same as approve).")
  static final class Apply extends ApproveBase {}

  @Command(name = "reject", mixinStandardHelpOptions = true, description = "Reject a pending plan.")
  static final class Reject implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(paramLabel = "PLAN-ID")
    String id;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      new Rebalancing(c).reject(id);
      spec.commandLine().getOut().println("plan " + id + " rejected");
      return Main.EXIT_OK;
    }
  }

  @Command(name = "cancel", mixinStandardHelpOptions = true,
      description = {"Cancel a plan (default: the running one).",
          "Moves not yet cut over stop and leave their source the owner; moves already cut over stay."})
  static final class Cancel implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "PLAN-ID")
    String id;

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      Rebalancing r = new Rebalancing(c);
      String target = id != null ? id : r.active().map(PlanRecord::getId)
          .orElseThrow(() -> new IllegalStateException("no plan is running; name one: shardwise rebalance cancel PLAN-ID"));
      PlanRecord p = r.cancel(target);
      spec.commandLine().getOut().println("plan " + target + (p.getState() == PlanRecord.State.CANCELLED ? " cancelled"
          : " is cancelling: moves in flight stop before their cutover"));
      return Main.EXIT_OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
      description = "The balancer's mode and the running (or latest) plan with each move's progress.")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "PLAN-ID", description = "Default: the running plan, else the latest.")
    String id;

    @Option(names = "--wait", description = "Block until the plan finishes; exit 1 if it failed or was cancelled.")
    boolean await;

    @Option(names = "--moves", description = "List every move (default: moves per route and state, then the moving and failed ones).")
    boolean moves;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "1h", description = "With --wait. Default: ${DEFAULT-VALUE}.")
    String timeout;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;

    @Override
    public Integer call() throws InterruptedException {
      Duration limit = Durations.parse("--timeout", timeout);
      PrintWriter out = spec.commandLine().getOut();
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      Rebalancing r = new Rebalancing(c);
      BalancerSettings settings = r.records().settings();
      Optional<PlanRecord> plan = find(r);
      if (await && plan.isPresent()) {
        long deadline = System.nanoTime() + limit.toNanos();
        try (ProgressBar bar = output == OutputFormat.json ? null : PlanOutput.progressBar(plan.get())) {
          while (!RebalanceRecords.finished(plan.get().getState()) && System.nanoTime() < deadline) {
            Thread.sleep(250);
            plan = r.records().plan(plan.get().getId());
            PlanOutput.update(bar, plan.get());
          }
        }
      }
      if (output == OutputFormat.json) {
        ObjectNode root = Output.object();
        PlanOutput.settings(root.putObject("balancer"), settings);
        plan.ifPresent(p -> root.set("plan", PlanOutput.json(p)));
        Output.json(out, root);
      } else {
        out.println(PlanOutput.settingsLine(settings));
        if (plan.isEmpty()) {
          out.println("no plan yet");
        } else {
          PlanOutput.print(out, plan.get(), moves);
        }
      }
      if (await && plan.isPresent()) {
        PlanRecord.State s = plan.get().getState();
        if (!RebalanceRecords.finished(s)) {
          spec.commandLine().getErr().println("plan " + plan.get().getId() + " is still " + Rebalancing.describe(s) + " after " + timeout);
          return Main.EXIT_FAILURE;
        }
        return s == PlanRecord.State.DONE ? Main.EXIT_OK : Main.EXIT_FAILURE;
      }
      return Main.EXIT_OK;
    }

    private Optional<PlanRecord> find(Rebalancing r) {
      if (id != null) {
        return Optional.of(r.records().plan(id).orElseThrow(() -> CliException.notFound("no plan " + id)));
      }
      Optional<PlanRecord> active = r.active();
      if (active.isPresent()) {
        return active;
      }
      List<PlanRecord> all = r.records().plans();
      return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1));
    }
  }

  /** Pause or resume: one setting, flipped. */
  abstract static class PauseBase implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    abstract boolean paused();

    @Override
    public Integer call() {
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      new RebalanceRecords(c).updateSettings(s -> s.toBuilder().setPaused(paused()).build());
      spec.commandLine().getOut().println(paused()
          ? "rebalancing paused: no new moves start (resume with: shardwise rebalance resume)"
          : "rebalancing resumed");
      return Main.EXIT_OK;
    }
  }

  @Command(name = "pause", mixinStandardHelpOptions = true, description = "Start no new moves (moves in flight finish).")
  static final class Pause extends PauseBase {
    @Override
    boolean paused() {
      return true;
    }
  }

  @Command(name = "resume", mixinStandardHelpOptions = true, description = "Let moves start again.")
  static final class Resume extends PauseBase {
    @Override
    boolean paused() {
      return false;
    }
  }

  @Command(name = "mode", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Show or set the balancer's mode and limits.")
  static final class Mode implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "MODE", description = "manual, suggest or auto (with --table also: default).")
    String mode;

    @Option(names = "--table", paramLabel = "TABLE", description = "Set MODE for this table only (default: back to the cluster's mode).")
    String table;

    @Option(names = "--max-moves-per-node", paramLabel = "K", description = "Concurrent moves a node takes part in, 1 to 64. Initially 2.")
    Integer maxMoves;

    @Option(names = "--bandwidth", paramLabel = "MB/S", description = "Snapshot copy limit per move in MB/s; 0 lifts the limit. Initially unlimited.")
    Double bandwidth;

    @Option(names = "--auto-max-fraction", paramLabel = "F",
        description = "auto: plans moving more than this fraction of the bytes wait for approval, in (0, 1]. Initially 0.25.")
    Double autoMaxFraction;

    @Option(names = "--absent-grace", paramLabel = "DURATION",
        description = "How long a node may be absent before its shards move, at least 1s (e.g. 10m). Initially 10m.")
    String absentGrace;

    @Option(names = "--max-move-attempts", paramLabel = "N",
        description = "Attempts per move, 1 to 100, with backoff from 0.5 s doubling to 30 s. Initially 8 (about two minutes).")
    Integer maxMoveAttempts;

    @Override
    public Integer call() {
      if (table != null && mode == null) {
        throw new IllegalArgumentException("--table needs a MODE: manual, suggest, auto or default");
      }
      boolean clearTable = table != null && mode.equals("default");
      BalancerSettings.Mode m = mode == null || clearTable ? null : parseMode(mode);
      if (maxMoveAttempts != null && (maxMoveAttempts < 1 || maxMoveAttempts > 100)) {
        throw new IllegalArgumentException("--max-move-attempts must be between 1 and 100, not " + maxMoveAttempts);
      }
      if (maxMoves != null && (maxMoves < 1 || maxMoves > 64)) {
        throw new IllegalArgumentException("--max-moves-per-node must be between 1 and 64, not " + maxMoves);
      }
      if (bandwidth != null && (bandwidth < 0 || bandwidth.isNaN())) {
        throw new IllegalArgumentException("--bandwidth must be 0 (none) or more MB/s, not " + bandwidth);
      }
      if (autoMaxFraction != null && !(autoMaxFraction > 0 && autoMaxFraction <= 1)) {
        throw new IllegalArgumentException("--auto-max-fraction must be in (0, 1], not " + autoMaxFraction);
      }
      Duration grace = absentGrace == null ? null : Durations.parse("--absent-grace", absentGrace);
      if (grace != null && grace.toSeconds() < 1) {
        throw new IllegalArgumentException("--absent-grace must be at least 1s");
      }
      BalancerSettings after;
      Coordinator c = ClusterOptions.coordinator(zk.zk);
      RebalanceRecords records = new RebalanceRecords(c);
      boolean change = m != null || clearTable || maxMoves != null || bandwidth != null || autoMaxFraction != null || grace != null
          || maxMoveAttempts != null;
      after = !change ? records.settings() : records.updateSettings(s -> {
        BalancerSettings.Builder b = s.toBuilder();
        if (clearTable) {
          b.removeTableModes(table);
        } else if (m != null && table != null) {
          b.putTableModes(table, m);
        } else if (m != null) {
          b.setMode(m);
        }
        if (maxMoves != null) {
          b.setMaxMovesPerNode(maxMoves);
        }
        if (bandwidth != null) {
          b.setBandwidthBytesPerSecond(Math.round(bandwidth * 1_000_000));
        }
        if (autoMaxFraction != null) {
          b.setAutoMaxFraction(autoMaxFraction);
        }
        if (grace != null) {
          b.setAbsentGraceSeconds(grace.toSeconds());
        }
        if (maxMoveAttempts != null) {
          b.setMaxMoveAttempts(maxMoveAttempts);
        }
        return b.build();
      });
      spec.commandLine().getOut().println(PlanOutput.settingsLine(after));
      return Main.EXIT_OK;
    }

    private static BalancerSettings.Mode parseMode(String text) {
      switch (text) {
        case "manual":
          return BalancerSettings.Mode.MANUAL;
        case "suggest":
          return BalancerSettings.Mode.SUGGEST;
        case "auto":
          return BalancerSettings.Mode.AUTO;
        default:
          throw new IllegalArgumentException("MODE must be manual, suggest or auto, not '" + text + "'");
      }
    }
  }

  @Command(name = "split-size", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Show or set the size past which the balancer's leader splits a range or hashrange shard by size.",
          "Every few seconds it reads each owner's estimate of its shards' stored bytes, and splits the shard furthest past",
          "its table's size at the partition key with half the bytes below it (only the map changes). Initially 512MiB."})
  static final class SplitSize implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "SIZE", description = "A size (512MiB, 64KiB, 2GiB, bytes), off, or default.")
    String size;

    @Option(names = "--table", paramLabel = "TABLE", description = "Set SIZE for this table only (default: back to the cluster's size).")
    String table;

    @Override
    public Integer call() {
      if (table != null && size == null) {
        throw new IllegalArgumentException("--table needs a SIZE, off or default");
      }
      Long bytes = size == null || size.equals("default") ? null : size.equals("off") ? -1L : Sizes.parse("SIZE", size);
      if (bytes != null && bytes == 0) {
        throw new IllegalArgumentException("SIZE must be more than 0 bytes (off turns splitting by size off)");
      }
      RebalanceRecords records = new RebalanceRecords(ClusterOptions.coordinator(zk.zk));
      BalancerSettings after = size == null ? records.settings() : records.updateSettings(s -> {
        BalancerSettings.Builder b = s.toBuilder();
        if (table != null && bytes == null) {
          b.removeTableSplitBytes(table);
        } else if (table != null) {
          b.putTableSplitBytes(table, bytes);
        } else {
          b.setSplitBytes(bytes == null ? 0 : bytes);
        }
        return b.build();
      });
      spec.commandLine().getOut().println(PlanOutput.settingsLine(after));
      return Main.EXIT_OK;
    }
  }

  /** The longest window a policy may have: the seconds of request rates a node keeps. */
  private static final Duration MAX_WINDOW = Duration.ofSeconds(RebalanceRecords.MAX_WINDOW_SECONDS);

  @Command(name = "split-load", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Show or set the request rate past which a range or hashrange shard splits by load.",
          "A shard whose reads and writes stay above RATE per second in every second of the window splits at the sampled key that",
          "divides its recent requests most evenly; a shard whose load is one hot key does not split (see shardwise hotspots).",
          "Initially 2500 requests/s over 10s. Splits follow the table's mode: suggest proposes a plan, auto runs it."})
  static final class SplitLoad implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "RATE", description = "Requests per second (1 to 100000000), off, or default.")
    String rate;

    @Option(names = "--table", paramLabel = "TABLE", description = "Set RATE for this table only (default: back to the cluster's rate).")
    String table;

    @Option(names = "--window", paramLabel = "DURATION", description = "How long the rate must stay above RATE, 1s to 180s (cluster-wide).")
    String window;

    @Override
    public Integer call() {
      if (table != null && rate == null) {
        throw new IllegalArgumentException("--table needs a RATE, off or default");
      }
      Long rps = rate == null || rate.equals("default") ? null : rate.equals("off") ? -1L : parseRate(rate);
      Duration w = window == null ? null : Durations.parseWithin("--window", window, Duration.ofSeconds(1), MAX_WINDOW);
      RebalanceRecords records = new RebalanceRecords(ClusterOptions.coordinator(zk.zk));
      BalancerSettings after = rate == null && w == null ? records.settings() : records.updateSettings(s -> {
        BalancerSettings.Builder b = s.toBuilder();
        if (rate != null && table != null && rps == null) {
          b.removeTableSplitRps(table);
        } else if (rate != null && table != null) {
          b.putTableSplitRps(table, rps);
        } else if (rate != null) {
          b.setSplitRps(rps == null ? 0 : rps);
        }
        if (w != null) {
          b.setSplitRpsSeconds((int) w.toSeconds());
        }
        return b.build();
      });
      spec.commandLine().getOut().println(PlanOutput.settingsLine(after));
      return Main.EXIT_OK;
    }

    private static long parseRate(String text) {
      long rps;
      try {
        rps = Long.parseLong(text.replace("_", "").replace(",", ""));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("RATE must be a number of requests per second, off or default, not '" + text + "'");
      }
      if (rps < 1 || rps > 100_000_000) {
        throw new IllegalArgumentException("RATE must be between 1 and 100000000 requests per second, not " + text);
      }
      return rps;
    }
  }

  @Command(name = "merge", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Show or set when two neighbouring shards merge by themselves.",
          "Two adjacent range or hashrange shards of one node, both made by the balancer's own splits, merge when their bytes",
          "together stay under FRACTION of the split size and their requests together under FRACTION of the split rate for the",
          "whole window. Shards a table was created with, and those an operator split, stay until an operator merges them.",
          "Initially 0.25 over 60s (the halves of a split hold about half each, so they never merge back at once)."})
  static final class Merge implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Zk zk;

    @Parameters(arity = "0..1", paramLabel = "FRACTION", description = "More than 0 and at most 0.45, off, or default.")
    String fraction;

    @Option(names = "--window", paramLabel = "DURATION", description = "How long they must stay under it, 1s to 180s.")
    String window;

    @Override
    public Integer call() {
      Double f = fraction == null || fraction.equals("default") ? null : fraction.equals("off") ? -1.0 : parseFraction(fraction);
      Duration w = window == null ? null : Durations.parseWithin("--window", window, Duration.ofSeconds(1), MAX_WINDOW);
      RebalanceRecords records = new RebalanceRecords(ClusterOptions.coordinator(zk.zk));
      BalancerSettings after = fraction == null && w == null ? records.settings() : records.updateSettings(s -> {
        BalancerSettings.Builder b = s.toBuilder();
        if (fraction != null) {
          b.setMergeFraction(f == null ? 0 : f);
        }
        if (w != null) {
          b.setMergeSeconds((int) w.toSeconds());
        }
        return b.build();
      });
      spec.commandLine().getOut().println(PlanOutput.settingsLine(after));
      return Main.EXIT_OK;
    }

    /** Above 0.45 the merged shard would be close enough to the split size to split again soon: no hysteresis left. */
    private static double parseFraction(String text) {
      double f;
      try {
        f = Double.parseDouble(text);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("FRACTION must be a number, off or default, not '" + text + "'");
      }
      if (!(f > 0 && f <= RebalanceRecords.MAX_MERGE_FRACTION)) {
        throw new IllegalArgumentException("FRACTION must be more than 0 and at most " + RebalanceRecords.MAX_MERGE_FRACTION
            + " (above it a merged shard is close to splitting again), not " + text);
      }
      return f;
    }
  }

  @Command(name = "schedule", mixinStandardHelpOptions = true,
      description = {"Schedule a presplit or a plan for a given time, before a known event (a launch, a sale); list and cancel them.",
          "The balancer's leader runs each at its first look from that time (a second or so), and records what it did."},
      subcommands = {ScheduleCommand.Presplit.class, ScheduleCommand.PlanAt.class, ScheduleCommand.ListActions.class,
          ScheduleCommand.CancelAction.class})
  static final class ScheduleCommand {

    /** The latest time an action may be scheduled for. */
    static final Duration HORIZON = Duration.ofDays(366);

    /** When: {@code --at} an ISO-8601 instant or {@code --in} a duration from now; one of them. */
    static final class When {
      @Option(names = "--at", paramLabel = "TIME", description = "An ISO-8601 instant, e.g. 2026-12-24T08:00:00Z.")
      String at;

      @Option(names = "--in", paramLabel = "DURATION", description = "From now, e.g. 90m or 2h.")
      String in;

      long millis() {
        if ((at == null) == (in == null)) {
          throw new IllegalArgumentException("give --at TIME or --in DURATION (one of them)");
        }
        java.time.Instant now = java.time.Instant.now();
        java.time.Instant when;
        if (at != null) {
          try {
            when = java.time.Instant.parse(at);
          } catch (java.time.format.DateTimeParseException e) {
            throw new IllegalArgumentException("--at takes an ISO-8601 instant such as 2026-12-24T08:00:00Z, not '" + at + "'");
          }
          if (!when.isAfter(now)) {
            throw new IllegalArgumentException("--at " + at + " is not in the future (it is " + now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
                + " now)");
          }
        } else {
          when = now.plus(Durations.parseWithin("--in", in, Duration.ofSeconds(1), HORIZON));
        }
        if (when.isAfter(now.plus(HORIZON))) {
          throw new IllegalArgumentException("an action is scheduled at most " + HORIZON.toDays() + " days ahead, not for " + when);
        }
        return when.toEpochMilli();
      }
    }

    @Command(name = "presplit", mixinStandardHelpOptions = true,
        description = "At the given time, split table NAME into N shards in all from its live keys (as 'table presplit').")
    static final class Presplit implements Callable<Integer> {
      @Spec CommandSpec spec;
      @Mixin Zk zk;
      @Mixin When when;

      @Parameters(paramLabel = "NAME")
      String table;

      @Option(names = "--shards", required = true, paramLabel = "N", description = "The table's shards after it, 2 to 65536.")
      int shards;

      @Option(names = "--note", paramLabel = "TEXT", description = "Why, for the list (e.g. \"ticket launch\").")
      String note = "";

      @Override
      public Integer call() {
        TableCommand.checkPresplitShards(shards);
        long at = when.millis();
        ScheduledAction a = new Schedule(ClusterOptions.coordinator(zk.zk)).add(ScheduledAction.newBuilder()
            .setKind(ScheduledAction.Kind.PRESPLIT).setTable(table).setShards(shards).setAtMillis(at).setNote(note).build());
        spec.commandLine().getOut().println("scheduled " + a.getId() + ": presplit " + table + " into " + shards + " shards at "
            + java.time.Instant.ofEpochMilli(at) + " (cancel with: shardwise rebalance schedule cancel " + a.getId() + ")");
        return Main.EXIT_OK;
      }
    }

    @Command(name = "plan", mixinStandardHelpOptions = true,
        description = "At the given time, make a plan for the cluster as it is then and approve it (as 'rebalance plan' then 'apply').")
    static final class PlanAt implements Callable<Integer> {
      @Spec CommandSpec spec;
      @Mixin Zk zk;
      @Mixin When when;

      @Option(names = "--note", paramLabel = "TEXT", description = "Why, for the list.")
      String note = "";

      @Override
      public Integer call() {
        long at = when.millis();
        ScheduledAction a = new Schedule(ClusterOptions.coordinator(zk.zk)).add(ScheduledAction.newBuilder()
            .setKind(ScheduledAction.Kind.PLAN).setAtMillis(at).setNote(note).build());
        spec.commandLine().getOut().println("scheduled " + a.getId() + ": a plan made and approved at " + java.time.Instant.ofEpochMilli(at)
            + " (cancel with: shardwise rebalance schedule cancel " + a.getId() + ")");
        return Main.EXIT_OK;
      }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "The scheduled actions, waiting and done (the last 100).")
    static final class ListActions implements Callable<Integer> {
      @Spec CommandSpec spec;
      @Mixin Zk zk;

      @Override
      public Integer call() {
        List<List<String>> rows = new ArrayList<>();
        for (ScheduledAction a : new Schedule(ClusterOptions.coordinator(zk.zk)).list()) {
          rows.add(List.of(a.getId(), java.time.Instant.ofEpochMilli(a.getAtMillis()).toString(),
              a.getKind() == ScheduledAction.Kind.PRESPLIT ? "presplit " + a.getTable() + " into " + a.getShards() : "plan and approve",
              a.getState().name().toLowerCase(Locale.ROOT), a.getResult(), a.getNote()));
        }
        PrintWriter out = spec.commandLine().getOut();
        if (rows.isEmpty()) {
          out.println("nothing is scheduled");
        } else {
          Output.table(out, List.of("ID", "AT", "ACTION", "STATE", "RESULT", "NOTE"), rows);
        }
        return Main.EXIT_OK;
      }
    }

    @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Cancel a waiting action.")
    static final class CancelAction implements Callable<Integer> {
      @Spec CommandSpec spec;
      @Mixin Zk zk;

      @Parameters(paramLabel = "ID", description = "The action, e.g. s-0000000002.")
      String id;

      @Override
      public Integer call() {
        Schedule.checkId(id);
        new Schedule(ClusterOptions.coordinator(zk.zk)).cancel(id);
        spec.commandLine().getOut().println("cancelled " + id);
        return Main.EXIT_OK;
      }
    }
  }

  /** How plans and settings are printed. */
  static final class PlanOutput {
    private PlanOutput() {}

    static String settingsLine(BalancerSettings s) {
      return String.format(Locale.ROOT,
          "balancer: mode %s%s, at most %d moves per node, bandwidth %s, auto limit %.0f%% of bytes, absent grace %s, %d attempts per move",
          s.getMode().name().toLowerCase(Locale.ROOT), s.getPaused() ? " (paused)" : "", s.getMaxMovesPerNode(),
          s.getBandwidthBytesPerSecond() == 0 ? "unlimited" : String.format(Locale.ROOT, "%.1f MB/s", s.getBandwidthBytesPerSecond() / 1e6),
          100 * s.getAutoMaxFraction(), Durations.format(Duration.ofSeconds(s.getAbsentGraceSeconds())), s.getMaxMoveAttempts())
          + (s.getTableModesCount() == 0 ? "" : "; tables: " + tableModes(s)) + "; " + splitSizes(s) + "; " + splitRates(s) + "; "
          + merges(s);
    }

    /** The table's split and merge policy and mode, in one line (for {@code table describe}). */
    static String policyLine(BalancerSettings s, String table) {
      BalancerSettings.Mode mode = RebalanceRecords.modeOf(s, table);
      long bytes = RebalanceRecords.splitBytesOf(s, table);
      long rps = RebalanceRecords.splitRpsOf(s, table);
      double f = RebalanceRecords.mergeFraction(s);
      String split = bytes < 0 && rps < 0 ? "never splits by itself"
          : "splits past " + (bytes < 0 ? "" : io.shardwise.core.util.Bytes.human(bytes)) + (bytes >= 0 && rps >= 0 ? " or " : "")
              + (rps < 0 ? "" : String.format(Locale.ROOT, "%,d requests/s for %d s", rps, RebalanceRecords.splitRpsSeconds(s)));
      String merge = f < 0 || (bytes < 0 && rps < 0) ? "never merges by itself"
          : String.format(Locale.ROOT, "merges neighbours the balancer split under %.0f%% of that for %d s", 100 * f, RebalanceRecords.mergeSeconds(s));
      String how = switch (mode) {
        case MANUAL -> " (mode manual: only 'table split' and 'table merge' resize it)";
        case AUTO -> " (mode auto: the balancer does it)";
        default -> " (mode suggest: the balancer proposes a plan to approve)";
      };
      return "resize policy: " + split + "; " + merge + how;
    }

    private static String splitRates(BalancerSettings s) {
      long rps = RebalanceRecords.splitRpsOf(s, "");
      StringBuilder b = new StringBuilder("split rate ").append(splitRate(s.getSplitRps()));
      if (rps > 0) {
        b.append(" over ").append(RebalanceRecords.splitRpsSeconds(s)).append(" s");
      }
      if (s.getTableSplitRpsCount() > 0) {
        List<String> out = new ArrayList<>();
        new java.util.TreeMap<>(s.getTableSplitRpsMap()).forEach((t, v) -> out.add(t + " " + splitRate(v)));
        b.append(" (").append(String.join(", ", out)).append(")");
      }
      return b.toString();
    }

    private static String splitRate(long rps) {
      return rps < 0 ? "off" : String.format(Locale.ROOT, "%,d requests/s", rps == 0 ? RebalanceRecords.DEFAULT_SPLIT_RPS : rps);
    }

    private static String merges(BalancerSettings s) {
      double f = RebalanceRecords.mergeFraction(s);
      return f < 0 ? "merge off" : String.format(Locale.ROOT, "merge under %.0f%% of both over %d s", 100 * f, RebalanceRecords.mergeSeconds(s));
    }

    private static String splitSizes(BalancerSettings s) {
      StringBuilder b = new StringBuilder("split size ").append(splitSize(s.getSplitBytes()));
      if (s.getTableSplitBytesCount() > 0) {
        List<String> out = new ArrayList<>();
        new java.util.TreeMap<>(s.getTableSplitBytesMap()).forEach((t, v) -> out.add(t + " " + splitSize(v)));
        b.append(" (").append(String.join(", ", out)).append(")");
      }
      return b.toString();
    }

    private static String splitSize(long bytes) {
      return bytes < 0 ? "off" : bytes == 0 ? Sizes.format(RebalanceRecords.DEFAULT_SPLIT_BYTES) : Sizes.format(bytes);
    }

    private static String tableModes(BalancerSettings s) {
      List<String> out = new ArrayList<>();
      new java.util.TreeMap<>(s.getTableModesMap()).forEach((t, m) -> out.add(t + " " + m.name().toLowerCase(Locale.ROOT)));
      return String.join(", ", out);
    }

    static void settings(ObjectNode o, BalancerSettings s) {
      PlanJson.settings(o, s);
    }

    static ObjectNode json(PlanRecord p) {
      return PlanJson.plan(p);
    }

    /** A bar on stderr: bytes copied of the plan's moves, shards done of all, rate and ETA. */
    static ProgressBar progressBar(PlanRecord p) {
      ProgressBar bar = new ProgressBarBuilder().setTaskName("plan " + p.getId()).setInitialMax(Math.max(1, bytesToCopy(p)))
          .setUnit(" MB", 1_000_000).showSpeed(new java.text.DecimalFormat("0.0")).setUpdateIntervalMillis(250)
          .setStyle(ProgressBarStyle.ASCII).setConsumer(new ConsoleProgressBarConsumer(System.err)).setMaxRenderedLength(110).build();
      update(bar, p);
      return bar;
    }

    static void update(ProgressBar bar, PlanRecord p) {
      if (bar == null) {
        return;
      }
      long copied = 0;
      long done = 0;
      for (MoveRecord m : p.getMovesList()) {
        boolean finished = m.getState() == MoveRecord.State.DONE;
        copied += finished ? Math.max(m.getProgress().getTotalBytes(), m.getBytes()) : m.getProgress().getCopiedBytes();
        done += finished ? 1 : 0;
      }
      bar.maxHint(Math.max(1, bytesToCopy(p)));
      bar.stepTo(copied);
      bar.setExtraMessage(" " + done + "/" + p.getMovesCount() + " shards");
    }

    /** What the moves carry: measured by their sources once they started, else as planned. */
    private static long bytesToCopy(PlanRecord p) {
      long total = 0;
      for (MoveRecord m : p.getMovesList()) {
        total += Math.max(m.getProgress().getTotalBytes(), m.getBytes());
      }
      return total;
    }

    /** A plan: its header and figures, then its moves per route ({@code allMoves}: every move). */
    static void print(PrintWriter out, PlanRecord p, boolean allMoves) {
      if (p.getResizesCount() > 0) {
        printResizes(out, p);
        return;
      }
      out.printf(Locale.ROOT, "%s (map epoch %d): %s, %,d of %,d bytes (%.1f%%; minimum %.1f%%); after: shards p/a %.3f,"
              + " bytes p/a %.3f, every node within %.1f%% of its share of bytes%n",
          p.getId().isEmpty() ? "plan preview, not stored" : "plan " + p.getId() + ", " + Rebalancing.describe(p.getState()), p.getBaseEpoch(),
          Output.count(p.getMovesCount(), "move"),
          p.getMovedBytes(), p.getTotalBytes(), 100 * p.getMovedFraction(), 100 * p.getMinimumFraction(), p.getShardPeakToAverageAfter(),
          p.getBytesPeakToAverageAfter(), 100 * p.getBytesWorstShareDeviationAfter());
      out.println("  " + p.getReason() + (p.getNeedsApproval() ? " — beyond auto mode's limits: waits for approval" : ""));
      if (!p.getError().isEmpty()) {
        out.println("  " + p.getError());
      }
      if (p.getFinishedMillis() > 0 && p.getStartedMillis() > 0) {
        out.printf(Locale.ROOT, "  report: %d of %d moves cut over, %,d keys, %,d bytes in %.1f s; longest write pause %.1f ms;"
                + " shards p/a %.3f -> %.3f, bytes p/a %.3f -> %.3f, worst node off its share of bytes %.1f%% -> %.1f%% (forecast)%n",
            p.getMovesList().stream().filter(m -> m.getState() == MoveRecord.State.DONE).count(), p.getMovesCount(),
            p.getReportMovedKeys(), p.getReportMovedBytes(), (p.getFinishedMillis() - p.getStartedMillis()) / 1000.0,
            p.getReportLongestPauseMicros() / 1000.0, p.getShardPeakToAverageBefore(), p.getShardPeakToAverageAfter(),
            p.getBytesPeakToAverageBefore(), p.getBytesPeakToAverageAfter(), 100 * p.getBytesWorstShareDeviationBefore(),
            100 * p.getBytesWorstShareDeviationAfter());
      }
      p.getNotesList().forEach(n -> out.println("  " + n));
      if (p.getMovesCount() == 0) {
        return;
      }
      out.println();
      if (!allMoves) {
        // Moves per route, then the moves still running or failed: a plan of hundreds of moves reads in a few lines.
        java.util.Map<String, long[]> routes = new java.util.TreeMap<>();
        java.util.Map<String, java.util.Map<String, Integer>> states = new java.util.TreeMap<>();
        for (MoveRecord m : p.getMovesList()) {
          String route = kind(m) + m.getFrom() + (m.getSourceAbsent() ? " (absent)" : "") + " -> " + m.getTo();
          long[] acc = routes.computeIfAbsent(route, k -> new long[3]);
          acc[0]++;
          acc[1] += m.getKeys();
          acc[2] += m.getBytes();
          states.computeIfAbsent(route, k -> new java.util.TreeMap<>()).merge(m.getState().name().toLowerCase(Locale.ROOT), 1, Integer::sum);
        }
        List<List<String>> rows = new ArrayList<>();
        routes.forEach((route, acc) -> {
          List<String> byState = new ArrayList<>();
          states.get(route).forEach((state, n) -> byState.add(n + " " + state));
          rows.add(List.of(route, Long.toString(acc[0]), Output.number(acc[1]), Output.number(acc[2]), String.join(", ", byState)));
        });
        Output.table(out, List.of("ROUTE", "MOVES", "KEYS", "BYTES", "STATES"), rows);
        List<MoveRecord> open = p.getMovesList().stream()
            .filter(m -> m.getState() == MoveRecord.State.MOVING || m.getState() == MoveRecord.State.FAILED).toList();
        if (!open.isEmpty()) {
          out.println();
          moveTable(out, open);
        }
        out.println("every move: --moves");
        return;
      }
      moveTable(out, p.getMovesList());
    }

    /** A plan of splits and merges: its header, then one row per resize. */
    private static void printResizes(PrintWriter out, PlanRecord p) {
      long isolations = p.getResizesList().stream().filter(r -> r.getKind() == ResizeRecord.Kind.ISOLATE).count();
      out.printf(Locale.ROOT, "plan %s, %s (map epoch %d): %s; %s%n", p.getId(), Rebalancing.describe(p.getState()), p.getBaseEpoch(),
          io.shardwise.server.balance.Balancer.describe(p.getResizesList()), isolations == 0 ? "only the map changes, no data is copied"
              : "cuts change only the map; an isolated key's shard then moves if the plan says where");
      out.println("  " + p.getReason());
      if (!p.getError().isEmpty()) {
        out.println("  " + p.getError());
      }
      out.println();
      List<List<String>> rows = new ArrayList<>();
      for (ResizeRecord r : p.getResizesList()) {
        String shard = r.getTable() + "/" + r.getNumber() + (r.getKind() == ResizeRecord.Kind.MERGE ? "+" + r.getRightNumber() : "");
        String at = r.getKind() == ResizeRecord.Kind.MERGE ? ""
            : r.getKind() == ResizeRecord.Kind.ISOLATE ? "key " + ValueFormat.escaped(r.getHotKey().toByteArray())
                + (r.getIsolateTo().isEmpty() ? "" : ", to " + r.getIsolateTo())
            : r.getKind() == ResizeRecord.Kind.SALT || r.getKind() == ResizeRecord.Kind.UNSALT ? "key "
                + ValueFormat.escaped(r.getHotKey().toByteArray()) + ", " + r.getSaltFanout() + " sub-keys" : r.getBySize() ? "half its bytes"
            : (r.getHasAtHash() ? "hash " + Long.toUnsignedString(r.getAtHash()) : ValueFormat.escaped(r.getAtPartitionKey().toByteArray()))
                + (r.getUpperTo().isEmpty() ? "" : ", upper half to " + r.getUpperTo());
        String result = r.getResultNumbersCount() == 0 ? "" : "-> " + String.join(",", r.getResultNumbersList().stream().map(String::valueOf).toList());
        rows.add(List.of(r.getKind().name().toLowerCase(Locale.ROOT), shard, r.getOwner(), io.shardwise.core.util.Bytes.human(r.getBytes()),
            Output.number(r.getRequestsPerSecond()), at, r.getState().name().toLowerCase(Locale.ROOT) + (result.isEmpty() ? "" : " " + result),
            r.getError().isEmpty() ? r.getWhy() : r.getError()));
      }
      Output.table(out, List.of("RESIZE", "SHARD", "OWNER", "BYTES", "REQ/S", "AT", "STATE", "WHY"), rows);
    }

    private static void moveTable(PrintWriter out, List<MoveRecord> moves) {
      List<List<String>> rows = new ArrayList<>();
      for (MoveRecord m : moves) {
        String progress = "";
        if (m.hasProgress()) {
          MoveProgress pr = m.getProgress();
          progress = pr.getPhase().name().toLowerCase(Locale.ROOT)
              + (pr.getTotalBytes() > 0 ? String.format(Locale.ROOT, " %.0f%%", 100.0 * pr.getCopiedBytes() / pr.getTotalBytes()) : "")
              + (pr.getPhase() == MoveProgress.Phase.DONE ? String.format(Locale.ROOT, ", paused %.1f ms", pr.getPauseMicros() / 1000.0) : "");
        }
        rows.add(List.of(m.getTable() + "/" + m.getNumber() + (m.getReplica() ? (m.getLeadership() ? " (lead)" : " (replica)") : ""),
            m.getFrom() + (m.getSourceAbsent() ? " (absent)" : ""), m.getTo(),
            Long.toString(m.getKeys()), Long.toString(m.getBytes()), m.getState().name().toLowerCase(Locale.ROOT), progress,
            m.getError()));
      }
      Output.table(out, List.of("SHARD", "FROM", "TO", "KEYS", "BYTES", "STATE", "PROGRESS", "ERROR"), rows);
    }
  
    /** What a move of a replicated table moves: one replica, or only the lead; a table of one replica moves whole shards. */
    private static String kind(MoveRecord m) {
      return m.getReplica() ? (m.getLeadership() ? "lead " : "replica ") : "";
    }
}
}
