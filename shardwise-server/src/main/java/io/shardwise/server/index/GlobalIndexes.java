package io.shardwise.server.index;

import com.google.protobuf.ByteString;
import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.IndexValues;
import io.shardwise.core.doc.Where;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.txn.TableKey;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.proto.Documents;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.KeyValue;
import io.shardwise.proto.v1.QueryPlan;
import io.shardwise.proto.v1.QueryResponse;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.ScanResponse;
import io.shardwise.server.txn.Participants;
import io.shardwise.server.txn.Transactions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Global (term-partitioned) secondary indexes, kept in sync with their rows.
 *
 * <p><b>Where entries live.</b> A global index on {@code color} of table {@code cars} is a table of
 * its own, {@code cars.color} ({@link IndexDef#globalTable}), with its own shards, splits, moves and
 * replicas: one row per entry, partition key the indexed value's {@link IndexValues} encoding (a
 * value's entries are one partition, in one shard), sort key the indexed row's encoded key.
 *
 * <p><b>Writes.</b> Every write of a row of an indexed table is a transaction ({@link Transactions})
 * planned here: read the rows it writes (each at its leader), then write them on condition that
 * they still hold what was read, delete the entries of the values they leave and put those of the
 * values they take. A row changed between the read and the commit cancels the attempt and it is
 * planned again; the caller's own conditions are the caller's. So an index never misses a committed
 * row, never keeps an entry of an older value, and a query through it is never stale — at the cost
 * of a two-phase commit over the row's shard and one index shard per changed entry for every write
 * (docs/benchmarks.md measures it). A write planned on a map without the index is refused where it
 * lands ({@link GlobalIndexFence}) and planned again here.
 *
 * <p><b>Building</b> an index on a table with rows ({@link #backfill}): once every node holding the
 * table's shards has drained the writes planned without it, the controller reads every row and
 * writes its entry in a transaction that also checks the row is unchanged; a row changed meanwhile
 * was indexed by its own write, and is read again.
 *
 * <p><b>Queries</b> ({@link #query}) read each probe's posting list from the index shards (one
 * partition for an equality; an AND of equalities intersects their lists, shipping a short list to
 * a long one's shard), then fetch the rows they name from their shards by key — the fan-out for
 * rows the seeds point at — and check each against the whole condition.
 *
 * <p>Thread-safe; every call blocks its thread while shards answer.
 */
public final class GlobalIndexes {

  private static final Logger LOG = LoggerFactory.getLogger(GlobalIndexes.class);

  /** The longest encoded value a global index takes (an entry's partition key): DynamoDB's key attributes stop at 2 KB. */
  public static final int MAX_VALUE_BYTES = 1024;
  /** The most index entries one query reads through global indexes (all probes together). */
  public static final int MAX_POSTINGS = 100_000;
  /** How many times a write is planned again when the rows it read changed before it committed. */
  private static final int PLAN_ATTEMPTS = 16;
  /** Rows a backfill transaction indexes. */
  private static final int BACKFILL_ROWS = 32;
  private static final int SCAN_PAGE = 1_000;
  private static final int FETCH_BATCH = 256;

  /** What this needs of the cluster: the map, scans and reads by key as a client would have them, served by this node. */
  public interface Cluster {
    ShardMap map();

    /** Waits up to a few seconds for this node's map to reach {@code epoch}; returns the map then. */
    ShardMap awaitMap(long epoch);

    /** One page of a scan ({@code DataService.Scan}), routed from this node. */
    ScanResponse scan(ScanRequest request);

    /** The rows at {@code keys} as their leaders hold them, in order (found false: absent). */
    List<GetResponse> get(String table, List<Key> keys);

    /**
     * Waits until every shard's leader of {@code table} has reconciled the rows pending when it was
     * asked ({@link AsyncIndexes#awaitReconciled}), each for up to {@code millis}.
     *
     * @throws io.grpc.StatusRuntimeException UNAVAILABLE if a shard has not in time, or did not answer
     */
    void awaitReconciled(Table table, long millis);
  }

  private final Cluster cluster;
  private final Transactions txns;
  private final Reconcile reconcile;
  /** Runs a batch's transactions at once (each blocks its thread while its shards answer). */
  private final java.util.concurrent.ExecutorService blocking;
  /** Rows the backfills run here have indexed so far, by index id (this process's runs; the controller runs them). */
  private final java.util.Map<Long, java.util.concurrent.atomic.AtomicLong> backfilled = new java.util.concurrent.ConcurrentHashMap<>();

  public GlobalIndexes(Cluster cluster, Transactions txns, java.util.concurrent.ExecutorService blocking) {
    this.cluster = cluster;
    this.txns = txns;
    this.blocking = blocking;
    this.reconcile = new Reconcile(cluster, txns);
  }

  Cluster cluster() {
    return cluster;
  }

  Reconcile reconcile() {
    return reconcile;
  }

  /** True if {@code table} has a global index (building or ready): its writes are planned here. */
  public static boolean indexed(Table table) {
    return table.newestSyncIndex() > 0;
  }

  // ------------------------------------------------------------------ writes

  /**
   * Runs {@code asked} as one transaction, with the entries of every global index of the tables it
   * writes. Cancellations and versions name the caller's items ({@code asked}'s indexes).
   *
   * @param token the caller's id of the transaction (a write id; empty: none)
   * @param retryAborted run an attempt aborted by a conflict again (a put, a delete, a batch: the
   *     caller asked for a write, not a transaction), as an older transaction each time; else
   *     answer ABORTED, as a transaction does
   */
  public TxnOutcome transact(List<TxnItem> asked, byte[] token, long firstAttemptMillis, boolean retryAborted) {
    long first = firstAttemptMillis > 0 ? firstAttemptMillis : System.currentTimeMillis();
    TxnOutcome last = null;
    for (int attempt = 0; attempt < PLAN_ATTEMPTS; attempt++) {
      ShardMap map = cluster.map();
      Planned p = plan(map, asked);
      byte[] t = attemptToken(token, attempt);
      TxnOutcome o = txns.transact(p.items(), t, first, new Transactions.Planning(map.epoch(), asked, p.rows().isEmpty()));
      last = o;
      switch (o.status()) {
        case COMMITTED:
          return new TxnOutcome(o.status(), Arrays.copyOf(o.versions(), asked.size()), List.of(), o.txnId(), o.message());
        case CANCELLED: {
          int item = o.cancellations().isEmpty() ? -1 : o.cancellations().get(0).item();
          if (item >= 0 && item < asked.size() && !p.strengthened()[item]) {
            return o; // the caller's own condition
          }
          continue; // a row changed since it was read: plan again
        }
        case ABORTED: {
          long epoch = GlobalIndexFence.replanEpoch(o.message());
          if (epoch > 0) {
            cluster.awaitMap(epoch); // a shard knows an index this plan did not: plan again on its map
            continue;
          }
          if (retryAborted) {
            pause(attempt); // wait-die: as the attempts age, they wait for the transactions in their way instead
            continue;
          }
          return o;
        }
        default:
          return o;
      }
    }
    return new TxnOutcome(TxnOutcome.Status.ABORTED, null, List.of(), last == null ? "" : last.txnId(),
        "the rows kept changing while the write was planned " + PLAN_ATTEMPTS + " times: retry");
  }

  private static void pause(int attempt) {
    try {
      Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(1, 2L << Math.min(attempt, 6)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw io.grpc.Status.CANCELLED.withDescription("interrupted while a write waited to try again").asRuntimeException();
    }
  }

  /**
   * A put or a delete of a row of a globally indexed table, with its entries ({@link #transact}):
   * returns the version it wrote (a delete: the tombstone's, or 0 if the row was absent).
   *
   * @param writeId the caller's write id (null: none): a retry under it answers the first outcome
   * @throws io.grpc.StatusRuntimeException VERSION_MISMATCH for the caller's condition; ABORTED after
   *     conflicts on every attempt; UNAVAILABLE if the outcome is not known (retry under the same write id)
   */
  public long write(TxnItem item, byte[] writeId) {
    return written(List.of(item), writeId)[0];
  }

  /**
   * A batch of puts of a globally indexed table: its rows in transactions of as many rows as fit
   * with their entries ({@link Transactions#MAX_ITEMS}), run at once, each atomic — a batch is atomic
   * per transaction, as a plain batch is per shard. Returns each row's version.
   *
   * @param writeIds one per row, or none: the rows of one transaction are retried as one under a
   *     token made of their ids
   */
  public long[] batch(String table, List<Key> keys, List<byte[]> values, List<byte[]> writeIds) {
    Table t = cluster.map().table(table).orElseThrow(() -> Errors.noSuchTable(table, cluster.map().epoch()));
    int rows = Math.max(1, Transactions.MAX_ITEMS / (1 + 2 * t.syncIndexes().size()));
    long[] versions = new long[keys.size()];
    List<java.util.concurrent.Future<?>> chunks = new ArrayList<>();
    for (int from = 0; from < keys.size(); from += rows) {
      int start = from;
      int end = Math.min(keys.size(), from + rows);
      chunks.add(blocking.submit(() -> {
        List<TxnItem> items = new ArrayList<>(end - start);
        com.google.common.hash.Hasher token = com.google.common.hash.Hashing.murmur3_128().newHasher();
        for (int i = start; i < end; i++) {
          items.add(TxnItem.put(table, keys.get(i), values.get(i)));
          if (!writeIds.isEmpty()) {
            token.putInt(writeIds.get(i).length).putBytes(writeIds.get(i));
          }
        }
        long[] written = written(items, writeIds.isEmpty() ? null : token.hash().asBytes());
        System.arraycopy(written, 0, versions, start, written.length);
      }));
    }
    RuntimeException failed = null;
    for (java.util.concurrent.Future<?> f : chunks) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw io.grpc.Status.CANCELLED.withDescription("interrupted while a batch's transactions ran").asRuntimeException();
      } catch (java.util.concurrent.ExecutionException e) {
        failed = failed != null ? failed : e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
      }
    }
    if (failed != null) {
      throw failed; // once every transaction has ended: none still writes when the caller hears of the failure
    }
    return versions;
  }

  /** {@link #transact} of a write's items (retrying conflicts), its outcome as versions or a status. */
  private long[] written(List<TxnItem> items, byte[] writeId) {
    TxnOutcome o = transact(items, writeId == null ? new byte[0] : writeId, 0, true);
    switch (o.status()) {
      case COMMITTED:
        return o.versions();
      case CANCELLED: {
        TxnOutcome.Cancellation c = o.cancellations().get(0);
        throw Errors.versionMismatch("item " + c.item() + ": expected version " + items.get(c.item()).expectedVersion() + ", found "
            + c.currentVersion(), c.currentVersion());
      }
      case ABORTED:
        throw io.grpc.Status.ABORTED.withDescription("the write of a globally indexed row met a conflict: retry (" + o.message() + ")")
            .asRuntimeException();
      default:
        throw io.grpc.Status.UNAVAILABLE.withDescription("the outcome of the indexed write is not known yet (" + o + "): retry with the same"
            + " write id").asRuntimeException();
    }
  }

  /**
   * The items that write {@code asked} and the entries of the global indexes of their tables, by
   * {@code map}: each row written on condition that it still holds what was read now, and {@code
   * strengthened} marks the items whose condition is this plan's, not the caller's.
   */
  private record Planned(List<TxnItem> items, boolean[] strengthened, List<Integer> rows) {}

  private Planned plan(ShardMap map, List<TxnItem> asked) {
    List<Integer> rows = new ArrayList<>();
    List<TableKey> keys = new ArrayList<>();
    for (int i = 0; i < asked.size(); i++) {
      TxnItem item = asked.get(i);
      Table t = map.table(item.table()).orElse(null);
      if (t != null && indexed(t) && item.op() != TxnItem.Op.CHECK) {
        rows.add(i);
        keys.add(new TableKey(item.table(), item.key()));
      }
    }
    List<TxnItem> items = new ArrayList<>(asked);
    boolean[] strengthened = new boolean[asked.size()];
    if (rows.isEmpty()) {
      return new Planned(items, strengthened, rows);
    }
    List<Participants.Read> now = read(keys);
    for (int r = 0; r < rows.size(); r++) {
      int i = rows.get(r);
      TxnItem item = asked.get(i);
      Participants.Read read = now.get(r);
      long held = read.value() == null ? TxnItem.ABSENT : read.version();
      if (item.expectedVersion() == TxnItem.ANY || (item.expectedVersion() == TxnItem.EXISTS && read.value() != null)) {
        items.set(i, item.onlyIf(held)); // the entries below are those of what was read: only if it is still there
        strengthened[i] = true;
      } // else the caller's condition pins what the row holds, or fails
      Table t = map.table(item.table()).orElseThrow();
      for (IndexDef index : t.syncIndexes()) {
        byte[] before = value(index, read.value());
        byte[] after = item.op() == TxnItem.Op.PUT ? checked(index, item.value()) : null;
        byte[] coveredBefore = before == null ? null : covered(index, read.value());
        byte[] coveredAfter = after == null ? null : covered(index, item.value());
        if (Arrays.equals(before, after) && Arrays.equals(coveredBefore, coveredAfter)) {
          continue; // the same entry (a covering index's: holding the same fields)
        }
        String indexTable = index.globalTable(t.name());
        if (before != null && !Arrays.equals(before, after)) {
          items.add(TxnItem.delete(indexTable, entry(before, item.key())));
        }
        if (after != null) {
          items.add(TxnItem.put(indexTable, entry(after, item.key()), coveredAfter));
        }
      }
    }
    if (items.size() > Transactions.MAX_ITEMS) {
      throw new IllegalArgumentException("with the entries of its global indexes, this write is " + items.size() + " items of a transaction;"
          + " the limit is " + Transactions.MAX_ITEMS + ": write fewer rows at once");
    }
    return new Planned(items, strengthened, rows);
  }

  /**
   * What the rows at {@code keys} hold now, each read at its leader (one round: each row's write is
   * conditioned on the version read, so the reads need not be of one moment).
   */
  private List<Participants.Read> read(List<TableKey> keys) {
    java.util.Map<String, List<Integer>> byTable = new java.util.LinkedHashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      byTable.computeIfAbsent(keys.get(i).table(), t -> new ArrayList<>()).add(i);
    }
    Participants.Read[] out = new Participants.Read[keys.size()];
    for (java.util.Map.Entry<String, List<Integer>> t : byTable.entrySet()) {
      List<Key> rows = new ArrayList<>();
      t.getValue().forEach(i -> rows.add(keys.get(i).key()));
      List<GetResponse> got = cluster.get(t.getKey(), rows);
      for (int j = 0; j < rows.size(); j++) {
        GetResponse g = got.get(j);
        out[t.getValue().get(j)] = g.getFound() ? new Participants.Read(g.getValue().toByteArray(), g.getVersion())
            : new Participants.Read(null, 0);
      }
    }
    return List.of(out);
  }

  /** The entry of {@code row} under the encoded value {@code value}. */
  public static Key entry(byte[] value, Key row) {
    return Key.of(value, row.encode());
  }

  /** The encoded value of {@code index}'s field in {@code document} (null: absent, not a value, or no document). */
  static byte[] value(IndexDef index, byte[] document) {
    if (document == null) {
      return null;
    }
    try {
      return Documents.indexValues(document, List.of(index.path()))[0];
    } catch (Documents.NotADocumentException e) {
      return null;
    }
  }

  /**
   * Refuses {@code document} if a global index of {@code table} kept asynchronously could not index
   * it (a value longer than {@link #MAX_VALUE_BYTES}): such a write commits before its entry is
   * written, so it is refused before anything is written (a sync index refuses it as it plans).
   *
   * @param what names the value in the refusal ("entry 3")
   */
  public static void checkIndexable(Table table, byte[] document, String what) {
    List<IndexDef> async = table.asyncIndexes();
    if (async.isEmpty()) {
      return;
    }
    byte[][] values;
    try {
      values = Documents.indexValues(document, async.stream().map(IndexDef::path).toList()); // one pass for them all
    } catch (Documents.NotADocumentException e) {
      return; // refused as not a document by the caller's check
    }
    for (int i = 0; i < values.length; i++) {
      if (values[i] != null && values[i].length > MAX_VALUE_BYTES) {
        throw Errors.limit(what + ": field " + async.get(i).field() + " is " + values[i].length + " bytes encoded; a globally indexed value"
            + " is at most " + MAX_VALUE_BYTES + " bytes; nothing was written");
      }
    }
  }

  /**
   * What {@code index}'s entry of the row holding {@code document} holds: the covered fields (the
   * indexed one and those of {@link IndexDef#covering}) as a JSON document; {@code null} for an
   * index covering none, whose entries are empty.
   */
  static byte[] covered(IndexDef index, byte[] document) {
    if (index.covering().isEmpty() || document == null) {
      return null;
    }
    return Documents.project(document, index.projected());
  }

  /** {@link #value}, refused if longer than {@link #MAX_VALUE_BYTES}. */
  private static byte[] checked(IndexDef index, byte[] document) {
    byte[] v = value(index, document);
    if (v != null && v.length > MAX_VALUE_BYTES) {
      throw Errors.limit("field " + index.field() + " is " + v.length + " bytes encoded; a globally indexed value is at most "
          + MAX_VALUE_BYTES + " bytes");
    }
    return v;
  }

  /** The token of attempt {@code attempt}: the caller's for the first, then derived from it (a retry of the caller's walks them again). */
  private static byte[] attemptToken(byte[] token, int attempt) {
    if (attempt == 0 || token.length == 0) {
      return token;
    }
    byte[] h = com.google.common.hash.Hashing.murmur3_128().hashBytes(token).asBytes();
    return java.nio.ByteBuffer.allocate(h.length + 4).put(h).putInt(attempt).array();
  }

  // ------------------------------------------------------------------ backfill

  /**
   * Writes the entry of every row {@code table} holds into {@code index}'s table, each batch of rows
   * in a transaction that checks they are unchanged (one changed since it was read was indexed by its
   * own write, and is read again). Returns the rows indexed.
   *
   * @throws IllegalStateException if a row's value is too long to index (the index cannot be built)
   */
  public long backfill(Table table, IndexDef index) {
    String indexTable = index.globalTable(table.name());
    java.util.concurrent.atomic.AtomicLong progress = new java.util.concurrent.atomic.AtomicLong();
    backfilled.put(index.id(), progress);
    long rows = 0;
    ByteString token = ByteString.EMPTY;
    do {
      ScanResponse page = cluster.scan(ScanRequest.newBuilder().setTable(table.name()).setAll(true).setLimit(SCAN_PAGE)
          .setPageToken(token).build());
      List<KeyValue> batch = new ArrayList<>();
      for (KeyValue row : page.getRowsList()) {
        batch.add(row);
        if (batch.size() == BACKFILL_ROWS) {
          rows += backfillBatch(table, index, indexTable, batch);
          progress.set(rows);
          batch.clear();
        }
      }
      if (!batch.isEmpty()) {
        rows += backfillBatch(table, index, indexTable, batch);
        progress.set(rows);
      }
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    return rows;
  }

  /** Rows the last backfill of {@code indexId} run here indexed (so far, if it runs still); 0 if none ran here. */
  public long backfilled(long indexId) {
    java.util.concurrent.atomic.AtomicLong n = backfilled.get(indexId);
    return n == null ? 0 : n.get();
  }

  private long backfillBatch(Table table, IndexDef index, String indexTable, List<KeyValue> rows) {
    if (index.async()) {
      return reconcileBatch(table, index, rows);
    }
    List<KeyValue> current = rows;
    for (int attempt = 0; attempt < PLAN_ATTEMPTS; attempt++) {
      List<TxnItem> items = new ArrayList<>();
      for (KeyValue row : current) {
        Key key = Key.of(row.getKey().getPartitionKey().toByteArray(), row.getKey().getSortKey().toByteArray());
        items.add(TxnItem.check(table.name(), key, row.getVersion()));
        byte[] v = value(index, row.getValue().toByteArray());
        if (v != null && v.length > MAX_VALUE_BYTES) {
          throw new IllegalStateException("row " + key + " of table " + table.name() + " holds a value of " + index.field() + " of " + v.length
              + " bytes encoded; a globally indexed value is at most " + MAX_VALUE_BYTES + " bytes");
        }
        if (v != null) {
          items.add(TxnItem.put(indexTable, entry(v, key), covered(index, row.getValue().toByteArray())));
        }
      }
      if (current.isEmpty()) {
        return 0;
      }
      TxnOutcome o = txns.transact(items, new byte[0], 0, new Transactions.Planning(cluster.map().epoch(), null, false));
      if (o.committed()) {
        return current.size();
      }
      if (o.status() == TxnOutcome.Status.ABORTED) {
        long epoch = GlobalIndexFence.replanEpoch(o.message());
        if (epoch > 0) {
          cluster.awaitMap(epoch);
        }
      }
      // Some row changed (or the transaction met a conflict): read the rows again; the absent ones need no entry.
      List<Key> keys = new ArrayList<>();
      current.forEach(r -> keys.add(Key.of(r.getKey().getPartitionKey().toByteArray(), r.getKey().getSortKey().toByteArray())));
      List<GetResponse> now = cluster.get(table.name(), keys);
      List<KeyValue> next = new ArrayList<>();
      for (int i = 0; i < current.size(); i++) {
        if (now.get(i).getFound()) {
          next.add(current.get(i).toBuilder().setValue(now.get(i).getValue()).setVersion(now.get(i).getVersion()).build());
        }
      }
      current = next;
    }
    throw new IllegalStateException("rows of table " + table.name() + " kept changing while they were indexed; the backfill tries again");
  }

  /**
   * The backfill of an async index: {@code rows} (a scan's) reconciled ({@link Reconcile}), a row
   * whose reconcile did not commit read again. Rows written meanwhile are reconciled through their
   * markers as well: twice costs work only. Returns the rows indexed.
   */
  private long reconcileBatch(Table table, IndexDef index, List<KeyValue> rows) {
    List<Reconcile.RowNow> current = new ArrayList<>(rows.size());
    for (KeyValue row : rows) {
      byte[] doc = row.getValue().toByteArray();
      byte[] v = value(index, doc);
      Key key = Key.of(row.getKey().getPartitionKey().toByteArray(), row.getKey().getSortKey().toByteArray());
      if (v != null && v.length > MAX_VALUE_BYTES) {
        throw new IllegalStateException("row " + key + " of table " + table.name() + " holds a value of " + index.field() + " of " + v.length
            + " bytes encoded; a globally indexed value is at most " + MAX_VALUE_BYTES + " bytes");
      }
      current.add(new Reconcile.RowNow(key, doc, row.getVersion()));
    }
    for (int attempt = 0; attempt < PLAN_ATTEMPTS && !current.isEmpty(); attempt++) {
      boolean[] done = reconcile.run(table, current, index);
      List<Key> again = new ArrayList<>();
      for (int i = 0; i < current.size(); i++) {
        if (!done[i]) {
          again.add(current.get(i).key());
        }
      }
      if (again.isEmpty()) {
        return rows.size();
      }
      List<GetResponse> now = cluster.get(table.name(), again);
      List<Reconcile.RowNow> next = new ArrayList<>(again.size());
      for (int i = 0; i < again.size(); i++) {
        GetResponse g = now.get(i);
        next.add(new Reconcile.RowNow(again.get(i), g.getFound() ? g.getValue().toByteArray() : null, g.getVersion()));
      }
      current = next;
    }
    throw new IllegalStateException("rows of table " + table.name() + " kept changing while they were indexed; the backfill tries again");
  }

  // ------------------------------------------------------------------ queries

  /** A page token of a query through global indexes: this byte, then the encoded key of the page's last row. */
  private static final byte TOKEN = 3;

  /**
   * Answers {@code where} over {@code table} through the global indexes of {@code plan}: each
   * probe's posting list read from its index's shards, the rows they name fetched from their shards
   * by key (in key order, from the page token on), each checked against the whole condition.
   */
  public QueryResponse.Builder query(Table table, IndexPlan plan, Where where, int limit, byte[] pageToken, boolean consistent,
      long deadlineMillis, List<List<String>> fields) {
    byte[] after = afterKey(pageToken);
    TreeSet<byte[]> candidates = new TreeSet<>(Arrays::compareUnsigned);
    QueryPlan.Builder out = QueryPlan.newBuilder().setAccess("index").setIndex(plan.describe());
    // Answered from the entries alone when every index read covers the fields asked and those the condition reads.
    Set<List<String>> needed = new java.util.LinkedHashSet<>(fields);
    needed.addAll(where.paths());
    boolean covered = !fields.isEmpty() && plan.probes().stream().allMatch(p -> p.index().covers(needed)
        && p.intersect().stream().allMatch(q -> q.index().covers(needed)));
    boolean async = plan.probes().stream().anyMatch(p -> p.index().async() || p.intersect().stream().anyMatch(q -> q.index().async()));
    if (async && consistent) {
      long started = System.nanoTime();
      cluster.awaitReconciled(table, deadlineMillis);
      out.setConsistentWaitMicros(java.util.concurrent.TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - started));
    }
    out.setStalePossible(async && !consistent);
    Tally tally = new Tally();
    for (IndexPlan.Probe probe : plan.probes()) {
      for (byte[] k : probeRows(table, probe, out, tally)) {
        if (after == null || Arrays.compareUnsigned(k, after) > 0) {
          candidates.add(k);
        }
      }
    }
    long entries = tally.entries;
    long bytes = tally.bytes;
    Set<Long> indexShards = tally.indexShards;
    List<KeyValue> rows = new ArrayList<>();
    Set<Long> dataShards = new HashSet<>();
    long fetched = 0;
    boolean truncated = false;
    List<byte[]> pending = new ArrayList<>(candidates);
    if (covered) {
      for (byte[] k : pending) {
        byte[] doc = tally.covered.get(ByteString.copyFrom(k));
        if (doc == null || !Documents.matches(doc, where)) {
          continue; // a number's double in the entry rounded: the fields decide
        }
        if (rows.size() == limit) {
          truncated = true;
          break;
        }
        Key key = Key.decode(k);
        rows.add(KeyValue.newBuilder().setKey(io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(key.partitionKey()))
            .setSortKey(ByteString.copyFrom(key.sortKey()))).setValue(ByteString.copyFrom(doc)).build()); // version 0: not in the entry
      }
      pending = List.of();
      out.setCovered(true);
    }
    for (int from = 0; from < pending.size() && !truncated; from += FETCH_BATCH) {
      List<Key> keys = new ArrayList<>();
      for (byte[] k : pending.subList(from, Math.min(pending.size(), from + FETCH_BATCH))) {
        Key key = Key.decode(k);
        keys.add(key);
        dataShards.add(table.shardFor(key.partitionKey()).id().number());
      }
      List<GetResponse> got = cluster.get(table.name(), keys);
      for (int i = 0; i < keys.size(); i++) {
        GetResponse g = got.get(i);
        if (!g.getFound()) {
          continue;
        }
        fetched++;
        byte[] doc = g.getValue().toByteArray();
        bytes += keys.get(i).partitionKey().length + keys.get(i).sortKey().length + doc.length;
        if (!Documents.matches(doc, where)) {
          continue; // changed since its entry was read (or a number's double in the entry rounded): the row decides
        }
        if (rows.size() == limit) {
          truncated = true;
          break;
        }
        rows.add(KeyValue.newBuilder().setKey(io.shardwise.proto.v1.Key.newBuilder()
                .setPartitionKey(ByteString.copyFrom(keys.get(i).partitionKey())).setSortKey(ByteString.copyFrom(keys.get(i).sortKey())))
            .setValue(g.getValue()).setVersion(g.getVersion()).build());
      }
    }
    out.setShards(indexShards.size() + dataShards.size()).setIndexShards(indexShards.size()).setRowShards(dataShards.size())
        .setIndexEntries(entries).setRowsExamined(fetched).setRowsMatched(rows.size())
        .setBytesShipped(bytes);
    QueryResponse.Builder answer = QueryResponse.newBuilder().addAllRows(rows).setPlan(out).setComplete(true).setTruncated(truncated);
    if (truncated) {
      io.shardwise.proto.v1.Key last = rows.get(rows.size() - 1).getKey();
      byte[] k = Key.of(last.getPartitionKey().toByteArray(), last.getSortKey().toByteArray()).encode();
      answer.setNextPageToken(ByteString.copyFrom(java.nio.ByteBuffer.allocate(1 + k.length).put(TOKEN).put(k).array()));
    }
    return answer;
  }

  private Table indexTable(Table table, IndexDef index) {
    ShardMap map = cluster.map();
    String name = index.globalTable(table.name());
    return map.table(name).orElseThrow(() -> Errors.noSuchTable(name, map.epoch()));
  }

  private static byte[] afterKey(byte[] token) {
    if (token.length == 0) {
      return null;
    }
    if (token[0] != TOKEN || token.length < 2) {
      throw Errors.invalid("a page token of another kind (not one a query of this table through its global index gave)");
    }
    return Arrays.copyOfRange(token, 1, token.length);
  }

  /** What a query's posting lists cost: entries read, bytes shipped to the node running it, index shards asked. */
  private static final class Tally {
    long entries;
    long bytes;
    final Set<Long> indexShards = new HashSet<>();
    /** A covering index's entries: the covered fields of each row read, by encoded row key. */
    final java.util.Map<ByteString, byte[]> covered = new java.util.HashMap<>();

    void read(int n) {
      entries += n;
      if (entries > MAX_POSTINGS) {
        throw Errors.limit("the condition's index entries are more than " + MAX_POSTINGS + " (a query through global indexes reads at"
            + " most that many): narrow it, or query without the index");
      }
    }
  }

  /**
   * The rows {@code probe} names: its posting list, intersected with those of the branch's other
   * equalities ({@link IndexPlan.Probe#intersect}). The first page of each list is read; if one
   * ended in it and another did not, the shortest is shipped to each longer list's shard instead of
   * reading that list on (a read by key of each of its rows' entries under the longer list's value:
   * the seeds' "ship the shorter list to the longer one's shard"); lists that all end in their first
   * page, or all go on, are read whole and intersected here.
   */
  private List<byte[]> probeRows(Table table, IndexPlan.Probe probe, QueryPlan.Builder out, Tally tally) {
    List<IndexPlan.Probe> probes = new ArrayList<>();
    probes.add(probe);
    probes.addAll(probe.intersect());
    List<PostingList> lists = new ArrayList<>();
    for (IndexPlan.Probe p : probes) {
      PostingList list = new PostingList(indexTable(table, p.index()), p.range(), !p.index().covering().isEmpty());
      list.readPage(tally);
      lists.add(list);
    }
    PostingList shortest = null;
    for (PostingList l : lists) {
      if (l.complete() && (shortest == null || l.keys.size() < shortest.keys.size())) {
        shortest = l;
      }
    }
    boolean ship = lists.size() > 1 && shortest != null && lists.stream().anyMatch(l -> !l.complete());
    Set<ByteString> kept = null; // the rows every list names so far
    List<byte[]> order = null;
    if (ship) {
      order = shortest.keys;
      Set<ByteString> named = new HashSet<>();
      shortest.keys.forEach(k -> named.add(ByteString.copyFrom(k)));
      kept = named;
    }
    for (PostingList l : lists) {
      if (ship && l == shortest) {
        continue;
      }
      if (ship && !l.complete()) {
        kept = l.shipTo(kept, tally);
        continue;
      }
      while (!l.complete()) {
        l.readPage(tally);
      }
      if (order == null) {
        order = l.keys;
      }
      Set<ByteString> names = new HashSet<>();
      l.keys.forEach(k -> names.add(ByteString.copyFrom(k)));
      if (kept != null) {
        names.retainAll(kept);
      }
      kept = names;
    }
    for (int i = 0; i < lists.size(); i++) {
      PostingList l = lists.get(i);
      out.addIndexProbes(probes.get(i).describe() + (i == 0 ? "" : " (intersected)") + (l.shipped < 0 ? ""
          : ": " + shortest.keys.size() + " rows of the shortest list shipped to its shard, " + l.kept + " kept"));
      out.addIndexProbeEntries(l.keys.size());
    }
    if (lists.size() == 1) {
      return order;
    }
    List<byte[]> rows = new ArrayList<>();
    for (byte[] k : order) {
      if (kept.contains(ByteString.copyFrom(k))) {
        rows.add(k);
      }
    }
    return rows;
  }

  /** A probe's posting list as read so far, page by page: the encoded keys of the rows it names. */
  private final class PostingList {
    private final Table table;
    private final IndexValues.Range range;
    private final byte[] end;
    private final ScanRequest.Builder scan;
    private final boolean covering;
    private final List<byte[]> keys = new ArrayList<>();
    private ByteString token = ByteString.EMPTY;
    private boolean started;
    /** Rows shipped to this list's shard (-1: none) and those it kept. */
    private long shipped = -1;
    private long kept;

    PostingList(Table table, IndexValues.Range range, boolean covering) {
      this.table = table;
      this.range = range;
      this.covering = covering;
      this.end = range.endKey(new byte[0]);
      this.scan = ScanRequest.newBuilder().setTable(table.name()).setLimit(SCAN_PAGE);
      if (equality()) {
        scan.setPartition(io.shardwise.proto.v1.Partition.newBuilder().setPartitionKey(ByteString.copyFrom(range.low())));
      } else if (table.layout().strategy() == io.shardwise.core.partition.Strategy.RANGE) {
        scan.setPartitionRange(io.shardwise.proto.v1.PartitionRange.newBuilder().setFrom(ByteString.copyFrom(range.low()))
            .setTo(ByteString.copyFrom(end)).setHasTo(true));
      } else {
        scan.setAll(true); // values are hashed over the index's shards: every shard holds some of the range
      }
    }

    private boolean equality() {
      return range.highInclusive() && Arrays.equals(range.low(), range.high());
    }

    boolean complete() {
      return started && token.isEmpty();
    }

    void readPage(Tally tally) {
      if (!started) {
        started = true;
        if (equality()) {
          tally.indexShards.add(table.shardFor(range.low()).id().number());
        } else if (table.layout().strategy() == io.shardwise.core.partition.Strategy.RANGE) {
          var span = table.layout().shardsFor(io.shardwise.core.key.KeyRange.of(range.low(), end));
          for (int p = span.first(); p <= span.last(); p++) {
            tally.indexShards.add(table.shards().get(p).id().number());
          }
        } else {
          table.shards().forEach(s -> tally.indexShards.add(s.id().number()));
        }
      }
      ScanResponse page = cluster.scan(scan.setPageToken(token).build());
      int n = 0;
      for (KeyValue e : page.getRowsList()) {
        byte[] value = e.getKey().getPartitionKey().toByteArray();
        tally.bytes += value.length + e.getKey().getSortKey().size();
        if (Arrays.compareUnsigned(value, range.low()) >= 0 && Arrays.compareUnsigned(value, end) < 0) {
          keys.add(e.getKey().getSortKey().toByteArray());
          n++;
          if (covering) {
            tally.bytes += e.getValue().size();
            tally.covered.putIfAbsent(e.getKey().getSortKey(), e.getValue().toByteArray());
          }
        }
      }
      tally.read(n);
      token = page.getNextPageToken();
    }

    /** Of {@code rows} (encoded row keys), those this list (an equality) names: asked of its one shard by key. */
    Set<ByteString> shipTo(Set<ByteString> rows, Tally tally) {
      List<Key> entries = new ArrayList<>(rows.size());
      List<ByteString> names = new ArrayList<>(rows);
      for (ByteString row : names) {
        Key entry = Key.of(range.low(), row.toByteArray());
        entries.add(entry);
        tally.bytes += range.low().length + row.size(); // shipped there; each answer is a flag
      }
      Set<ByteString> out = new HashSet<>();
      for (int from = 0; from < entries.size(); from += SCAN_PAGE) {
        List<GetResponse> got = cluster.get(table.name(), entries.subList(from, Math.min(entries.size(), from + SCAN_PAGE)));
        for (int i = 0; i < got.size(); i++) {
          if (got.get(i).getFound()) {
            out.add(names.get(from + i));
            if (covering) {
              tally.covered.putIfAbsent(names.get(from + i), got.get(i).getValue().toByteArray());
            }
          }
        }
      }
      shipped = rows.size();
      kept = out.size();
      return out;
    }
  }

  // ------------------------------------------------------------------ the checker

  /** An index compared with its table's rows: entries a row calls for and missing, and entries no row calls for. */
  public record Check(IndexDef index, long rows, long entries, long missing, long extra) {}

  /**
   * The consistency checker of a global index: every row of {@code table} read, the entries they
   * call for compared with every entry of the index's table. Exact only when no write runs meanwhile.
   */
  public Check check(Table table, IndexDef index) {
    Set<ByteString> expected = new HashSet<>();
    java.util.Map<ByteString, ByteString> reverse = new java.util.HashMap<>(); // an async index: row → the value its reverse entry must hold
    java.util.Map<ByteString, ByteString> coveredFields = new java.util.HashMap<>(); // a covering index: entry → the fields it must hold
    long rows = 0;
    ByteString token = ByteString.EMPTY;
    do {
      ScanResponse page = cluster.scan(ScanRequest.newBuilder().setTable(table.name()).setAll(true).setLimit(SCAN_PAGE).setPageToken(token)
          .build());
      for (KeyValue row : page.getRowsList()) {
        rows++;
        byte[] v = value(index, row.getValue().toByteArray());
        if (v != null) {
          Key key = Key.of(row.getKey().getPartitionKey().toByteArray(), row.getKey().getSortKey().toByteArray());
          ByteString k = ByteString.copyFrom(entry(v, key).encode());
          expected.add(k);
          byte[] fields = covered(index, row.getValue().toByteArray());
          if (fields != null) {
            coveredFields.put(k, ByteString.copyFrom(fields));
          }
          if (index.async()) {
            reverse.put(ByteString.copyFrom(Reconcile.reverseKey(key).encode()), ByteString.copyFrom(Reconcile.reversePayload(v, fields)));
          }
        }
      }
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    long entries = 0;
    long extra = 0;
    Set<ByteString> seen = new HashSet<>();
    token = ByteString.EMPTY;
    do {
      ScanResponse page = cluster.scan(ScanRequest.newBuilder().setTable(index.globalTable(table.name())).setAll(true).setLimit(SCAN_PAGE)
          .setPageToken(token).build());
      for (KeyValue e : page.getRowsList()) {
        ByteString k = ByteString.copyFrom(Key.of(e.getKey().getPartitionKey().toByteArray(), e.getKey().getSortKey().toByteArray()).encode());
        if (Reconcile.isReverse(e.getKey().getPartitionKey().toByteArray())) {
          ByteString want = reverse.remove(k);
          if (want == null || !want.equals(e.getValue())) {
            extra++; // a reverse entry no row calls for, or one that says another value
          }
          continue;
        }
        entries++;
        seen.add(k);
        ByteString fields = coveredFields.get(k);
        if (!expected.contains(k) || (fields != null && !fields.equals(e.getValue()))) {
          extra++; // no row calls for it, or it holds other fields than its row's
        }
      }
      token = page.getNextPageToken();
    } while (!token.isEmpty());
    long missing = expected.stream().filter(k -> !seen.contains(k)).count() + reverse.size();
    if (missing > 0 || extra > 0) {
      LOG.warn("global index {} of table {}: {} entries missing, {} extra ({} rows, {} entries)", index.field(), table.name(), missing, extra,
          rows, entries);
    }
    return new Check(index, rows, entries, missing, extra);
  }
}
