package io.shardwise.client;

import io.shardwise.core.key.Key;

/** A row as a scan returns it: its key, its value and the value's version. */
public record KeyValue(Key key, byte[] value, long version) {

  /** The value as UTF-8 text (for values written as text). */
  public String valueAsString() {
    return new String(value, java.nio.charset.StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return key + " v" + version + " (" + value.length + " bytes)";
  }
}
