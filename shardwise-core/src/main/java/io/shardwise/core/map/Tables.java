package io.shardwise.core.map;

import java.util.regex.Pattern;

/** Table-name rules, shared by every type and service that names a table. Stateless. */
public final class Tables {

  private static final Pattern VALID = Pattern.compile("[A-Za-z][A-Za-z0-9_-]{0,63}");

  private Tables() {}

  /** Returns {@code name}, or throws naming the rule it breaks. */
  public static String checkName(String name) {
    if (name == null || !VALID.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "table name '" + name + "' must start with a letter and be 1 to 64 characters of A-Z a-z 0-9 _ -");
    }
    return name;
  }
}
