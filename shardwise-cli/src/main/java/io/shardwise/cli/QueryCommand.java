package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.shardwise.client.KeyValue;
import io.shardwise.client.QueryResult;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise query TABLE --where COND}: the documents of a JSON table that meet a condition on their fields. */
@Command(name = "query", mixinStandardHelpOptions = true,
    description = {"The documents of a table created with --format json that meet a condition on their fields.",
        "COND: comparisons (= != < <= > >=) of a field path (owner.id) with a 'string', a number, true, false or null,",
        "joined by AND and OR, grouped by parentheses: \"color = 'red' AND (year >= 2020 OR owner.id = 7)\".",
        "Without an index every shard is read at once, each filtered where it lives; a shard that does not answer",
        "within --shard-deadline is named, and the answer is marked incomplete (exit code 5)."})
final class QueryCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin KvCommand.Common common;

  @Parameters(index = "0", paramLabel = "TABLE") String table;

  @Option(names = "--where", required = true, paramLabel = "COND", description = "The condition.")
  String where;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "100", description = "The most rows printed, 1 to 10,000. Default: ${DEFAULT-VALUE}.")
  int limit;

  @Option(names = "--shard-deadline", paramLabel = "DURATION", defaultValue = "5s",
      description = "How long each shard may take (ms, s). Default: ${DEFAULT-VALUE}.")
  String shardDeadline;

  @Option(names = "--page-token", paramLabel = "TOKEN", description = "Go on after the page that printed this token.")
  String pageToken;

  @Option(names = "--key", paramLabel = "PK", description = "Only the documents of this partition key: one shard is asked.")
  String partitionKey;

  @Option(names = "--fields", paramLabel = "F1,F2", split = ",", description = {"Only these fields of each document.",
      "Through a global index covering them and the condition's fields, no row is fetched (versions print as 0)."})
  List<String> fields = new ArrayList<>();

  @Option(names = "--consistent", description = {"Through an async global index: first wait (up to --shard-deadline) until the index shows",
      "every write acknowledged before the query began. Local and sync global indexes are never stale: no effect."})
  boolean consistent;

  @Option(names = "--explain", description = "Print how the rows were found: the access path, shards asked and missing, rows examined"
      + " and matched, bytes shipped, the slowest shard.")
  boolean explain;

  @Override
  public Integer call() {
    if (limit < 1 || limit > 10_000) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--limit must be between 1 and 10,000, not " + limit);
    }
    Duration deadline = Durations.parse("--shard-deadline", shardDeadline);
    byte[] token;
    try {
      token = pageToken == null ? new byte[0] : java.util.Base64.getUrlDecoder().decode(pageToken);
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--page-token is not a token a query printed");
    }
    QueryResult r = common.cluster.connect().query(table, partitionKey == null ? null : partitionKey.getBytes(StandardCharsets.UTF_8), where,
        limit, deadline, token, consistent, fields);
    String next = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(r.nextPageToken());
    PrintWriter out = spec.commandLine().getOut();
    if (common.output == OutputFormat.json) {
      ObjectNode o = Output.object().put("complete", r.complete()).put("truncated", r.truncated());
      if (r.truncated()) {
        o.put("next_page_token", next);
      }
      ArrayNode rows = o.putArray("rows");
      for (KeyValue kv : r.rows()) {
        ObjectNode row = rows.addObject().put("key", text(kv.key().partitionKey()));
        if (kv.key().sortKey().length > 0) {
          row.put("sort_key", text(kv.key().sortKey()));
        }
        row.put("version", kv.version());
        row.put("value", kv.valueAsString());
      }
      ObjectNode plan = o.putObject("plan").put("access", r.plan().access()).put("shards", r.plan().shards())
          .put("rows_examined", r.plan().rowsExamined()).put("rows_matched", r.plan().rowsMatched())
          .put("bytes_shipped", r.plan().bytesShipped()).put("slowest_shard_micros", r.plan().slowestShardMicros());
      if (!r.plan().index().isEmpty()) {
        plan.put("index", r.plan().index()).put("index_entries", r.plan().indexEntries());
        if (r.plan().indexShards() > 0) {
          plan.put("index_shards", r.plan().indexShards()).put("row_shards", r.plan().rowShards());
        }
        if (r.plan().stalePossible()) {
          plan.put("stale_possible", true);
        }
        if (r.plan().covered()) {
          plan.put("covered", true);
        }
        if (r.plan().consistentWaitMicros() > 0) {
          plan.put("consistent_wait_micros", r.plan().consistentWaitMicros());
        }
        ArrayNode lists = plan.putArray("posting_lists");
        r.plan().postingLists().forEach(l -> lists.addObject().put("probe", l.probe()).put("entries", l.entries()));
      }
      r.plan().missingShards().forEach(plan.putArray("missing_shards")::add);
      Output.json(out, o);
    } else {
      List<List<String>> rows = new ArrayList<>();
      for (KeyValue kv : r.rows()) {
        rows.add(List.of(text(kv.key().partitionKey()) + (kv.key().sortKey().length > 0 ? "/" + text(kv.key().sortKey()) : ""),
            Long.toString(kv.version()), kv.valueAsString()));
      }
      Output.table(out, List.of("KEY", "VERSION", "DOCUMENT"), rows);
      out.println(Output.count(r.rows().size(), "row") + (r.truncated() ? " (more match: --page-token " + next + ")" : "")
          + (r.complete() ? "" : "; INCOMPLETE: " + String.join(", ", r.plan().missingShards())));
      if (explain) {
        QueryResult.Plan p = r.plan();
        if (p.index().isEmpty()) {
          out.printf(java.util.Locale.ROOT, "plan: %s of %s (no ready index serves this condition), filtered at each shard's owner%n",
              p.access(), Output.count(p.shards(), "shard"));
        } else if (p.indexShards() > 0) {
          if (p.covered()) {
            out.printf(java.util.Locale.ROOT, "plan: %s on %s: posting lists from %s, answered from their entries (the index covers"
                + " every field needed): no row fetched%n", p.access(), p.index(), Output.count(p.indexShards(), "index shard"));
          } else {
            out.printf(java.util.Locale.ROOT, "plan: %s on %s: posting lists from %s, then the rows they name fetched by key from %s,"
                + " each checked%n", p.access(), p.index(), Output.count(p.indexShards(), "index shard"), Output.count(p.rowShards(),
                "data shard"));
          }
          out.printf(java.util.Locale.ROOT, "  index entries read %,d%n", p.indexEntries());
          for (QueryResult.PostingList l : p.postingLists()) {
            out.printf(java.util.Locale.ROOT, "  posting list %s: %,d entries%n", l.probe(), l.entries());
          }
          if (p.stalePossible()) {
            out.println("  async index: may miss writes newer than its lag ('index status'); --consistent waits for them");
          } else if (consistent) {
            out.printf(java.util.Locale.ROOT, "  consistent: waited %.1f ms for the index to show every earlier write%n",
                p.consistentWaitMicros() / 1000.0);
          }
        } else {
          out.printf(java.util.Locale.ROOT, "plan: %s on %s, %s (each read through its local index), rows checked at each owner%n",
              p.access(), p.index(), Output.count(p.shards(), "shard"));
          out.printf(java.util.Locale.ROOT, "  index entries read %,d (all shards)%n", p.indexEntries());
          for (QueryResult.PostingList l : p.postingLists()) {
            out.printf(java.util.Locale.ROOT, "  posting list %s: %,d entries%n", l.probe(), l.entries());
          }
        }
        out.printf(java.util.Locale.ROOT, "  rows examined %,d, matched %,d, shipped %,d bytes; slowest shard %.1f ms%n", p.rowsExamined(),
            p.rowsMatched(), p.bytesShipped(), p.slowestShardMicros() / 1000.0);
      }
    }
    return r.complete() ? Main.EXIT_OK : Main.EXIT_UNAVAILABLE;
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
