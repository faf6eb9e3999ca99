package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import io.shardwise.client.ShardDescription;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableDescription;
import io.shardwise.client.TableSpec;
import io.shardwise.client.Undropped;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.server.balance.RebalanceRecords;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.rpc.Peers;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code shardwise table create|list|describe|drop|undrop|split|merge|presplit}. */
@Command(name = "table", mixinStandardHelpOptions = true, description = "Create, list, describe, drop, change the replication of, split, merge and presplit tables.",
    subcommands = {TableCommand.Create.class, TableCommand.ListTables.class, TableCommand.Describe.class, TableCommand.Drop.class, TableCommand.SetTable.class,
        TableCommand.Undrop.class, TableCommand.Split.class, TableCommand.Merge.class, TableCommand.Presplit.class})
final class TableCommand {

  static final class Common {
    @Mixin ClusterOptions cluster;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;
  }

  @Command(name = "create", mixinStandardHelpOptions = true, sortOptions = false, description = "Create a table with a partitioning strategy.")
  static final class Create implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME", description = "Table name: a letter, then letters, digits, _ or -.")
    String name;

    @Option(names = "--strategy", required = true, paramLabel = "S", description = "range, mod, ring, slots, hashrange, tokens, jump or rendezvous.")
    String strategy;

    @Option(names = "--shards", paramLabel = "N",
        description = "Shard count, 1 to 65536 (mod, jump, rendezvous, hashrange, range). Default: one per node.")
    Integer shards;

    @Option(names = "--hash", paramLabel = "NAME", description = "Hash function. Default: murmur3-128.")
    String hash;

    @Option(names = "--vnodes", paramLabel = "V", description = "ring: virtual nodes per node, 1 to 4096. Default: 256.")
    Integer vnodes;

    @Option(names = "--vnode-name", paramLabel = "TEMPLATE", description = "ring: virtual-node name template.")
    String vnodeName;

    @Option(names = "--slots", paramLabel = "K", description = "slots: slot count, 1 to 1048576. Default: 1024.")
    Integer slots;

    @Option(names = "--tokens", paramLabel = "T", description = "tokens: tokens per node, 1 to 4096. Default: 16.")
    Integer tokens;

    @Option(names = "--seed", paramLabel = "X", description = "tokens: seed.")
    long seed;

    @Option(names = "--split-points", split = ",", paramLabel = "K1,K2,...", description = "range: split points.")
    List<String> splitPoints = new ArrayList<>();

    @Option(names = "--list-shards", description = "Print every shard (default: shards per node).")
    boolean listShards;

    @Option(names = "--sample-keys-file", paramLabel = "FILE", description = "range: pre-split --shards ways from these keys (one per line).")
    Path sampleKeys;

    @Option(names = "--replicas", paramLabel = "R", description = {"Replicas of each shard, 1 to " + io.shardwise.core.map.Replication.MAX_FACTOR
        + ", each on its own node (and zone, with zone= labels). Default: 3, or the live nodes if fewer;"
        + " --replicas 1 keeps one copy (lost with its node).",
        "A write is acknowledged once the shard's in-sync replicas have it; a live in-sync follower takes over when the leader's node goes."})
    Integer replicas;

    @Option(names = "--min-in-sync", paramLabel = "M", description = "The fewest in-sync replicas (the leader counted) a write needs;"
        + " with fewer, writes are refused. Default: a majority of --replicas (2 of 3).")
    Integer minInSync;

    @Option(names = "--format", paramLabel = "F", description = {"What the values are: bytes (the default: anything) or json"
        + " (JSON documents: every value one JSON object, a write of anything else refused with the byte where it goes wrong)."})
    String format;

    @Override
    public Integer call() {
      // Checked here, with the flag's name and limit; a flag not given takes the cluster's default.
      TableSpec.Builder b = TableSpec.builder(strategy).seed(seed);
      if (format != null) {
        try {
          b.format(io.shardwise.core.doc.ValueFormat.parse(format));
        } catch (IllegalArgumentException e) {
          throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--format: " + e.getMessage());
        }
      }
      if (shards != null) {
        b.shards(inRange("--shards", shards, 1, io.shardwise.server.rpc.TableAdmin.MAX_SHARDS));
      }
      if (vnodes != null) {
        b.vnodes(inRange("--vnodes", vnodes, 1, io.shardwise.core.partition.PartitionerSpec.MAX_POINTS_PER_NODE));
      }
      if (slots != null) {
        b.slots(inRange("--slots", slots, 1, io.shardwise.core.partition.SlotPartitioner.MAX_SLOTS));
      }
      if (tokens != null) {
        b.tokens(inRange("--tokens", tokens, 1, io.shardwise.core.partition.PartitionerSpec.MAX_POINTS_PER_NODE));
      }
      if (hash != null) {
        b.hash(hash);
      }
      if (vnodeName != null) {
        b.vnodeTemplate(vnodeName);
      }
      b.splitPoints(splitPoints.toArray(String[]::new));
      if (replicas != null) {
        b.replicas(inRange("--replicas", replicas, 1, io.shardwise.core.map.Replication.MAX_FACTOR));
      }
      if (minInSync != null) {
        b.minInSync(inRange("--min-in-sync", minInSync, 1, replicas == null ? io.shardwise.core.map.Replication.MAX_FACTOR : replicas));
      }
      if (sampleKeys != null) {
        try {
          b.sampleKeys(Files.readAllLines(sampleKeys, StandardCharsets.UTF_8).stream().filter(l -> !l.isEmpty())
              .map(l -> l.getBytes(StandardCharsets.UTF_8)).toList());
        } catch (IOException e) {
          throw new IllegalArgumentException("cannot read sample keys file '" + sampleKeys + "': " + e.getMessage());
        }
      }
      ShardwiseClient client = common.cluster.connect();
      TableDescription info = client.createTable(name, b.build());
      print(spec.commandLine().getOut(), common.output, info, listShards, false);
      return Main.EXIT_OK;
    }
  }

  /** {@code value} if it is within {@code [min, max]}; else a usage error naming the flag and the limits. */
  static int inRange(String flag, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(String.format(java.util.Locale.ROOT, "%s must be between %,d and %,d, not %d", flag, min, max, value));
    }
    return value;
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "List tables.")
  static final class ListTables implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      List<TableDescription> tables = client.listTables();
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ArrayNode array = Output.JSON.createArrayNode();
        tables.forEach(t -> array.add(json(t)));
        Output.json(out, Output.object().set("tables", array));
      } else {
        List<List<String>> rows = new ArrayList<>();
        tables.forEach(t -> rows.add(List.of(t.name(), t.spec().strategy(), t.spec().hash().orElse("-"), Integer.toString(t.shards().size()),
            io.shardwise.core.map.Tables.indexTable(t.name()) ? "global index of " + io.shardwise.core.map.Tables.indexedTable(t.name()) : "")));
        Output.table(out, List.of("TABLE", "STRATEGY", "HASH", "SHARDS", ""), rows);
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "describe", mixinStandardHelpOptions = true,
      description = {"Show a table: its strategy, and its shards per node (every shard, with owners and epochs, with --list-shards)."})
  static final class Describe implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Option(names = "--stats", description = "Also count keys and bytes per shard (reads every shard).")
    boolean stats;

    @Option(names = "--list-shards", description = "Print every shard: owner, epoch, range (and keys and bytes with --stats).")
    boolean listShards;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      TableDescription t = client.describeTable(name, stats);
      // rings of hash ranges split and merge too, and replicated tables (at one log position on every replica)
      boolean splittable = t.spec().strategy().equals("range") || t.hashRanges();
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ObjectNode o = json(t);
        if (splittable) {
          io.shardwise.console.PlanJson.policy(o.putObject("resizePolicy"),
              new RebalanceRecords(ClusterOptions.coordinator(common.cluster.zk())).settings(), t.name());
        }
        Output.json(out, o);
        return Main.EXIT_OK;
      }
      print(out, common.output, t, listShards, stats);
      if (splittable) {
        out.println(RebalanceCommand.PlanOutput.policyLine(new RebalanceRecords(ClusterOptions.coordinator(common.cluster.zk())).settings(),
            t.name()));
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "drop", mixinStandardHelpOptions = true,
      description = "Drop a table: it is gone from the map at once; its data stays in its owners' trash for their --trash-grace (24h by default).")
  static final class Drop implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      client.dropTable(name);
      spec.commandLine().getOut().println("dropped " + name + "; its data stays in the owners' trash for their trash grace "
          + "('shardwise table undrop " + name + "' brings it back)");
      return Main.EXIT_OK;
    }
  }

  @Command(name = "undrop", mixinStandardHelpOptions = true,
      description = "Bring back the last table dropped under NAME, with the data its owners still keep in their trash.")
  static final class Undrop implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      Undropped r = client.undropTable(name);
      PrintWriter out = spec.commandLine().getOut();
      out.println("undropped " + name + " (id " + r.table().id() + ", " + Output.count(r.table().shards().size(), "shard") + "): "
          + r.shardsFoundInTrash() + " shards' data found in the owners' trash (empty shards have none)"
          + (r.ownersNotAsked().isEmpty() ? "" : "; owners not live, restoring when they start: " + String.join(", ", r.ownersNotAsked())));
      return Main.EXIT_OK;
    }
  }

  @Command(name = "split", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Split one shard of a range or hashrange table in two new shards on the same node.",
          "Only the map changes: the keys already lie in placement order. By default the owner splits it by size: at the",
          "partition key (hash) with half the shard's bytes below it, never inside one partition key. Or give the point:",
          "--at KEY for a range shard, --at-hash H for a hashrange shard."})
  static final class Split implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Option(names = "--shard", required = true, paramLabel = "N", description = "The shard's number (table describe --list-shards).")
    long shard;

    @Option(names = "--at", paramLabel = "KEY", description = "Range tables: the partition key (UTF-8) that starts the upper half.")
    String at;

    @Option(names = "--at-hash", paramLabel = "H", description = "Hashrange tables: the first hash (unsigned decimal) of the upper half.")
    String atHash;

    @Override
    public Integer call() {
      if (at != null && atHash != null) {
        throw new IllegalArgumentException("give --at or --at-hash, not both");
      }
      long hash = 0;
      if (atHash != null) {
        try {
          hash = Long.parseUnsignedLong(atHash);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("--at-hash takes an unsigned 64-bit decimal number, not '" + atHash + "'");
        }
      }
      ShardwiseClient client = common.cluster.connect();
      TableDescription t;
      if (at != null) {
        t = client.splitShard(name, shard, at.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      } else if (atHash != null) {
        t = client.splitShardAtHash(name, shard, hash);
      } else {
        t = client.splitShard(name, shard);
      }
      spec.commandLine().getOut().println("split " + name + "/" + shard + ": the table has " + Output.count(t.shards().size(), "shard")
          + " at map epoch " + t.mapEpoch());
      print(spec.commandLine().getOut(), common.output, t, true, false);
      return Main.EXIT_OK;
    }
  }

  @Command(name = "merge", mixinStandardHelpOptions = true,
      description = {"Merge one shard of a range or hashrange table with the next one in order into one new shard.",
          "Together (on one node; replicated: the same replicas and leader), only the map changes, at once. Apart, a plan",
          "moves the smaller to the other's node(s) first (replicas one at a time) and then merges them; it waits for",
          "'shardwise rebalance approve ID' unless --approve is given."})
  static final class Merge implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Option(names = "--shard", required = true, paramLabel = "N", description = "The first of the two shards, by number.")
    long shard;

    @Option(names = "--approve", description = "Shards apart: approve the plan that brings them together and merges them at once.")
    boolean approve;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      TableDescription t;
      try {
        t = client.mergeShards(name, shard);
      } catch (ShardwiseException e) {
        if (e.code() != Status.Code.FAILED_PRECONDITION) {
          throw e;
        }
        return planMerge(e); // apart: the nodes merge only shards that are together
      }
      spec.commandLine().getOut().println("merged " + name + "/" + shard + " with the next shard: the table has "
          + Output.count(t.shards().size(), "shard") + " at map epoch " + t.mapEpoch());
      print(spec.commandLine().getOut(), common.output, t, true, false);
      return Main.EXIT_OK;
    }

    private int planMerge(ShardwiseException refused) {
      Rebalancing rebalancing = new Rebalancing(
          ClusterOptions.coordinator(common.cluster.zk()));
      PlanRecord plan;
      try (Peers peers = new Peers(16 << 20)) {
        plan = rebalancing.merge(peers, name, shard, approve);
      } catch (IllegalArgumentException e) {
        throw new CliException(Main.EXIT_FAILURE, refused.getMessage() + " (" + e.getMessage() + ")", e);
      }
      ResizeRecord r = plan.getResizes(0);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("plan", plan.getId()).put("state", plan.getState().name().toLowerCase(Locale.ROOT))
            .put("table", r.getTable()).put("shard", r.getNumber()).put("next", r.getRightNumber()).put("moving", r.getMovingNumber())
            .put("to", r.getOwner()).put("bytes", r.getBytes()).put("why", r.getWhy()));
        return Main.EXIT_OK;
      }
      out.println("shards " + name + "/" + r.getNumber() + " and " + r.getRightNumber() + " are apart: plan " + plan.getId() + " ("
          + Rebalancing.describe(plan.getState()) + "): " + r.getWhy());
      out.println(approve ? "the balancer runs it now; follow it with: shardwise rebalance status --wait"
          : "run it with: shardwise rebalance approve " + plan.getId() + "   (or reject it: shardwise rebalance reject " + plan.getId() + ")");
      return Main.EXIT_OK;
    }
  }

  @Command(name = "set", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Change a table's replicas per shard or its min in-sync replicas, online.",
          "The balancer's leader then adds or removes followers a shard at a time (new ones are built from a snapshot",
          "and the log, at most max_moves_per_node at once per node); 'table describe' shows them catching up.",
          "A table of one replica begins to keep replicas: its owners lead, and min in-sync is 1 unless given; raise it",
          "once the followers are in sync. Going back to one replica is refused."})
  static final class SetTable implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Option(names = "--replicas", paramLabel = "N", description = "Replicas per shard (2 to 7).")
    int replicas;

    @Option(names = "--min-in-sync", paramLabel = "M",
        description = "In-sync replicas a write needs (default: unchanged, or a majority of N when only --replicas is given).")
    int minInSync;

    @Override
    public Integer call() {
      if (replicas == 0 && minInSync == 0) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "say what to change: --replicas N and/or --min-in-sync M");
      }
      ShardwiseClient client = common.cluster.connect();
      boolean wasReplicated = client.describeTable(name, false).replicas() > 1;
      TableDescription t = client.setReplication(name, replicas, minInSync);
      spec.commandLine().getOut().println("table " + name + " keeps " + t.replicas() + " replicas of each shard, writes need " + t.minInSync()
          + " in sync (map epoch " + t.mapEpoch() + "); followers are added or removed by the balancer's leader");
      if (!wasReplicated && t.replicas() > 1 && t.minInSync() == 1) {
        spec.commandLine().getOut().println("replication is on: each shard's leader alone acknowledges writes until you raise it, once"
            + " 'table describe " + name + "' shows the followers in sync: shardwise table set " + name + " --min-in-sync "
            + (t.replicas() / 2 + 1));
      }
      print(spec.commandLine().getOut(), common.output, t, true, false);
      return Main.EXIT_OK;
    }
  }

  @Command(name = "presplit", mixinStandardHelpOptions = true,
      description = {"Split a range or hashrange table into N shards in all, from a sample of its live keys, before a known peak.",
          "Each shard gets new shards in proportion to its bytes, cut where the live bytes are equal (never inside a partition key);",
          "a hashrange shard without keys is cut into equal hash ranges. Only the map changes; the balancer spreads the new shards.",
          "The balancer never merges these shards by itself (only 'table merge' does)."})
  static final class Presplit implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;

    @Parameters(paramLabel = "NAME")
    String name;

    @Option(names = "--shards", required = true, paramLabel = "N",
        description = "The table's shards after the presplit: more than it has, at most " + TABLE_SHARD_LIMIT + ".")
    int shards;

    @Override
    public Integer call() {
      checkPresplitShards(shards);
      ShardwiseClient client = common.cluster.connect();
      TableDescription t = client.presplitTable(name, shards);
      spec.commandLine().getOut().println("presplit " + name + ": the table has " + Output.count(t.shards().size(), "shard")
          + (t.shards().size() < shards ? " (fewer than asked: too few partition keys to cut at)" : "") + " at map epoch " + t.mapEpoch());
      print(spec.commandLine().getOut(), common.output, t, false, false);
      return Main.EXIT_OK;
    }
  }

  /** The most shards a table may have (the server refuses more). */
  static final int TABLE_SHARD_LIMIT = io.shardwise.server.rpc.ShardSplits.MAX_SHARDS;

  /** A presplit's {@code --shards}, checked before any connection. */
  static void checkPresplitShards(int shards) {
    if (shards < 2 || shards > TABLE_SHARD_LIMIT) {
      throw new IllegalArgumentException("--shards must be between 2 and " + TABLE_SHARD_LIMIT + ", not " + shards);
    }
  }

  static ObjectNode json(TableDescription t) {
    ObjectNode o = Output.object().put("name", t.name()).put("id", t.id()).put("strategy", t.spec().strategy())
        .put("hash", t.spec().hash().orElse("")).put("epoch", t.mapEpoch()).put("replicas", t.replicas()).put("minInSync", t.minInSync())
        .put("format", t.spec().format().label());
    if (!t.indexes().isEmpty()) {
      ArrayNode indexes = o.putArray("indexes");
      t.indexes().forEach(i -> indexes.addObject().put("field", i.field()).put("scope", i.scope()).put("state", i.state()));
    }
    if (!t.ringMembers().isEmpty()) {
      ArrayNode members = o.putArray("ringMembers");
      t.ringMembers().forEach(members::add);
    }
    ArrayNode shards = o.putArray("shards");
    for (ShardDescription s : t.shards()) {
      ObjectNode n = shards.addObject().put("shard", t.name() + "/" + s.number()).put("position", s.position())
          .put("owner", s.owner()).put("epoch", s.epoch()).put("keys", s.keys()).put("bytes", s.bytes());
      if (t.replicas() > 1) {
        ArrayNode followers = n.putArray("followers");
        s.followers().forEach(followers::add);
        ArrayNode inSync = n.putArray("inSync");
        s.inSync().forEach(inSync::add);
        n.put("leaderEpoch", s.leaderEpoch());
      }
      String range = range(t, s);
      if (!range.isEmpty()) {
        n.put("range", range);
      }
    }
    return o;
  }

  static String range(TableDescription t, ShardDescription s) {
    if (t.hashRanges()) {
      return "[" + Long.toUnsignedString(s.hashFirst()) + ", " + Long.toUnsignedString(s.hashLast()) + "]";
    }
    switch (t.spec().strategy()) {
      case "range":
        return "[" + ByteStrings.toDisplay(s.start().orElse(new byte[0])) + ", " + s.end().map(ByteStrings::toDisplay).orElse("∞") + ")";
      case "ring":
      case "tokens":
        return "arc to " + Long.toUnsignedString(s.hashLast());
      default:
        return "";
    }
  }

  /**
   * A table as text: one header line, then its shards per node (count, and keys and bytes when
   * {@code measured}), or every shard with {@code listShards}. JSON always lists every shard.
   */
  static void print(PrintWriter out, OutputFormat format, TableDescription t, boolean listShards, boolean measured) {
    if (format == OutputFormat.json) {
      Output.json(out, json(t));
      return;
    }
    out.printf("table %s (id %d): %s, hash %s, %s, %s, %s values, map epoch %d%n%n", t.name(), t.id(), t.spec().strategy(),
        t.spec().hash().orElse("-"), Output.count(t.shards().size(), "shard"), replication(t), t.spec().format().label(), t.mapEpoch());
    if (!t.indexes().isEmpty()) {
      out.printf("indexes: %s%n%n", String.join(", ", t.indexes().stream().map(i -> i.field() + " (" + i.scope() + ", " + i.state() + ")")
          .toList()));
    }
    if (!t.ringMembers().isEmpty()) {
      out.printf("ring members (simulate's nodes 0..%d): %s; a node that joins adds its own points%n%n", t.ringMembers().size() - 1,
          String.join(", ", t.ringMembers()));
    } else if (t.spec().strategy().equals("ring") || t.spec().strategy().equals("tokens")) {
      out.printf("a ring of whole arcs (created before rings were hash ranges): a joining node takes over existing arcs%n%n");
    }
    if (listShards) {
      List<List<String>> rows = new ArrayList<>();
      for (ShardDescription s : t.shards()) {
        List<String> row = new ArrayList<>(List.of(t.name() + "/" + s.number(), s.owner(), Long.toString(s.epoch())));
        if (t.replicas() > 1) {
          row.add(followers(s));
        }
        row.addAll(List.of(measured ? Long.toString(s.keys()) : "-", measured ? Long.toString(s.bytes()) : "-", range(t, s)));
        rows.add(row);
      }
      Output.table(out, t.replicas() > 1 ? List.of("SHARD", "LEADER", "EPOCH", "FOLLOWERS", "KEYS", "BYTES", "RANGE")
          : List.of("SHARD", "OWNER", "EPOCH", "KEYS", "BYTES", "RANGE"), rows);
      return;
    }
    java.util.Map<String, long[]> perNode = new java.util.TreeMap<>();
    for (ShardDescription s : t.shards()) {
      long[] acc = perNode.computeIfAbsent(s.owner(), k -> new long[3]);
      acc[0]++;
      acc[1] += s.keys();
      acc[2] += s.bytes();
    }
    List<List<String>> rows = new ArrayList<>();
    perNode.forEach((node, acc) -> rows.add(List.of(node, Long.toString(acc[0]), measured ? String.format(java.util.Locale.ROOT, "%,d", acc[1]) : "-",
        measured ? String.format(java.util.Locale.ROOT, "%,d", acc[2]) : "-")));
    Output.table(out, List.of("NODE", "SHARDS", "KEYS", "BYTES"), rows);
    if (!perNode.isEmpty()) {
      long min = perNode.values().stream().mapToLong(a -> a[0]).min().orElse(0);
      long max = perNode.values().stream().mapToLong(a -> a[0]).max().orElse(0);
      out.printf(java.util.Locale.ROOT, "shards per node: min %d, max %d, mean %.1f%s%n", min, max, (double) t.shards().size() / perNode.size(),
          measured ? "" : "; keys and bytes with --stats");
    }
    if (t.replicas() > 1) {
      long under = t.shards().stream().filter(s -> 1 + s.inSync().size() < t.replicas()).count();
      long refusing = t.shards().stream().filter(s -> 1 + s.inSync().size() < t.minInSync()).count();
      out.printf("replicas: %d per shard; %s under-replicated (fewer in-sync replicas than %d)%s%n", t.replicas(),
          Output.count((int) under, "shard"), t.replicas(), refusing == 0 ? "" : "; " + Output.count((int) refusing, "shard")
              + " refusing writes (fewer than " + t.minInSync() + " in sync)");
    }
    out.println("every shard: 'shardwise table describe " + t.name() + " --list-shards'");
  }

  /** "3 replicas, 2 in sync to write" (or "1 replica"). */
  static String replication(TableDescription t) {
    return t.replicas() == 1 ? "1 replica" : t.replicas() + " replicas, writes need " + t.minInSync() + " in sync";
  }

  /** A shard's followers, each marked when out of sync: {@code n2, n3 (catching up)}. */
  static String followers(ShardDescription s) {
    List<String> out = new ArrayList<>();
    for (String f : s.followers()) {
      out.add(s.inSync().contains(f) ? f : f + " (catching up)");
    }
    return out.isEmpty() ? "-" : String.join(", ", out);
  }
}
