package io.shardwise.server.rpc;

import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
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

  private record ShardRows(List<KeyValue> rows, long examined, long bytes, boolean more, long[] probeEntries) {}

  /** A shard of the query's map was split, merged or moved since (its owner said so): run the query again on the map of {@code epoch}. */
  static final class StaleMap extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final long epoch;

    StaleMap(long epoch) {
      super("the map changed under the query", null, false, false);
      this.epoch = epoch;
    }
  }

  private TableQuery() {}

  /** Where a page begins: the shard at {@code position}, after the key {@code after} (encoded; empty: from its start). */
  record Resume(int position, byte[] after) {
    static final Resume START = new Resume(0, new byte[0]);
  }

  /**
   * A page token: a version byte, the position of the shard of the page's last row, and that row's
   * encoded key. For a table whose shards split and merge, the position is found again from the key
   * by the map of the next page (the shard that holds it then), so the pages go on where they
   * stopped however the shards changed between them; other tables' positions never change.
   */
  static byte[] token(int position, byte[] lastKey) {
    return java.nio.ByteBuffer.allocate(5 + lastKey.length).put(TOKEN_VERSION).putInt(position).put(lastKey).array();
  }

  private static final byte TOKEN_VERSION = 1;

  /** Where the page after {@code token} begins in {@code table} now. */
  static Resume resume(Table table, byte[] token) {
    if (token.length == 0) {
      return Resume.START;
    }
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(token);
    if (token.length < 7 || b.get() != TOKEN_VERSION) {
      throw Errors.invalid("a page token of another kind (not one a query of this table gave)");
    }
    int position = b.getInt();
    byte[] after = new byte[b.remaining()];
    b.get(after);
    if (table.layout().splittable()) {
      try {
        position = table.positionOf(table.shardFor(io.shardwise.core.key.Key.decode(after).partitionKey()).id());
      } catch (IllegalArgumentException e) {
        throw Errors.invalid("a page token of another kind: " + e.getMessage());
      }
    }
    if (position < 0 || position >= table.shards().size()) {
      throw Errors.invalid("a page token of another table (shard position " + position + ")");
    }
    return new Resume(position, after);
  }

  /**
   * Runs the query over the shards of {@code table} from {@code resume} on: at most {@code limit}
   * rows, {@code truncated} with a page token if more match. With {@code staleMapThrows}, a shard
   * whose owner says it was split, merged or moved since the query's map (WRONG_SHARD) throws {@link
   * StaleMap} once every shard has answered or timed out, so that the caller runs the query again on
   * the newer map; without, such a shard is named missing like any other. With {@code index}, every
   * shard is read through those probes; with {@code onlyPosition} at least 0, only the shard at that
   * position is read (a query of one partition key).
   */
  static QueryResponse.Builder run(Table table, ShardReader reader, int limit, long shardDeadlineMillis, Resume resume,
      boolean staleMapThrows, io.shardwise.server.index.IndexPlan index, int onlyPosition) {
    long started = System.nanoTime();
    int shards = onlyPosition >= 0 ? onlyPosition + 1 : table.shards().size();
    int first = Math.max(resume.position(), Math.max(0, onlyPosition));
    List<Future<ShardRows>> answers = new ArrayList<>(shards);
    for (int position = 0; position < shards; position++) {
      int p = position;
      byte[] from = p == resume.position() ? resume.after() : new byte[0];
      answers.add(p < first ? null : Inline.BLOCKING.submit(() -> readShard(reader, p, from, limit)));
    }
    long deadline = started + TimeUnit.MILLISECONDS.toNanos(shardDeadlineMillis);
    QueryPlan.Builder plan = QueryPlan.newBuilder().setAccess(index == null ? "scan" : "index");
    long[] probeEntries = new long[index == null ? 0 : index.probes().size()];
    if (index != null) {
      plan.setIndex(index.describe());
      index.probes().forEach(p -> plan.addIndexProbes(p.describe()));
    }
    List<KeyValue> rows = new ArrayList<>();
    boolean truncated = false;
    int lastPosition = -1;
    long slowest = 0;
    long staleAt = -1; // WRONG_SHARD seen: the highest map epoch it named
    plan.setShards(shards - first);
    for (int position = first; position < shards; position++) {
      Future<ShardRows> answer = answers.get(position);
      String name = table.name() + "/" + table.shards().get(position).id().number();
      try {
        ShardRows r = answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        slowest = Math.max(slowest, System.nanoTime() - started);
        plan.setRowsExamined(plan.getRowsExamined() + r.examined()).setRowsMatched(plan.getRowsMatched() + r.rows().size())
            .setBytesShipped(plan.getBytesShipped() + r.bytes());
        for (int i = 0; i < probeEntries.length && i < r.probeEntries().length; i++) {
          probeEntries[i] += r.probeEntries()[i];
        }
        for (KeyValue row : r.rows()) {
          if (rows.size() == limit) {
            truncated = true;
            break;
          }
          rows.add(row);
          lastPosition = position;
        }
      } catch (TimeoutException e) {
        answer.cancel(true);
        plan.addMissingShards(name + " (no answer within " + shardDeadlineMillis + " ms)");
      } catch (ExecutionException e) {
        if (staleMapThrows && Errors.code(e.getCause()) == io.shardwise.proto.v1.ErrorInfo.Code.WRONG_SHARD) {
          staleAt = Math.max(staleAt, Errors.info(e.getCause()).map(io.shardwise.proto.v1.ErrorInfo::getMapEpoch).orElse(0L));
          continue;
        }
        plan.addMissingShards(name + " (" + e.getCause().getMessage() + ")");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        answers.forEach(a -> a.cancel(true));
        throw io.grpc.Status.CANCELLED.withDescription("interrupted while the shards answered").asRuntimeException();
      }
    }
    if (staleAt >= 0) {
      throw new StaleMap(staleAt);
    }
    plan.setSlowestShardMicros(slowest / 1_000);
    if (index != null) {
      plan.setIndexEntries(plan.getRowsExamined()); // through an index, the shards read its entries, then only the rows they name
      for (long n : probeEntries) {
        plan.addIndexProbeEntries(n);
      }
    }
    QueryResponse.Builder out = QueryResponse.newBuilder().addAllRows(rows).setPlan(plan).setComplete(plan.getMissingShardsCount() == 0)
        .setTruncated(truncated);
    if (truncated) {
      KeyValue last = rows.get(rows.size() - 1);
      byte[] key = io.shardwise.core.key.Key.of(last.getKey().getPartitionKey().toByteArray(), last.getKey().getSortKey().toByteArray()).encode();
      out.setNextPageToken(com.google.protobuf.ByteString.copyFrom(token(lastPosition, key)));
    }
    return out;
  }

  /**
   * A shard's matching rows from {@code after} on (exclusive; empty: from its start), page by page,
   * until it has no more or more than {@code limit} match.
   */
  private static ShardRows readShard(ShardReader reader, int position, byte[] after, int limit) {
    List<KeyValue> rows = new ArrayList<>();
    long examined = 0;
    long bytes = 0;
    long[] probeEntries = new long[0];
    byte[] from = after;
    while (true) {
      ShardScanResponse page = reader.read(position, from, PAGE_ROWS);
      examined += page.getExamined();
      if (probeEntries.length < page.getProbeEntriesCount()) {
        probeEntries = java.util.Arrays.copyOf(probeEntries, page.getProbeEntriesCount());
      }
      for (int i = 0; i < page.getProbeEntriesCount(); i++) {
        probeEntries[i] += page.getProbeEntries(i);
      }
      for (KeyValue row : page.getRowsList()) {
        if (after.length > 0 && java.util.Arrays.equals(io.shardwise.core.key.Key.of(row.getKey().getPartitionKey().toByteArray(),
            row.getKey().getSortKey().toByteArray()).encode(), after)) {
          continue; // the last row of the page before
        }
        rows.add(row);
        bytes += row.getKey().getPartitionKey().size() + row.getKey().getSortKey().size() + row.getValue().size();
      }
      if (!page.getHasMore()) {
        return new ShardRows(rows, examined, bytes, false, probeEntries);
      }
      if (rows.size() > limit) {
        return new ShardRows(rows, examined, bytes, true, probeEntries);
      }
      from = page.getResumeFrom().toByteArray();
    }
  }
}
