package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.KeyValue;
import io.shardwise.client.ScanPage;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.Key;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise kv put|get|del|scan}: keys as UTF-8 text, values as text, hex, base64 or raw bytes. */
@Command(name = "kv", mixinStandardHelpOptions = true, description = "Read and write keys (values as text, hex, base64 or raw bytes).",
    subcommands = {KvCommand.Put.class, KvCommand.Get.class, KvCommand.Del.class, KvCommand.Scan.class, KvCommand.Incr.class,
        KvCommand.Counter.class, KvCommand.Append.class, KvCommand.ListElements.class})
final class KvCommand {

  static final class Common {
    @Mixin ClusterOptions cluster;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", defaultValue = "table", description = "table or json. Default: ${DEFAULT-VALUE}.")
    OutputFormat output;
  }

  /** TABLE KEY [--sort-key SK]: which row a put, get or del is about. */
  static final class Row {
    @Parameters(index = "0", paramLabel = "TABLE") String table;
    @Parameters(index = "1", paramLabel = "KEY", description = "Partition key.") String key;
    @Option(names = "--sort-key", paramLabel = "SK") String sortKey;

    Key key() {
      return sortKey == null ? Key.of(key) : Key.of(key, sortKey);
    }
  }

  @Command(name = "put", mixinStandardHelpOptions = true, description = "Write a value (VALUE, or the bytes of --value-file).")
  static final class Put implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;
    @Parameters(index = "2", arity = "0..1", paramLabel = "VALUE") String value;

    @Option(names = "--value-file", paramLabel = "FILE", description = "Write the file's bytes as they are, instead of VALUE.")
    java.nio.file.Path valueFile;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "How VALUE is written: text (UTF-8), hex or base64. Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Option(names = "--if-version", paramLabel = "V", description = "Only if the key is at version V (0: only if absent).")
    Long ifVersion;

    @Override
    public Integer call() {
      if ((value == null) == (valueFile == null)) {
        throw new IllegalArgumentException("give the value either as VALUE or with --value-file, not " + (value == null ? "neither" : "both"));
      }
      byte[] bytes;
      if (valueFile != null) {
        try {
          bytes = java.nio.file.Files.readAllBytes(valueFile);
        } catch (java.io.IOException e) {
          throw new IllegalArgumentException("cannot read --value-file '" + valueFile + "': " + e.getMessage(), e);
        }
      } else {
        bytes = format.parse(value);
      }
      ShardwiseClient client = common.cluster.connect();
      long version = ifVersion == null ? client.put(row.table, row.key(), bytes) : client.putIfVersion(row.table, row.key(), bytes, ifVersion);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("key", row.key).put("version", version));
      } else {
        out.println("ok, version " + version);
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "get", mixinStandardHelpOptions = true, description = "Read a value; exit code 3 if the key is absent.")
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text",
        description = "text (non-printable bytes escaped as \\xHH), hex, base64 or raw (the bytes as they are). Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Option(names = "--read-from", paramLabel = "leader|follower", defaultValue = "leader",
        description = "leader (default: linearizable) or follower: any replica of a replicated table may answer, at most --max-staleness stale.")
    String readFrom;

    @Option(names = "--max-staleness", paramLabel = "DURATION", defaultValue = "1s",
        description = "With --read-from follower: how stale the answering replica may be (e.g. 500ms, 2s). Default: ${DEFAULT-VALUE}.")
    String maxStaleness;

    @Mixin Common common;
    @Mixin Row row;

    @Override
    public Integer call() {
      java.time.Duration staleness = switch (readFrom) {
        case "leader" -> null;
        case "follower" -> Durations.parseWithin("--max-staleness", maxStaleness, java.time.Duration.ofMillis(1), java.time.Duration.ofHours(1));
        default -> throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--read-from is leader or follower, not '" + readFrom + "'");
      };
      ShardwiseClient client = common.cluster.connect(staleness);
      Optional<Versioned> v = client.get(row.table, row.key());
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ObjectNode o = Output.object().put("key", row.key).put("found", v.isPresent());
        v.ifPresent(x -> {
          ValueFormat.putJson(o, "value", x.value()); // never lossy: value_base64 when the bytes are not UTF-8
          o.put("version", x.version());
        });
        Output.json(out, o);
      } else if (v.isPresent() && format.isRaw()) {
        out.flush();
        System.out.write(v.get().value(), 0, v.get().value().length);
        System.out.flush();
      } else if (v.isPresent()) {
        out.println(format.render(v.get().value()));
      } else {
        spec.commandLine().getErr().println("shardwise kv get: no key '" + row.key + "' in table " + row.table);
      }
      return v.isPresent() ? Main.EXIT_OK : Main.EXIT_NOT_FOUND;
    }
  }

  @Command(name = "del", mixinStandardHelpOptions = true, description = "Delete a key; exit code 3 if it was absent.")
  static final class Del implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      boolean deleted = client.delete(row.table, row.key());
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("key", row.key).put("deleted", deleted));
      } else if (deleted) {
        out.println("deleted");
      } else {
        spec.commandLine().getErr().println("shardwise kv del: no key '" + row.key + "' in table " + row.table);
      }
      return deleted ? Main.EXIT_OK : Main.EXIT_NOT_FOUND;
    }
  }

  @Command(name = "incr", mixinStandardHelpOptions = true,
      description = {"Add DELTA (default 1; negative subtracts) to the counter at KEY, atomically at its owner (absent: 0).",
          "A salted key's increment goes to one of its sub-keys. A retry never adds twice."})
  static final class Incr implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;
    @Parameters(index = "2", arity = "0..1", paramLabel = "DELTA", defaultValue = "1") long delta;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      client.increment(row.table, row.key(), delta);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("key", row.key).put("added", delta));
      } else {
        out.println("ok, added " + delta);
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "counter", mixinStandardHelpOptions = true,
      description = "Read the counter at KEY (0 if absent); a salted key's value is its own total plus its sub-keys'.")
  static final class Counter implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;

    @Override
    public Integer call() {
      long value = common.cluster.connect().counter(row.table, row.key());
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("key", row.key).put("value", value));
      } else {
        out.println(value);
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "append", mixinStandardHelpOptions = true,
      description = {"Append VALUE at the end of the list at KEY, atomically at its owner (absent: an empty list).",
          "The owner stamps it; 'kv list' returns elements in stamp order. A salted list's append goes to one of its sub-keys.",
          "A retry never appends twice."})
  static final class Append implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;
    @Parameters(index = "2", paramLabel = "VALUE") String value;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "How VALUE is written: text (UTF-8), hex or base64. Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Override
    public Integer call() {
      byte[] bytes = format.parse(value);
      common.cluster.connect().append(row.table, row.key(), bytes);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        Output.json(out, Output.object().put("key", row.key).put("appended", bytes.length));
      } else {
        out.println("ok, appended " + bytes.length + " bytes");
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true,
      description = "Read the list at KEY (empty if absent), one element a line, in stamp order; a salted list merges its sub-keys'.")
  static final class ListElements implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Mixin Row row;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text",
        description = "text (non-printable bytes escaped as \\xHH), hex or base64. Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Override
    public Integer call() {
      if (format == ValueFormat.raw) {
        throw new IllegalArgumentException("--format raw would run the elements together: use text, hex or base64");
      }
      java.util.List<byte[]> elements = common.cluster.connect().list(row.table, row.key());
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        com.fasterxml.jackson.databind.node.ObjectNode json = Output.object().put("key", row.key).put("count", elements.size());
        var array = json.putArray("elements");
        elements.forEach(e -> array.add(format.render(e)));
        Output.json(out, json);
      } else {
        elements.forEach(e -> out.println(format.render(e)));
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "scan", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Scan one partition, a partition-key range of a range table, or everything.",
          "One partition: --partition, with --sort-from/--sort-to; a range: --from/--to; everything: --all.",
          "Prints how many shards the scan touched."})
  static final class Scan implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Common common;
    @Parameters(index = "0", paramLabel = "TABLE") String table;
    @Option(names = "--partition", paramLabel = "PK") String partition;
    @Option(names = "--sort-from", paramLabel = "SK") String sortFrom;
    @Option(names = "--sort-to", paramLabel = "SK") String sortTo;
    @Option(names = "--from", paramLabel = "PK") String from;
    @Option(names = "--to", paramLabel = "PK") String to;
    @Option(names = "--all") boolean all;
    @Option(names = "--limit", paramLabel = "N", defaultValue = "100", description = "Rows per page (max 1000). Default: ${DEFAULT-VALUE}.") int limit;
    @Option(names = "--page-token", paramLabel = "TOKEN", description = "Continue from a previous page.") String pageToken;
    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "Values as text (escaped), hex or base64. Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Override
    public Integer call() {
      if (format.isRaw()) {
        throw new IllegalArgumentException("--format raw is for kv get (one value); scan shows values as text, hex or base64");
      }
      int rows = TableCommand.inRange("--limit", limit, 1, io.shardwise.client.Scan.MAX_LIMIT);
      int scopes = (partition != null ? 1 : 0) + (from != null || to != null ? 1 : 0) + (all ? 1 : 0);
      if (scopes != 1) {
        throw new IllegalArgumentException("give exactly one of --partition, --from/--to, --all");
      }
      if ((sortFrom != null || sortTo != null) && partition == null) {
        throw new IllegalArgumentException("--sort-from and --sort-to need --partition");
      }
      io.shardwise.client.Scan scan;
      if (partition != null) {
        scan = io.shardwise.client.Scan.partition(table, partition);
        if (sortFrom != null || sortTo != null) {
          scan = scan.sortKeys(utf8(sortFrom == null ? "" : sortFrom), sortTo == null ? null : utf8(sortTo));
        }
      } else if (all) {
        scan = io.shardwise.client.Scan.all(table);
      } else {
        scan = io.shardwise.client.Scan.range(table, utf8(from == null ? "" : from), to == null ? null : utf8(to));
      }
      scan = scan.limit(rows);
      if (pageToken != null) {
        scan = scan.after(Base64.getUrlDecoder().decode(pageToken));
      }
      ShardwiseClient client = common.cluster.connect();
      ScanPage page = client.scan(scan);
      String next = page.nextPageToken().map(t -> Base64.getUrlEncoder().withoutPadding().encodeToString(t)).orElse(null);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ObjectNode o = Output.object().put("shardsTouched", page.shardsTouched());
        ArrayNode array = o.putArray("rows");
        for (KeyValue kv : page.rows()) {
          ObjectNode row = array.addObject().put("key", ByteStrings.toDisplay(kv.key().partitionKey()))
              .put("sortKey", ByteStrings.toDisplay(kv.key().sortKey()));
          ValueFormat.putJson(row, "value", kv.value());
          row.put("version", kv.version());
        }
        if (next != null) {
          o.put("nextPageToken", next);
        }
        Output.json(out, o);
      } else {
        List<List<String>> lines = new ArrayList<>();
        for (KeyValue kv : page.rows()) {
          lines.add(List.of(ByteStrings.toDisplay(kv.key().partitionKey()), ByteStrings.toDisplay(kv.key().sortKey()), format.render(kv.value()),
              Long.toString(kv.version())));
        }
        Output.table(out, List.of("KEY", "SORT KEY", "VALUE", "VERSION"), lines);
        out.println();
        int touched = page.shardsTouched();
        out.println(Output.count(page.rows().size(), "row") + ", " + Output.count(touched, "shard") + " touched"
            + (next == null ? "" : "; more with --page-token " + next));
      }
      return Main.EXIT_OK;
    }
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
