package io.shardwise.server.rpc;

import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.KeyValue;
import io.shardwise.proto.v1.QueryPlan;
import io.shardwise.proto.v1.QueryResponse;
import io.shardwise.proto.v1.ShardScanResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A query without an index (a scatter/gather): every shard of the table is read at once, each by
 * its owner, which sends back only the rows that meet the condition ({@code ShardScan} with a
 * where); the answers are merged in shard order. Each shard has a deadline from the query's start:
 * a shard that has not answered by then, or failed, is named in the answer's plan as missing, and
 * the answer says it is not complete — never a silently partial result. The query is as slow as
 * its slowest shard (the seeds' tail-latency amplification), and every shard does the work of
 * every query.
 */
final class TableQuery {

  /** Rows examined per page of a shard's scan. */
  static final int PAGE_ROWS = 1_000;

  /** Reads one page of the shard at {@code position}, filtered at its owner, from {@code from} (an encoded key; empty: its start). */
  @FunctionalInterface
  interface ShardReader {
    ShardScanResponse read(int position, byte[] from, int limit);
  }

  private record ShardRows(List<KeyValue> rows, long examined, long bytes, boolean more) {}

  private TableQuery() {}

  /**
   * Runs the query over every shard of {@code table}: at most {@code limit} rows, {@code truncated}
   * if more match.
   */
  static QueryResponse.Builder run(Table table, ShardReader reader, int limit, long shardDeadlineMillis) {
    long started = System.nanoTime();
    int shards = table.shards().size();
    List<Future<ShardRows>> answers = new ArrayList<>(shards);
    for (int position = 0; position < shards; position++) {
      int p = position;
      answers.add(Inline.BLOCKING.submit(() -> readShard(reader, p, limit)));
    }
    long deadline = started + TimeUnit.MILLISECONDS.toNanos(shardDeadlineMillis);
    QueryPlan.Builder plan = QueryPlan.newBuilder().setAccess("scan").setShards(shards);
    List<KeyValue> rows = new ArrayList<>();
    boolean truncated = false;
    long slowest = 0;
    for (int position = 0; position < shards; position++) {
      Future<ShardRows> answer = answers.get(position);
      String name = table.name() + "/" + table.shards().get(position).id().number();
      try {
        ShardRows r = answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        slowest = Math.max(slowest, System.nanoTime() - started);
        plan.setRowsExamined(plan.getRowsExamined() + r.examined()).setRowsMatched(plan.getRowsMatched() + r.rows().size())
            .setBytesShipped(plan.getBytesShipped() + r.bytes());
        for (KeyValue row : r.rows()) {
          if (rows.size() == limit) {
            truncated = true;
            break;
          }
          rows.add(row);
        }
      } catch (TimeoutException e) {
        answer.cancel(true);
        plan.addMissingShards(name + " (no answer within " + shardDeadlineMillis + " ms)");
      } catch (ExecutionException e) {
        plan.addMissingShards(name + " (" + e.getCause().getMessage() + ")");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        answers.forEach(a -> a.cancel(true));
        throw io.grpc.Status.CANCELLED.withDescription("interrupted while the shards answered").asRuntimeException();
      }
    }
    plan.setSlowestShardMicros(slowest / 1_000);
    return QueryResponse.newBuilder().addAllRows(rows).setPlan(plan).setComplete(plan.getMissingShardsCount() == 0)
        .setTruncated(truncated);
  }

  /** A shard's matching rows, page by page, until it has no more or more than {@code limit} match. */
  private static ShardRows readShard(ShardReader reader, int position, int limit) {
    List<KeyValue> rows = new ArrayList<>();
    long examined = 0;
    long bytes = 0;
    byte[] from = new byte[0];
    while (true) {
      ShardScanResponse page = reader.read(position, from, PAGE_ROWS);
      examined += page.getExamined();
      for (KeyValue row : page.getRowsList()) {
        rows.add(row);
        bytes += row.getKey().getPartitionKey().size() + row.getKey().getSortKey().size() + row.getValue().size();
      }
      if (!page.getHasMore()) {
        return new ShardRows(rows, examined, bytes, false);
      }
      if (rows.size() > limit) {
        return new ShardRows(rows, examined, bytes, true);
      }
      from = page.getResumeFrom().toByteArray();
    }
  }
}
