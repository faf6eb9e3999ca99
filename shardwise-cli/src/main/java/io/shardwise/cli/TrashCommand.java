package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.ManagedChannel;
import io.shardwise.client.NodeStatus;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.proto.Channels;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.ListTrashRequest;
import io.shardwise.proto.v1.ListTrashResponse;
import io.shardwise.proto.v1.PurgeTrashRequest;
import io.shardwise.proto.v1.PurgeTrashResponse;
import io.shardwise.proto.v1.RestoreTrashRequest;
import io.shardwise.proto.v1.RestoreTrashResponse;
import io.shardwise.proto.v1.RestoredEntry;
import io.shardwise.proto.v1.TrashEntry;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise node trash}: what nodes keep of shards they no longer serve, and putting it back or away. */
@Command(name = "trash", mixinStandardHelpOptions = true,
    description = {"Copies of shards a node no longer serves (moved away, found at start, dropped tables, replaced by a move).",
        "They are kept, never served, for the node's --trash-grace (default 24h), then purged."},
    subcommands = {TrashCommand.ListEntries.class, TrashCommand.Restore.class, TrashCommand.Purge.class})
final class TrashCommand {

  private TrashCommand() {}

  private static final int MAX_MESSAGE_BYTES = 64 << 20;

  /** Calls one live node's admin API. */
  private static <T> T onNode(ShardwiseClient client, String node, Function<AdminServiceGrpc.AdminServiceBlockingStub, T> call) {
    NodeStatus info = client.clusterStatus().nodes().stream().filter(n -> n.id().equals(node) && n.up()).findFirst()
        .orElseThrow(() -> CliException.notFound("no live node " + node));
    ManagedChannel channel = Channels.open(info.address(), MAX_MESSAGE_BYTES);
    try {
      return call.apply(AdminServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.MINUTES));
    } finally {
      Channels.closeAll(List.of(channel));
    }
  }

  /** Which entries of which node's trash. */
  static final class Entries {
    @Option(names = "--node", required = true, paramLabel = "ID", description = "The node whose trash holds the entries.")
    String node;

    @Parameters(paramLabel = "ID", arity = "1..*", description = "Entry ids, from 'shardwise node trash list'.")
    List<Long> ids;
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "List the trash of every live node, or of one.")
  static final class ListEntries implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin TableCommand.Common common;

    @Option(names = "--node", paramLabel = "ID", description = "Only this node.")
    String node;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      List<ListTrashResponse> answers = new ArrayList<>();
      for (NodeStatus n : client.clusterStatus().nodes()) {
        if (n.up() && (node == null || node.equals(n.id()))) {
          answers.add(onNode(client, n.id(), stub -> stub.listTrash(ListTrashRequest.getDefaultInstance())));
        }
      }
      if (node != null && answers.isEmpty()) {
        throw CliException.notFound("no live node " + node);
      }
      print(spec.commandLine().getOut(), common.output, answers);
      return Main.EXIT_OK;
    }

    private static void print(PrintWriter out, OutputFormat format, List<ListTrashResponse> answers) {
      if (format == OutputFormat.json) {
        ObjectNode root = Output.object();
        ArrayNode all = root.putArray("entries");
        for (ListTrashResponse a : answers) {
          for (TrashEntry e : a.getEntriesList()) {
            all.addObject().put("node", a.getNode()).put("id", e.getId()).put("table", e.getTable()).put("table_id", e.getTableId())
                .put("shard", e.getNumber()).put("kind", e.getKind()).put("trashed_at", Instant.ofEpochMilli(e.getTrashedAtMillis()).toString())
                .put("keys", e.getKeys()).put("bytes", e.getBytes()).put("reason", e.getReason());
          }
        }
        Output.json(out, root);
        return;
      }
      List<List<String>> rows = new ArrayList<>();
      long bytes = 0;
      for (ListTrashResponse a : answers) {
        for (TrashEntry e : a.getEntriesList()) {
          String table = e.getTable().isEmpty() ? "(dropped, id " + e.getTableId() + ")" : e.getTable();
          rows.add(List.of(a.getNode(), Long.toString(e.getId()), table + "/" + e.getNumber(), e.getKind(),
              Instant.ofEpochMilli(e.getTrashedAtMillis()).toString(), Long.toString(e.getKeys()), Long.toString(e.getBytes())));
          bytes += e.getBytes();
        }
      }
      if (rows.isEmpty()) {
        out.println("the trash is empty");
        return;
      }
      Output.table(out, List.of("NODE", "ID", "SHARD", "KIND", "TRASHED AT", "KEYS", "BYTES"), rows);
      out.println(rows.size() + " entries, " + bytes + " bytes; restore with 'shardwise node trash restore --node NODE ID'");
    }
  }

  @Command(name = "restore", mixinStandardHelpOptions = true,
      description = {"Merge trash entries back into their shards' current owners, then purge them.",
          "A key is written only where the entry's version is newer than the owner's. Versions count the writes to a key, so a",
          "key written since on an empty shard, with fewer writes than before, loses to the entry. A dropped table comes back with 'shardwise table undrop'."})
  static final class Restore implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin TableCommand.Common common;

    @Mixin Entries entries;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      RestoreTrashResponse r = onNode(client, entries.node,
          stub -> stub.restoreTrash(RestoreTrashRequest.newBuilder().addAllIds(entries.ids).build()));
      PrintWriter out = spec.commandLine().getOut();
      for (RestoredEntry e : r.getRestoredList()) {
        out.println("entry " + e.getId() + " restored into " + e.getOwner() + ": " + e.getKeysMerged() + " keys written, "
            + e.getKeysNewerKept() + " kept (as new or newer there)");
      }
      return Main.EXIT_OK;
    }
  }

  @Command(name = "purge", mixinStandardHelpOptions = true, description = "Delete trash entries now, before their grace ends.")
  static final class Purge implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin TableCommand.Common common;

    @Mixin Entries entries;

    @Override
    public Integer call() {
      ShardwiseClient client = common.cluster.connect();
      PurgeTrashResponse r = onNode(client, entries.node,
          stub -> stub.purgeTrash(PurgeTrashRequest.newBuilder().addAllIds(entries.ids).build()));
      List<Long> missing = new ArrayList<>(entries.ids);
      missing.removeAll(r.getPurgedList());
      spec.commandLine().getOut().println("purged " + r.getPurgedCount() + " entries" + (missing.isEmpty() ? "" : "; no such entry: " + missing));
      return missing.isEmpty() ? Main.EXIT_OK : Main.EXIT_NOT_FOUND;
    }
  }
}
