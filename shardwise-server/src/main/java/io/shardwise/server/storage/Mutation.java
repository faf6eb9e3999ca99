package io.shardwise.server.storage;

/**
 * One write of a batch: a put ({@code value != null}) or a delete ({@code value == null}) of
 * {@code key} in {@code shard}, unconditional ({@code expectedVersion == ANY}) or only at
 * {@code expectedVersion} (0: only if absent).
 */
public record Mutation(ShardRef shard, byte[] key, byte[] value, long expectedVersion) {

  public static final long ANY = -1;

  public static Mutation put(ShardRef shard, byte[] key, byte[] value) {
    return new Mutation(shard, key, value, ANY);
  }

  public static Mutation delete(ShardRef shard, byte[] key) {
    return new Mutation(shard, key, null, ANY);
  }

  public Mutation {
    if (expectedVersion < ANY) {
      throw new IllegalArgumentException("expected version must not be negative, not " + expectedVersion);
    }
  }
}
