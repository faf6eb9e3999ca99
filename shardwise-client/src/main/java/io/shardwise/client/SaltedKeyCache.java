package io.shardwise.client;

import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.SaltedKey;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The salted keys this client knows of, asked for again once they are older than {@code maxAge}
 * (or at once, after a write was refused by a sealed sub-key). A stale list costs spread, never a
 * count: an increment sent to a key that has been salted since is counted in its total, and one
 * sent to a sub-key sealed since is refused unapplied and goes to the key.
 */
final class SaltedKeyCache {

  private final Duration maxAge;
  private final Supplier<List<SaltedKey>> fetch;
  private volatile Map<String, SaltedKey> keys = Map.of();
  private volatile long fetchedAtNanos;
  private volatile boolean fetched;

  SaltedKeyCache(Duration maxAge, Supplier<List<SaltedKey>> fetch) {
    this.maxAge = maxAge;
    this.fetch = fetch;
  }

  /** The salted key {@code key} of {@code table}, if it is one; {@code fresh}: from a list asked for now. */
  Optional<SaltedKey> lookup(String table, Key key, boolean fresh) {
    long now = System.nanoTime();
    if (fresh || !fetched || now - fetchedAtNanos > maxAge.toNanos()) {
      refresh(fresh);
    }
    return Optional.ofNullable(keys.get(name(table, key.partitionKey(), key.sortKey())));
  }

  private synchronized void refresh(boolean fresh) {
    long now = System.nanoTime();
    if (!fresh && fetched && now - fetchedAtNanos <= maxAge.toNanos()) {
      return; // another thread refreshed it meanwhile
    }
    fetchedAtNanos = now; // a failed fetch is tried again after maxAge, not by every increment meanwhile
    fetched = true;
    List<SaltedKey> listed;
    try {
      listed = fetch.get();
    } catch (RuntimeException e) {
      return; // no node answered: keep the list as it was (a stale list costs spread, never a count)
    }
    Map<String, SaltedKey> next = new HashMap<>();
    for (SaltedKey k : listed) {
      next.put(name(k.getTable(), k.getKey().getPartitionKey().toByteArray(), k.getKey().getSortKey().toByteArray()), k);
    }
    keys = next;
  }

  private static String name(String table, byte[] partitionKey, byte[] sortKey) {
    return table + "/" + java.util.HexFormat.of().formatHex(Key.of(partitionKey, sortKey).encode());
  }
}
