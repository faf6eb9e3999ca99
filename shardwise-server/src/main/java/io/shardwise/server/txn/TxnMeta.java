package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * What an intent tells whoever meets it about its transaction ({@link
 * io.shardwise.server.storage.Intent#meta}): where its record lies (the anchor's table and key), its
 * priority (older is higher) and its deadline, past which anyone may abort it; and the map epoch its
 * items were planned on, which a shard checks against its tables' global indexes (an item planned
 * before an index existed lacks the index's entries: {@link Transactions.Planning}).
 */
record TxnMeta(String anchorTable, Key anchor, long priority, long deadlineMillis, long plannedEpoch) {

  TxnMeta(String anchorTable, Key anchor, long priority, long deadlineMillis) {
    this(anchorTable, anchor, priority, deadlineMillis, 0);
  }

  byte[] encode() {
    byte[] t = anchorTable.getBytes(StandardCharsets.UTF_8);
    byte[] k = anchor.encode();
    return ByteBuffer.allocate(4 + t.length + 4 + k.length + 24).putInt(t.length).put(t).putInt(k.length).put(k)
        .putLong(priority).putLong(deadlineMillis).putLong(plannedEpoch).array();
  }

  static TxnMeta decode(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    byte[] t = new byte[in.getInt()];
    in.get(t);
    byte[] k = new byte[in.getInt()];
    in.get(k);
    long priority = in.getLong();
    long deadline = in.getLong();
    return new TxnMeta(new String(t, StandardCharsets.UTF_8), Key.decode(k), priority, deadline, in.remaining() >= 8 ? in.getLong() : 0);
  }
}
