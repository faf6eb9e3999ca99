package io.shardwise.core.txn;

import io.shardwise.core.key.Key;
import java.util.Objects;

/** A key of a table: what a read transaction names, and what a transaction's record lists. */
public record TableKey(String table, Key key) {

  public TableKey {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(key, "key");
  }

  @Override
  public String toString() {
    return table + "/" + key;
  }
}
