package io.shardwise.server.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One entry of a shard's replication log: what one write of the shard's leader did, as the stored
 * values it leaves ({@code effects}: store keys and their new stored values, {@code null} for a key
 * removed), in the order the leader gave them. A replica applies the effects as they are, so every
 * replica ends with the same bytes; nothing is evaluated twice.
 *
 * @param offset the entry's place in the log, from 1, without gaps
 * @param epoch the shard epoch of the leader that appended it (a leader's entries carry its epochs
 *     only, so an offset and an epoch name one entry in every replica's log)
 */
public record LogEntry(long offset, long epoch, List<ShardEngine.StoredValue> effects) {

  public LogEntry {
    if (offset < 1 || epoch < 1) {
      throw new IllegalArgumentException("a log entry has an offset and an epoch of at least 1, not " + offset + " and " + epoch);
    }
    effects = List.copyOf(effects);
  }

  /** Bytes the entry takes in a message or in the log, roughly. */
  public long bytes() {
    long n = 16;
    for (ShardEngine.StoredValue v : effects) {
      n += 8 + v.storeKey().length + (v.stored() == null ? 0 : v.stored().length);
    }
    return n;
  }

  /** The stored form: epoch, count, then per effect its key and its value (length -1: removed). */
  byte[] encode() {
    ByteBuffer out = ByteBuffer.allocate((int) bytes());
    out.putLong(epoch).putInt(effects.size());
    for (ShardEngine.StoredValue v : effects) {
      out.putInt(v.storeKey().length).put(v.storeKey());
      if (v.stored() == null) {
        out.putInt(-1);
      } else {
        out.putInt(v.stored().length).put(v.stored());
      }
    }
    return java.util.Arrays.copyOf(out.array(), out.position());
  }

  static LogEntry decode(long offset, byte[] stored) {
    ByteBuffer in = ByteBuffer.wrap(stored);
    long epoch = in.getLong();
    int n = in.getInt();
    List<ShardEngine.StoredValue> effects = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      byte[] key = new byte[in.getInt()];
      in.get(key);
      int length = in.getInt();
      byte[] value = null;
      if (length >= 0) {
        value = new byte[length];
        in.get(value);
      }
      effects.add(new ShardEngine.StoredValue(key, value));
    }
    return new LogEntry(offset, epoch, effects);
  }
}
