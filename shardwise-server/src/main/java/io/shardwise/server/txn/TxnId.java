package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * A transaction's name for users: its token and where its record lies (the anchor's table and key),
 * so that a status lookup goes straight to the record. Printed as URL-safe base64.
 */
record TxnId(String table, Key anchor, byte[] token) {

  static final int MAX_TOKEN_BYTES = 64;

  @Override
  public String toString() {
    byte[] t = table.getBytes(StandardCharsets.UTF_8);
    byte[] k = anchor.encode();
    ByteBuffer out = ByteBuffer.allocate(3 * 4 + t.length + k.length + token.length);
    out.putInt(t.length).put(t).putInt(k.length).put(k).putInt(token.length).put(token);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(out.array());
  }

  /**
   * @throws IllegalArgumentException if {@code text} is not a transaction id
   */
  static TxnId parse(String text) {
    try {
      ByteBuffer in = ByteBuffer.wrap(Base64.getUrlDecoder().decode(text));
      byte[] t = new byte[in.getInt()];
      in.get(t);
      byte[] k = new byte[in.getInt()];
      in.get(k);
      byte[] token = new byte[in.getInt()];
      in.get(token);
      if (in.hasRemaining() || token.length == 0 || token.length > MAX_TOKEN_BYTES) {
        throw new IllegalArgumentException("trailing bytes or a bad token");
      }
      return new TxnId(new String(t, StandardCharsets.UTF_8), Key.decode(k), token);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a transaction id: " + text, e);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TxnId i && i.table.equals(table) && i.anchor.equals(anchor) && java.util.Arrays.equals(i.token, token);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(table, anchor, java.util.Arrays.hashCode(token));
  }
}
