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
  private final transient Versioned committed;

  public KeyLockedException(ShardRef shard, byte[] key, Intent intent) {
    this(shard, key, intent, null);
  }

  /** A read's refusal, with the key's value beside the intent ({@code null}: absent). */
  public KeyLockedException(ShardRef shard, byte[] key, Intent intent, Versioned committed) {
    super("a key of shard " + shard + " is locked by a transaction", null, false, false);
    this.shard = shard;
    this.key = key;
    this.intent = intent;
    this.committed = committed;
  }

  /**
   * For a read: the key's value as it is beside the intent, which the transaction has not changed
   * (a transaction's writes are applied only when its intents are resolved); {@code null} if absent.
   * A reader that finds the transaction undecided may answer it.
   */
  public Versioned committed() {
    return committed;
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
