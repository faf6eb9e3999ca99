package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TableKey;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A transaction's record, kept beside its anchor key (the first item's) in the anchor's shard: the
 * one place its outcome is decided. It is written PENDING before any intent, and changes once, by a
 * compare-and-set at the anchor's shard ({@link #step}), to COMMITTED (by the coordinator) or
 * ABORTED (by the coordinator, or by anyone who finds it PENDING past its deadline). An intent is
 * resolved only as the record says, so every item follows the one decision.
 *
 * @param digest a hash of the transaction's items: a token sent again with other items is refused
 * @param keys every item's table and key, so a transaction left by a dead coordinator can be
 *     finished from its record alone
 * @param versions per item, once COMMITTED
 * @param cancelledItem the item whose condition failed (-1: none); {@code currentVersion} its key's version then
 * @param why why an ABORTED record was aborted
 */
record TxnRecord(State state, long deadlineMillis, long priority, long digest, List<TableKey> keys, long[] versions,
    int cancelledItem, long currentVersion, String why) {

  enum State { PENDING, COMMITTED, ABORTED }

  static TxnRecord pending(long deadlineMillis, long priority, long digest, List<TableKey> keys) {
    return new TxnRecord(State.PENDING, deadlineMillis, priority, digest, keys, new long[0], -1, 0, "");
  }

  TxnRecord committed(long[] itemVersions) {
    return new TxnRecord(State.COMMITTED, deadlineMillis, priority, digest, keys, itemVersions, -1, 0, "");
  }

  TxnRecord aborted(String reason) {
    return new TxnRecord(State.ABORTED, deadlineMillis, priority, digest, keys, new long[0], -1, 0, reason);
  }

  TxnRecord cancelled(int item, long version) {
    return new TxnRecord(State.ABORTED, deadlineMillis, priority, digest, keys, new long[0], item, version, "condition failed");
  }

  /**
   * The record after {@code step} at the anchor's shard, given the record there ({@code current},
   * null: none) and the one proposed, at {@code nowMillis} on the anchor's clock. Returns {@code
   * current} itself when the step leaves it (the engine then writes nothing).
   */
  static byte[] step(Participants.RecordStep step, byte[] current, byte[] proposed, long nowMillis) {
    TxnRecord now = current == null ? null : decode(current);
    switch (step) {
      case READ:
        return current;
      case BEGIN:
        return current == null ? proposed : current;
      case COMMIT:
        return now != null && now.state == State.PENDING ? proposed : current;
      case ABORT:
        return now == null || now.state == State.PENDING ? proposed : current;
      case PUSH:
        return now != null && now.state == State.PENDING && nowMillis > now.deadlineMillis ? proposed : current;
      case FORGET:
        return now != null && now.state != State.PENDING ? null : current;
      default:
        throw new IllegalArgumentException("no step " + step);
    }
  }

  byte[] encode() {
    List<byte[]> parts = new ArrayList<>();
    int size = 1 + 8 + 8 + 8 + 4 + 4 + 8 * versions.length + 4 + 8;
    for (TableKey k : keys) {
      byte[] t = k.table().getBytes(StandardCharsets.UTF_8);
      byte[] e = k.key().encode();
      parts.add(t);
      parts.add(e);
      size += 8 + t.length + e.length;
    }
    byte[] reason = why.getBytes(StandardCharsets.UTF_8);
    size += 4 + reason.length;
    ByteBuffer out = ByteBuffer.allocate(size);
    out.put((byte) state.ordinal()).putLong(deadlineMillis).putLong(priority).putLong(digest);
    out.putInt(keys.size());
    for (byte[] p : parts) {
      out.putInt(p.length).put(p);
    }
    out.putInt(versions.length);
    for (long v : versions) {
      out.putLong(v);
    }
    out.putInt(cancelledItem).putLong(currentVersion);
    out.putInt(reason.length).put(reason);
    return out.array();
  }

  static TxnRecord decode(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    State state = State.values()[in.get()];
    long deadline = in.getLong();
    long priority = in.getLong();
    long digest = in.getLong();
    int n = in.getInt();
    List<TableKey> keys = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String table = new String(bytes(in), StandardCharsets.UTF_8);
      keys.add(new TableKey(table, Key.decode(bytes(in))));
    }
    long[] versions = new long[in.getInt()];
    for (int i = 0; i < versions.length; i++) {
      versions[i] = in.getLong();
    }
    int cancelled = in.getInt();
    long current = in.getLong();
    String why = new String(bytes(in), StandardCharsets.UTF_8);
    return new TxnRecord(state, deadline, priority, digest, keys, versions, cancelled, current, why);
  }

  private static byte[] bytes(ByteBuffer in) {
    byte[] b = new byte[in.getInt()];
    in.get(b);
    return b;
  }
}
