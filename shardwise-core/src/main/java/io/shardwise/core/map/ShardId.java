package io.shardwise.core.map;

/**
 * A shard: its table and a number assigned when the shard is created and never reused within that
 * table, so a shard keeps its id when others split or merge around it.
 */
public record ShardId(String table, long number) implements Comparable<ShardId> {

  public ShardId {
    Tables.checkName(table);
    if (number < 0) {
      throw new IllegalArgumentException("shard number must not be negative, not " + number);
    }
  }

  @Override
  public int compareTo(ShardId other) {
    int c = table.compareTo(other.table);
    return c != 0 ? c : Long.compare(number, other.number);
  }

  @Override
  public String toString() {
    return table + "/" + number;
  }
}
