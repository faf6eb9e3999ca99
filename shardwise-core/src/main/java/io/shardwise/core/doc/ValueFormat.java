package io.shardwise.core.doc;

import java.util.Locale;

/** What a table's values are: any bytes, or JSON documents (each value one JSON object, checked on every write). */
public enum ValueFormat {
  BYTES,
  JSON;

  /** {@code bytes} or {@code json} (any case). */
  public static ValueFormat parse(String name) {
    for (ValueFormat f : values()) {
      if (f.name().equalsIgnoreCase(name.strip())) {
        return f;
      }
    }
    throw new IllegalArgumentException("a value format is bytes or json, not '" + name + "'");
  }

  /** The name {@link #parse} reads: {@code bytes}, {@code json}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
