package io.shardwise.core.map;

/** Table-name rules, shared by every type and service that names a table. Stateless. */
public final class Tables {

  /** The longest table name. */
  public static final int MAX_NAME_LENGTH = 64;

  private Tables() {}

  /**
   * Returns {@code name}, or throws naming the rule it breaks: a letter, then up to 63 of A-Z a-z
   * 0-9 _ -. A plain loop, not a regular expression: every shard id checks its table's name, and
   * a map of 100,000 shards is rebuilt on every change.
   */
  public static String checkName(String name) {
    if (!valid(name)) {
      throw new IllegalArgumentException(
          "table name '" + name + "' must start with a letter and be 1 to 64 characters of A-Z a-z 0-9 _ -");
    }
    return name;
  }

  private static boolean valid(String name) {
    if (name == null || name.isEmpty() || name.length() > MAX_NAME_LENGTH || !letter(name.charAt(0))) {
      return false;
    }
    for (int i = 1; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-') {
        return false;
      }
    }
    return true;
  }

  private static boolean letter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  }
}
