package io.shardwise.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TableKey;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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

/**
 * {@code shardwise txn run|get|status}: cross-shard transactions from a JSON file, reads of several
 * keys as of one moment, and a transaction's outcome by its id.
 */
@Command(name = "txn", mixinStandardHelpOptions = true,
    description = "Transactions across shards and tables: all of their items applied, or none.",
    subcommands = {TxnCommand.Run.class, TxnCommand.Get.class, TxnCommand.Status.class})
final class TxnCommand {

  @Command(name = "run", mixinStandardHelpOptions = true,
      description = {"Run the transaction a JSON file describes: all of its items applied, or none.",
          "FILE: {\"items\": [ITEM, ...]}, up to 100 items, each",
          "  {\"op\": \"put\"|\"delete\"|\"check\", \"table\": T, \"key\": K, \"sort_key\": SK, \"value\": TEXT | \"value_base64\": B64,",
          "   \"if\": \"exists\" | \"absent\" | VERSION}",
          "(sort_key and if optional; a check needs an if). Exit code 0: committed; 4: cancelled (a condition failed) or aborted;",
          "6: outcome unknown (look it up with 'txn status ID')."})
  static final class Run implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "FILE", description = "The transaction, as JSON ('-': standard input).")
    String file;

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "The transaction's idempotency token (at most 64 bytes): run again with the same token, it answers the first outcome"
            + " and applies nothing twice. Default: a new one, and a transaction aborted by a conflict is run again.")
    String token;

    @Override
    public Integer call() {
      List<TxnItem> items = parse(read(file));
      ShardwiseClient client = common.cluster.connect();
      TxnOutcome o = token == null ? client.transact(items) : client.transact(items, token);
      print(spec.commandLine().getOut(), common.output, o);
      return exitCode(o);
    }
  }

  @Command(name = "get", mixinStandardHelpOptions = true,
      description = "Read up to 100 keys of any tables as of one moment (a transaction is seen whole or not at all).")
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(paramLabel = "TABLE/KEY[/SORT_KEY]", arity = "1..100", description = "The keys, as table/partition-key[/sort-key].")
    List<String> keys;

    @Option(names = "--format", paramLabel = "F", defaultValue = "text", description = "text, hex or base64. Default: ${DEFAULT-VALUE}.")
    ValueFormat format;

    @Override
    public Integer call() {
      List<TableKey> parsed = new ArrayList<>();
      for (String k : keys) {
        String[] parts = k.split("/", 3);
        if (parts.length < 2 || parts[0].isEmpty()) {
          throw new IllegalArgumentException("a key is TABLE/KEY or TABLE/KEY/SORT_KEY, not '" + k + "'");
        }
        parsed.add(new TableKey(parts[0], parts.length == 3 ? Key.of(parts[1], parts[2]) : Key.of(parts[1])));
      }
      List<Optional<Versioned>> read = common.cluster.connect().transactGet(parsed);
      PrintWriter out = spec.commandLine().getOut();
      if (common.output == OutputFormat.json) {
        ArrayNode a = Output.JSON.createArrayNode();
        for (int i = 0; i < parsed.size(); i++) {
          ObjectNode o = a.addObject().put("key", keys.get(i)).put("found", read.get(i).isPresent());
          read.get(i).ifPresent(v -> {
            ValueFormat.putJson(o, "value", v.value());
            o.put("version", v.version());
          });
        }
        Output.json(out, a);
      } else {
        List<List<String>> rows = new ArrayList<>();
        for (int i = 0; i < parsed.size(); i++) {
          Optional<Versioned> v = read.get(i);
          rows.add(List.of(keys.get(i), v.map(x -> Long.toString(x.version())).orElse("-"), v.map(x -> format.render(x.value())).orElse("(absent)")));
        }
        Output.table(out, List.of("KEY", "VERSION", "VALUE"), rows);
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true, description = "A transaction's outcome by its id (as 'txn run' printed it).")
  static final class Status implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin KvCommand.Common common;

    @Parameters(index = "0", paramLabel = "ID") String id;

    @Override
    public Integer call() {
      TxnOutcome o = common.cluster.connect().txnStatus(id);
      print(spec.commandLine().getOut(), common.output, o);
      return exitCode(o);
    }
  }

  static int exitCode(TxnOutcome o) {
    return switch (o.status()) {
      case COMMITTED -> Main.EXIT_OK;
      case CANCELLED, ABORTED -> Main.EXIT_CONFLICT;
      case UNKNOWN, PENDING -> Main.EXIT_UNKNOWN;
    };
  }

  static void print(PrintWriter out, OutputFormat format, TxnOutcome o) {
    if (format == OutputFormat.json) {
      ObjectNode n = Output.object().put("outcome", o.status().name()).put("txn_id", o.txnId());
      ArrayNode versions = n.putArray("versions");
      for (long v : o.versions()) {
        versions.add(v);
      }
      ArrayNode cancelled = n.putArray("cancellations");
      o.cancellations().forEach(c -> cancelled.addObject().put("item", c.item()).put("reason", c.reason()).put("current_version", c.currentVersion()));
      if (!o.message().isEmpty()) {
        n.put("message", o.message());
      }
      Output.json(out, n);
      return;
    }
    out.println(o.status() + (o.message().isEmpty() ? "" : ": " + o.message()));
    if (o.versions().length > 0) {
      List<List<String>> rows = new ArrayList<>();
      for (int i = 0; i < o.versions().length; i++) {
        rows.add(List.of(Integer.toString(i), o.versions()[i] == 0 ? "-" : Long.toString(o.versions()[i])));
      }
      Output.table(out, List.of("ITEM", "VERSION"), rows);
    }
    o.cancellations().forEach(c -> out.println("item " + c.item() + ": " + c.reason() + " (the key's version was " + c.currentVersion()
        + (c.currentVersion() == 0 ? ", absent" : "") + ")"));
    out.println("transaction id: " + o.txnId());
  }

  private static String read(String file) {
    try {
      return file.equals("-") ? new String(System.in.readAllBytes(), StandardCharsets.UTF_8) : Files.readString(Path.of(file));
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the transaction file '" + file + "': " + e.getMessage(), e);
    }
  }

  /** The items of a transaction file; every mistake is named with the item's index. */
  static List<TxnItem> parse(String json) {
    JsonNode root;
    try {
      root = Output.JSON.readTree(json);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("the transaction file is not JSON: " + e.getOriginalMessage());
    }
    JsonNode items = root == null ? null : root.get("items");
    if (items == null || !items.isArray() || items.isEmpty()) {
      throw new IllegalArgumentException("the transaction file holds {\"items\": [...]} with at least one item");
    }
    List<TxnItem> out = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      JsonNode item = items.get(i);
      String where = "item " + i + ": ";
      String op = text(item, "op", where);
      String table = text(item, "table", where);
      String key = text(item, "key", where);
      Key k = item.hasNonNull("sort_key") ? Key.of(key, item.get("sort_key").asText()) : Key.of(key);
      byte[] value = null;
      if (item.hasNonNull("value")) {
        value = item.get("value").asText().getBytes(StandardCharsets.UTF_8);
      } else if (item.hasNonNull("value_base64")) {
        try {
          value = Base64.getDecoder().decode(item.get("value_base64").asText());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(where + "value_base64 is not base64", e);
        }
      }
      long expected = TxnItem.ANY;
      JsonNode cond = item.get("if");
      if (cond != null && !cond.isNull()) {
        if (cond.isIntegralNumber() && cond.asLong() >= 0) {
          expected = cond.asLong();
        } else if (cond.isTextual() && cond.asText().equals("exists")) {
          expected = TxnItem.EXISTS;
        } else if (cond.isTextual() && cond.asText().equals("absent")) {
          expected = TxnItem.ABSENT;
        } else {
          throw new IllegalArgumentException(where + "\"if\" is \"exists\", \"absent\" or a version (a number), not " + cond);
        }
      }
      try {
        out.add(switch (op) {
          case "put" -> {
            if (value == null) {
              throw new IllegalArgumentException("a put needs \"value\" or \"value_base64\"");
            }
            yield new TxnItem(table, k, TxnItem.Op.PUT, value, expected);
          }
          case "delete" -> new TxnItem(table, k, TxnItem.Op.DELETE, null, expected);
          case "check" -> new TxnItem(table, k, TxnItem.Op.CHECK, null, expected);
          default -> throw new IllegalArgumentException("\"op\" is put, delete or check, not '" + op + "'");
        });
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + e.getMessage(), e);
      }
    }
    return out;
  }

  private static String text(JsonNode item, String field, String where) {
    JsonNode n = item.get(field);
    if (n == null || !n.isTextual() || n.asText().isEmpty()) {
      throw new IllegalArgumentException(where + "\"" + field + "\" is required (text)");
    }
    return n.asText();
  }
}
