package io.shardwise.core.map;

import java.util.regex.Pattern;

/**
 * A node's stable identity in the cluster (kept across restarts with its data directory): 1 to 64
 * characters of {@code [A-Za-z0-9._-]}.
 */
public record NodeId(String value) implements Comparable<NodeId> {

  private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  public NodeId {
    if (value == null || !VALID.matcher(value).matches()) {
      throw new IllegalArgumentException("node id '" + value + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ -");
    }
  }

  public static NodeId of(String value) {
    return new NodeId(value);
  }

  @Override
  public int compareTo(NodeId other) {
    return value.compareTo(other.value);
  }

  @Override
  public String toString() {
    return value;
  }
}
