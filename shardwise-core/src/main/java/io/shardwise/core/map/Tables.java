package io.shardwise.core.map;

/** Table-name rules, shared by every type and service that names a table. Stateless. */
public final class Tables {

  /** The longest table name a user gives. */
  public static final int MAX_NAME_LENGTH = 64;

  /** The longest name of a global index's table: its table's name, a dot, the indexed field's path. */
  public static final int MAX_INDEX_TABLE_NAME_LENGTH = 256;

  private Tables() {}

  /**
   * Returns {@code name}, or throws naming the rule it breaks: a letter, then up to 63 of A-Z a-z
   * 0-9 _ -. A plain loop, not a regular expression: every shard id checks its table's name, and
   * a map of 100,000 shards is rebuilt on every change.
   */
  public static String checkName(String name) {
    if (!valid(name) && !indexTable(name)) {
      throw new IllegalArgumentException(
          "table name '" + name + "' must start with a letter and be 1 to 64 characters of A-Z a-z 0-9 _ -");
    }
    return name;
  }

  /**
   * Returns {@code name} if a user may create, write or drop a table of that name (a global index's
   * table, {@code orders.color}, is made and written by its index only), else throws naming the rule.
   */
  public static String checkUserName(String name) {
    if (indexTable(name)) {
      throw new IllegalArgumentException("'" + name + "' names a global index's table (table.field): it is written by its index only");
    }
    return checkName(name);
  }

  /**
   * True for the name of a global index's table: the indexed table's name, a dot, and the field's
   * path (names of letters, digits and _ joined by dots), at most {@value #MAX_INDEX_TABLE_NAME_LENGTH}
   * characters. No user table has a dot in its name, so no user table can take such a name.
   */
  public static boolean indexTable(String name) {
    if (name == null || name.length() > MAX_INDEX_TABLE_NAME_LENGTH) {
      return false;
    }
    int dot = name.indexOf('.');
    if (dot < 0 || !valid(name.substring(0, dot))) {
      return false;
    }
    for (String part : name.substring(dot + 1).split("\\.", -1)) {
      if (part.isEmpty() || !(letter(part.charAt(0)) || part.charAt(0) == '_')) {
        return false;
      }
      for (int i = 1; i < part.length(); i++) {
        char c = part.charAt(i);
        if (!letter(c) && !(c >= '0' && c <= '9') && c != '_') {
          return false;
        }
      }
    }
    return true;
  }

  /** The indexed table of a global index's table ({@code orders} of {@code orders.color}). */
  public static String indexedTable(String indexTableName) {
    return indexTableName.substring(0, indexTableName.indexOf('.'));
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
