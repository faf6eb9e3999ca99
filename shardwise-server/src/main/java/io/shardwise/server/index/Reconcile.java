package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.Table;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.server.txn.Transactions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves rows' entries in their table's asynchronous global indexes to the rows' current values.
 *
 * <p>Each row has, in each async index's table, beside its entry, a <b>reverse entry</b>: partition
 * key {@code 0xFF} + the row's encoded key (no value's encoding starts with 0xFF, so no posting list
 * holds it; each row its own partition, so they spread over the index's shards), value the
 * encoded value the row is indexed under. The reverse entry and the entry are only ever written
 * together, so "the reverse entry says X" means "the row's only entry is X's".
 *
 * <p>To reconcile a row: read it (at its leader), then its reverse entries; where one differs from
 * the row's value, one transaction [check the row is still at the version read; delete the old
 * entry; put the new one; set the reverse entry on condition it is still what was read]. A row
 * that changed, or a reconcile of the same row that committed first, cancels the transaction and
 * nothing is written: the row stays pending and is read again. Where the reverse entry already
 * says the row's value, nothing is written: the row was read before its reverse entry, and a
 * reverse entry only changes to its row's value at some version, so the index shows the row at
 * least as of the version read. A covering index's reverse entry holds the covered fields too, so
 * a change of one of them is reconciled like a change of the value.
 *
 * <p>The check on the row is what lets a marker be cleared: without it, a reconcile that read the
 * row at an older version (value Q) could commit after another reconcile had found the row at its
 * newest version (value Z, the reverse entry already Z from before Q) and cleared the marker —
 * its condition on the reverse entry still holds — and leave Q for good.
 *
 * <p>So reconciling is idempotent and needs no order: rows reconciled twice, late, by two leaders at
 * once or out of order cost work, never an entry. Thread-safe; blocks while shards answer.
 */
final class Reconcile {

  private static final Logger LOG = LoggerFactory.getLogger(Reconcile.class);
  private static final byte REVERSE = (byte) 0xff;
  private static final byte[] EMPTY = new byte[0];

  /** A row as read at its leader: its document ({@code null}: absent) and the version it was read at. */
  record RowNow(Key key, byte[] document, long version) {
    boolean found() {
      return document != null;
    }
  }

  private final GlobalIndexes.Cluster cluster;
  private final Transactions txns;

  Reconcile(GlobalIndexes.Cluster cluster, Transactions txns) {
    this.cluster = cluster;
    this.txns = txns;
  }

  /** The reverse entry of {@code row} in an async index's table. */
  static Key reverseKey(Key row) {
    byte[] encoded = row.encode();
    byte[] partition = new byte[encoded.length + 1];
    partition[0] = REVERSE;
    System.arraycopy(encoded, 0, partition, 1, encoded.length);
    return Key.of(partition, EMPTY);
  }

  /**
   * What a reverse entry holds: the value the row is indexed under; for a covering index also the
   * fields its entry holds ({@code [value's length: 4][value][fields]}), so a change of a covered
   * field alone is a change to reconcile too.
   */
  static byte[] reversePayload(byte[] value, byte[] fields) {
    if (fields == null) {
      return value;
    }
    return java.nio.ByteBuffer.allocate(4 + value.length + fields.length).putInt(value.length).put(value).put(fields).array();
  }

  /** The value a reverse entry of {@code index} ({@link #reversePayload}) says its row is indexed under. */
  static byte[] valueOf(IndexDef index, byte[] payload) {
    if (index.covering().isEmpty()) {
      return payload;
    }
    int n = java.nio.ByteBuffer.wrap(payload).getInt();
    return Arrays.copyOfRange(payload, 4, 4 + n);
  }

  /** True if an index table's entry with this partition key is a reverse entry (not a value's). */
  static boolean isReverse(byte[] partitionKey) {
    return partitionKey.length > 0 && partitionKey[0] == REVERSE;
  }

  /**
   * Reconciles {@code rows} of {@code table} with each of its async indexes ({@code only}: one of
   * them; null: all). Returns, per row, whether its entries now show it as read — false for a row
   * whose transaction did not commit (it changed, or met a conflict): read it again later.
   */
  boolean[] run(Table table, List<RowNow> rows, IndexDef only) {
    List<IndexDef> indexes = only != null ? List.of(only) : table.asyncIndexes();
    boolean[] done = new boolean[rows.size()];
    if (rows.isEmpty()) {
      return done;
    }
    List<Key> reverse = new ArrayList<>(rows.size());
    rows.forEach(r -> reverse.add(reverseKey(r.key())));
    List<List<GetResponse>> held = new ArrayList<>(indexes.size());
    for (IndexDef index : indexes) {
      held.add(cluster.get(index.globalTable(table.name()), reverse));
    }
    List<List<TxnItem>> perRow = new ArrayList<>(rows.size());
    for (int r = 0; r < rows.size(); r++) {
      RowNow row = rows.get(r);
      List<TxnItem> items = new ArrayList<>();
      for (int x = 0; x < indexes.size(); x++) {
        IndexDef index = indexes.get(x);
        String indexTable = index.globalTable(table.name());
        GetResponse rev = held.get(x).get(r);
        byte[] havePayload = rev.getFound() ? rev.getValue().toByteArray() : null;
        byte[] want = indexable(table, index, row);
        byte[] fields = want == null ? null : GlobalIndexes.covered(index, row.document());
        byte[] wantPayload = want == null ? null : reversePayload(want, fields);
        if (Arrays.equals(havePayload, wantPayload)) {
          continue;
        }
        byte[] have = havePayload == null ? null : valueOf(index, havePayload);
        if (have != null && !Arrays.equals(have, want)) {
          items.add(TxnItem.delete(indexTable, GlobalIndexes.entry(have, row.key())));
        }
        if (want != null) {
          items.add(TxnItem.put(indexTable, GlobalIndexes.entry(want, row.key()), fields == null ? EMPTY : fields));
          items.add(TxnItem.put(indexTable, reverse.get(r), wantPayload).onlyIf(rev.getFound() ? rev.getVersion() : TxnItem.ABSENT));
        } else {
          items.add(TxnItem.delete(indexTable, reverse.get(r)).onlyIf(rev.getVersion()));
        }
      }
      if (items.isEmpty()) {
        done[r] = true; // its reverse entries say its value already
      } else {
        items.add(0, TxnItem.check(table.name(), row.key(), row.found() ? row.version() : TxnItem.ABSENT));
      }
      perRow.add(items);
    }
    commit(table, perRow, done);
    return done;
  }

  /** Commits the rows' items, as many rows a transaction as fit; marks the rows of each committed one done. */
  private void commit(Table table, List<List<TxnItem>> perRow, boolean[] done) {
    List<TxnItem> items = new ArrayList<>();
    List<Integer> members = new ArrayList<>();
    for (int r = 0; r <= perRow.size(); r++) {
      List<TxnItem> next = r < perRow.size() ? perRow.get(r) : List.of();
      boolean last = r == perRow.size();
      if (!members.isEmpty() && (last || items.size() + next.size() > Transactions.MAX_ITEMS)) {
        TxnOutcome o = txns.transact(items, EMPTY, 0, new Transactions.Planning(cluster.map().epoch(), null, table.newestSyncIndex() == 0));
        if (o.committed()) {
          members.forEach(m -> done[m] = true);
        } else if (o.status() == TxnOutcome.Status.ABORTED) {
          long epoch = GlobalIndexFence.replanEpoch(o.message());
          if (epoch > 0) {
            cluster.awaitMap(epoch);
          }
        }
        items = new ArrayList<>();
        members = new ArrayList<>();
      }
      if (!last && !next.isEmpty()) {
        items.addAll(next);
        members.add(r);
      }
    }
  }

  /** The encoded value {@code row} is indexed under by {@code index} (null: none — absent, not a value, or too long to index). */
  private static byte[] indexable(Table table, IndexDef index, RowNow row) {
    byte[] v = GlobalIndexes.value(index, row.document());
    if (v != null && v.length > GlobalIndexes.MAX_VALUE_BYTES) {
      // Writes of such values are refused; one written before the index existed stops its backfill.
      LOG.warn("row {} of table {}: its {} is {} bytes encoded, more than a global index takes ({}): not indexed", row.key(), table.name(),
          index.field(), v.length, GlobalIndexes.MAX_VALUE_BYTES);
      return null;
    }
    return v;
  }
}
