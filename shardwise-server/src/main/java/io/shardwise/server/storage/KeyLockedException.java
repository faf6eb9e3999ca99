package io.shardwise.server.storage;

/**
 * A read or a write met a transaction's intent on its key: nothing was read or written. The caller
 * resolves the intent (its transaction's record tells commit or abort) and tries again.
 */
public final class KeyLockedException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient ShardRef shard;
  private final byte[] key;
  private final transient Intent intent;

  public KeyLockedException(ShardRef shard, byte[] key, Intent intent) {
    super("a key of shard " + shard + " is locked by a transaction", null, false, false);
    this.shard = shard;
    this.key = key;
    this.intent = intent;
  }

  public ShardRef shard() {
    return shard;
  }

  /** The locked key, encoded. */
  public byte[] key() {
    return key;
  }

  public Intent intent() {
    return intent;
  }
}
