package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.TableInfo;
import io.shardwise.proto.v1.UndropTableResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise table create|list|describe|drop}. */
@Command(name = "table", mixinStandardHelpOptions = true, description = "Create, list, describe and drop tables.",
    subcommands = {TableCommand.Create.class, TableCommand.ListTables.class, TableCommand.Describe.class, TableCommand.Drop.class,
        TableCommand.Undrop.class})
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

    @Override
    public Integer call() {
      // Checked here, with the flag's name and limit (the API takes 0 to mean "the default").
      PartitioningSpec.Builder b = PartitioningSpec.newBuilder().setStrategy(strategy).setSeed(seed)
          .setShards(inRange("--shards", shards, 1, io.shardwise.server.rpc.TableAdmin.MAX_SHARDS))
          .setVnodes(inRange("--vnodes", vnodes, 1, io.shardwise.core.partition.PartitionerSpec.MAX_POINTS_PER_NODE))
          .setSlots(inRange("--slots", slots, 1, io.shardwise.core.partition.SlotPartitioner.MAX_SLOTS))
          .setTokens(inRange("--tokens", tokens, 1, io.shardwise.core.partition.PartitionerSpec.MAX_POINTS_PER_NODE));
      if (hash != null) {
        b.setHash(hash);
      }
      if (vnodeName != null) {
        b.setVnodeTemplate(vnodeName);
      }
      splitPoints.forEach(p -> b.addSplitPoints(ByteString.copyFromUtf8(p)));
      if (sampleKeys != null) {
        try {
          Files.readAllLines(sampleKeys, StandardCharsets.UTF_8).stream().filter(l -> !l.isEmpty())
              .forEach(l -> b.addSampleKeys(ByteString.copyFromUtf8(l)));
        } catch (IOException e) {
          throw new IllegalArgumentException("cannot read sample keys file '" + sampleKeys + "': " + e.getMessage());
        }
      }
      try (ShardwiseClient client = common.cluster.connect()) {
        TableInfo info = client.createTable(name, b.build());
        print(spec.commandLine().getOut(), common.output, info, listShards, false);
      }
      return Main.EXIT_OK;
    }
  }

  /** {@code value} if it is within {@code [min, max]}; 0 (the API's "default") if it was not given. */
  static int inRange(String flag, Integer value, int min, int max) {
    if (value == null) {
      return 0;
    }
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
      try (ShardwiseClient client = common.cluster.connect()) {
        List<TableInfo> tables = client.listTables();
        PrintWriter out = spec.commandLine().getOut();
        if (common.output == OutputFormat.json) {
          ArrayNode array = Output.JSON.createArrayNode();
          tables.forEach(t -> array.add(json(t)));
          Output.json(out, Output.object().set("tables", array));
        } else {
          List<List<String>> rows = new ArrayList<>();
          tables.forEach(t -> rows.add(List.of(t.getName(), t.getSpec().getStrategy(), t.getSpec().getHash(), Integer.toString(t.getShardsCount()))));
          Output.table(out, List.of("TABLE", "STRATEGY", "HASH", "SHARDS"), rows);
        }
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
      try (ShardwiseClient client = common.cluster.connect()) {
        print(spec.commandLine().getOut(), common.output, client.describeTable(name, stats), listShards, stats);
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
      try (ShardwiseClient client = common.cluster.connect()) {
        client.dropTable(name);
        spec.commandLine().getOut().println("dropped " + name + "; its data stays in the owners' trash for their trash grace "
            + "('shardwise table undrop " + name + "' brings it back)");
      }
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
      try (ShardwiseClient client = common.cluster.connect()) {
        UndropTableResponse r = client.undropTable(name);
        PrintWriter out = spec.commandLine().getOut();
        out.println("undropped " + name + " (id " + r.getTable().getId() + ", " + r.getTable().getShardsCount() + " shards): "
            + r.getShardsFoundInTrash() + " shards' data found in the owners' trash (empty shards have none)"
            + (r.getOwnersNotAskedCount() == 0 ? "" : "; owners not live, restoring when they start: " + String.join(", ", r.getOwnersNotAskedList())));
      }
      return Main.EXIT_OK;
    }
  }

  static ObjectNode json(TableInfo t) {
    ObjectNode o = Output.object().put("name", t.getName()).put("id", t.getId()).put("strategy", t.getSpec().getStrategy())
        .put("hash", t.getSpec().getHash()).put("epoch", t.getMapEpoch());
    ArrayNode shards = o.putArray("shards");
    for (ShardInfo s : t.getShardsList()) {
      ObjectNode n = shards.addObject().put("shard", t.getName() + "/" + s.getNumber()).put("position", s.getPosition())
          .put("owner", s.getOwner()).put("epoch", s.getEpoch()).put("keys", s.getKeys()).put("bytes", s.getBytes());
      String range = range(t, s);
      if (!range.isEmpty()) {
        n.put("range", range);
      }
    }
    return o;
  }

  static String range(TableInfo t, ShardInfo s) {
    switch (t.getSpec().getStrategy()) {
      case "range":
        return "[" + ByteStrings.toDisplay(s.getStart().toByteArray()) + ", " + (s.getHasEnd() ? ByteStrings.toDisplay(s.getEnd().toByteArray()) : "∞") + ")";
      case "hashrange":
        return "[" + Long.toUnsignedString(s.getHashFirst()) + ", " + Long.toUnsignedString(s.getHashLast()) + "]";
      case "ring":
      case "tokens":
        return "arc to " + Long.toUnsignedString(s.getHashLast());
      default:
        return "";
    }
  }

  /**
   * A table as text: one header line, then its shards per node (count, and keys and bytes when
   * {@code measured}), or every shard with {@code listShards}. JSON always lists every shard.
   */
  static void print(PrintWriter out, OutputFormat format, TableInfo t, boolean listShards, boolean measured) {
    if (format == OutputFormat.json) {
      Output.json(out, json(t));
      return;
    }
    out.printf("table %s (id %d): %s, hash %s, %s, map epoch %d%n%n", t.getName(), t.getId(), t.getSpec().getStrategy(),
        t.getSpec().getHash(), Output.count(t.getShardsCount(), "shard"), t.getMapEpoch());
    if (listShards) {
      List<List<String>> rows = new ArrayList<>();
      for (ShardInfo s : t.getShardsList()) {
        rows.add(List.of(t.getName() + "/" + s.getNumber(), s.getOwner(), Long.toString(s.getEpoch()),
            measured ? Long.toString(s.getKeys()) : "-", measured ? Long.toString(s.getBytes()) : "-", range(t, s)));
      }
      Output.table(out, List.of("SHARD", "OWNER", "EPOCH", "KEYS", "BYTES", "RANGE"), rows);
      return;
    }
    java.util.Map<String, long[]> perNode = new java.util.TreeMap<>();
    for (ShardInfo s : t.getShardsList()) {
      long[] acc = perNode.computeIfAbsent(s.getOwner(), k -> new long[3]);
      acc[0]++;
      acc[1] += s.getKeys();
      acc[2] += s.getBytes();
    }
    List<List<String>> rows = new ArrayList<>();
    perNode.forEach((node, acc) -> rows.add(List.of(node, Long.toString(acc[0]), measured ? String.format(java.util.Locale.ROOT, "%,d", acc[1]) : "-",
        measured ? String.format(java.util.Locale.ROOT, "%,d", acc[2]) : "-")));
    Output.table(out, List.of("NODE", "SHARDS", "KEYS", "BYTES"), rows);
    if (!perNode.isEmpty()) {
      long min = perNode.values().stream().mapToLong(a -> a[0]).min().orElse(0);
      long max = perNode.values().stream().mapToLong(a -> a[0]).max().orElse(0);
      out.printf(java.util.Locale.ROOT, "shards per node: min %d, max %d, mean %.1f%s%n", min, max, (double) t.getShardsCount() / perNode.size(),
          measured ? "" : "; keys and bytes with --stats");
    }
    out.println("every shard: 'shardwise table describe " + t.getName() + " --list-shards'");
  }
}
