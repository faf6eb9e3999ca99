package io.shardwise.server.shard;

import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ScanPage;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.VersionMismatchException;
import io.shardwise.server.storage.Versioned;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shards this node holds, and the only way to their data for requests: every read and write
 * goes through the shard's {@link LocalShard} fence, so a node never serves a shard it has handed
 * off, and a write is never acknowledged after its shard's cutover. The {@link ShardEngine} below
 * ({@link ShardStore} in a node) is the engine only.
 *
 * <p>Shards are added and handed off by the node as it applies maps ({@link #own}, {@link
 * #handOff}), before the map becomes the one requests are routed by. Thread-safe.
 */
public final class LocalShards {

  private final ShardEngine store;
  private final ConcurrentHashMap<ShardRef, LocalShard> held = new ConcurrentHashMap<>();
  private volatile ReplicatedData replication = ReplicatedData.NONE;

  public LocalShards(ShardEngine store) {
    this.store = store;
  }

  /** The shard as this node holds it, or {@code null} if it holds no such shard. */
  public LocalShard get(ShardRef ref) {
    return held.get(ref);
  }

  /** Every shard held (served or handed off), by ref. */
  public Map<ShardRef, LocalShard> all() {
    return Map.copyOf(held);
  }

  /** The replication data path, for the shards of replicated tables (set once, at the node's start). */
  public void replicateWith(ReplicatedData replication) {
    this.replication = replication;
  }

  /** This node owns {@code ref} at {@code epoch} in a map it is about to apply. */
  public void own(ShardRef ref, long epoch) {
    own(ref, epoch, false);
  }

  /**
   * This node owns (leads) {@code ref} at {@code epoch}; {@code replicated}: its table keeps
   * replicas. A shard whose table stops keeping them stays on the log's path here until {@link
   * #stopReplicating}: its leader must step down from the log first.
   */
  public void own(ShardRef ref, long epoch, boolean replicated) {
    LocalShard s = held.computeIfAbsent(ref, r -> new LocalShard(r, epoch));
    if (replicated || !s.replicated()) {
      s.replicated(replicated);
    }
    s.own(epoch);
  }

  /**
   * Writes of {@code ref}, whose table went back to one replica, take the path without a log from
   * now on (no-op if not held). Call it once its replica no longer leads: when this returns, no
   * write on the log's path is being admitted here, and no write on the direct path began before.
   */
  public void stopReplicating(ShardRef ref) {
    LocalShard s = held.get(ref);
    if (s != null) {
      s.replicated(false);
    }
  }

  /** Whether a read of a replicated shard led here always waits for its followers ({@link ReplicatedData#leaderReadsWait}). */
  public boolean leaderReadsWait() {
    return replication.leaderReadsWait();
  }

  /** True if {@code ref} is held here and its table keeps replicas: requests for it may wait on other nodes. */
  public boolean replicated(ShardRef ref) {
    LocalShard s = held.get(ref);
    return s != null && s.replicated();
  }

  /** A map this node is about to apply gives {@code ref} to another node (no-op if not held). */
  public void handOff(ShardRef ref) {
    LocalShard s = held.get(ref);
    if (s != null) {
      s.handOff();
    }
  }

  /**
   * What applying a map changed here, in the tables that changed: the shards this node owns in
   * them, those it lost to another node, those whose table is gone (dropped, or recreated under a
   * new id), and those whose table went back to one replica (the caller flips them to the direct
   * path with {@link #stopReplicating} once their replicas stepped down).
   */
  public record MapChanges(List<ShardRef> owned, List<ShardRef> lost, List<ShardRef> droppedTables, List<ShardRef> stoppedReplicating) {}

  /**
   * Brings the local shards in line with {@code next}, a map newer than {@code previous} (the one
   * requests are routed by until the caller installs {@code next}): shards {@code self} owns in
   * it serve at their new epochs, and shards it owned in {@code previous} and not in {@code next}
   * are handed off, each once its requests in flight are done. Call it before installing {@code
   * next}, so no request routed by the new map meets a shard in its old state.
   *
   * <p>Only tables that changed between the two maps are visited ({@link Table#unchangedSince}): a move
   * in a map of 100,000 shards costs this node the moved shard's table, not the whole map.
   */
  public MapChanges apply(ShardMap previous, ShardMap next, NodeId self) {
    List<ShardRef> owned = new ArrayList<>();
    List<ShardRef> stoppedReplicating = new ArrayList<>();
    for (Table t : next.tables().values()) {
      if (t.unchangedSince(previous)) {
        continue;
      }
      for (ShardAssignment s : t.shards()) {
        if (s.owner().equals(self)) {
          ShardRef ref = ShardRef.of(t, s.id().number());
          LocalShard before = held.get(ref);
          boolean stops = before != null && before.replicated() && !t.replication().replicated();
          long mapFloor = t.replication().replicated() ? 0 : t.replication().versionFloor(); // purges of a time it kept replicas
          if ((ref.layout() != ShardRef.Layout.BUCKET || mapFloor > 0) && (before == null || stops)) {
            store.inheritFloor(ref, mapFloor); // a split's upper half (or a restart after one) has no floor of its own yet
          }
          own(ref, s.epoch(), t.replication().replicated());
          owned.add(ref);
          if (stops) {
            stoppedReplicating.add(ref);
          }
        }
      }
    }
    List<ShardRef> lost = new ArrayList<>();
    List<ShardRef> droppedTables = new ArrayList<>();
    for (Table old : previous.tables().values()) {
      Table now = next.table(old.name()).orElse(null);
      if (now != null && now.unchangedSince(previous)) {
        continue;
      }
      boolean dropped = now == null || now.id() != old.id();
      for (ShardAssignment s : old.shards()) {
        if (!s.owner().equals(self)) {
          continue;
        }
        ShardRef ref = ShardRef.of(old, s.id().number());
        if (dropped) {
          handOff(ref);
          droppedTables.add(ref);
        } else if (!now.shard(ref.shardNumber()).map(a -> a.owner().equals(self)).orElse(false)) {
          handOff(ref);
          lost.add(ref);
        }
      }
    }
    return new MapChanges(owned, lost, droppedTables, stoppedReplicating);
  }

  /** Forgets a handed-off shard whose data has left the store (moved to the trash); no-op if it serves again. */
  public void forget(ShardRef ref) {
    held.computeIfPresent(ref, (r, s) -> s.state() == LocalShard.State.HANDED_OFF ? null : s);
  }

  // ------------------------------------------------------------------ the data path

  /** The live value of {@code key}, or {@code null}. */
  public Versioned get(ShardRef ref, byte[] key) {
    barrierIfReplicated(ref);
    return getAfterBarrier(ref, key);
  }

  /**
   * Waits until reads of every replicated shard among {@code refs} are linearizable here (each
   * shard's read barrier, all under way at once); nothing for shards of one replica. Then {@link
   * #getAfterBarrier} reads them.
   */
  public void readBarrier(java.util.Collection<ShardRef> refs) {
    java.util.Set<ShardRef> replicatedShards = new java.util.LinkedHashSet<>();
    for (ShardRef r : refs) {
      if (replicated(r)) {
        replicatedShards.add(r);
      }
    }
    if (!replicatedShards.isEmpty()) {
      replication.readBarrier(replicatedShards);
    }
  }

  /**
   * A bounded-staleness read of a shard this node follows (it does not hold it: its leader does):
   * the key's live value if the replica here applied its leader's commit within {@code
   * maxStaleness} ({@link ReplicatedData#readAsFollower}); empty if it did not, and the leader must
   * answer. The inner optional is the key's value or its absence.
   */
  public java.util.Optional<java.util.Optional<Versioned>> getAsFollower(ShardRef ref, byte[] key, java.time.Duration maxStaleness) {
    return replication.readAsFollower(ref, maxStaleness, () -> java.util.Optional.ofNullable(store.get(ref, key)));
  }

  /** The live value of {@code key}, or {@code null}, once {@link #readBarrier} has returned for its shard. */
  public Versioned getAfterBarrier(ShardRef ref, byte[] key) {
    LocalShard s = enter(ref, false);
    try {
      return store.get(ref, key);
    } finally {
      s.exit();
    }
  }

  /** Live entries of the shard in {@code [from, to)}; see {@link ShardEngine#scan}. */
  public ScanPage scan(ShardRef ref, byte[] from, byte[] to, int limit) {
    barrierIfReplicated(ref);
    LocalShard s = enter(ref, false);
    try {
      return store.scan(ref, from, to, limit);
    } finally {
      s.exit();
    }
  }

  /**
   * The shard's pending rows (of its table's async global indexes) as its leader holds them once it
   * is known to lead (its read barrier: every write it acknowledged is applied here), as {@link
   * #scan} reads a page: what a consistent query waits for.
   */
  public List<io.shardwise.server.storage.ShardStore.PendingRow> pendingRows(ShardRef ref, int limit) {
    barrierIfReplicated(ref);
    LocalShard s = enter(ref, false);
    try {
      return store.pendingRows(ref, new byte[0], limit);
    } finally {
      s.exit();
    }
  }

  /** One page of the shard's rows that local index probes find, as {@link #scan} reads a page. */
  public io.shardwise.server.storage.ShardStore.IndexPage indexScan(ShardRef ref, List<io.shardwise.server.storage.ShardStore.IndexProbe> probes,
      byte[] from, byte[] to, int limit, java.util.function.Predicate<byte[]> matches) {
    barrierIfReplicated(ref);
    LocalShard s = enter(ref, false);
    try {
      return store.indexScan(ref, probes, from, to, limit, matches);
    } finally {
      s.exit();
    }
  }

  public long put(ShardRef ref, byte[] key, byte[] value) {
    try {
      return apply(List.of(Mutation.put(ref, key, value)))[0];
    } catch (VersionMismatchException e) {
      throw new AssertionError("an unconditional write cannot mismatch", e);
    }
  }

  /**
   * Writes {@code value} (unconditionally if {@code expectedVersion == Mutation.ANY}) as the write
   * {@code requestId} ({@code null}: none); a repeat of the id answers the first write's version.
   */
  public long write(ShardRef ref, byte[] key, byte[] value, long expectedVersion, byte[] requestId) throws VersionMismatchException {
    return apply(List.of(new Mutation(ref, key, value, expectedVersion).withRequestId(requestId)))[0];
  }

  /** Deletes {@code key}; true if it was live (or, for a repeated write id, if it was the first time). */
  public boolean delete(ShardRef ref, byte[] key, byte[] requestId) {
    try {
      return apply(List.of(Mutation.delete(ref, key).withRequestId(requestId)))[0] > 0;
    } catch (VersionMismatchException e) {
      throw new AssertionError("an unconditional delete cannot mismatch", e);
    }
  }

  /**
   * Applies the mutations atomically ({@link ShardEngine#apply}, write ids and their records
   * included) inside the fence of every shard they touch: all of them are served here for the
   * whole write, or nothing is written.
   */
  public long[] apply(List<Mutation> batch) throws VersionMismatchException {
    if (!batch.isEmpty() && replicated(batch.get(0).shard())) {
      return applyReplicated(batch);
    }
    Map<ShardRef, LocalShard> entered = new LinkedHashMap<>(4);
    try {
      for (Mutation m : batch) {
        if (!entered.containsKey(m.shard())) {
          LocalShard s = enter(m.shard(), true);
          entered.put(m.shard(), s);
          if (s.replicated()) { // its table began to keep replicas since the check above: its writes go through the log now
            throw new ShardFencedException(m.shard(), s, "began to keep replicas");
          }
        }
      }
      long[] versions = store.apply(batch);
      for (Mutation m : batch) {
        LocalShard s = entered.get(m.shard());
        if (s.tracked()) { // a move is copying the shard: its change log gets the key, its write id's record, a transaction's intent or record
          m.storeKeys().forEach(s::writtenStored);
        }
      }
      return versions;
    } finally {
      entered.values().forEach(LocalShard::exit);
    }
  }

  /** A replicated shard's read waits, outside the fence, until this node is known to lead it (its read barrier). */
  private void barrierIfReplicated(ShardRef ref) {
    if (replicated(ref)) {
      replication.readBarrier(java.util.Set.of(ref));
    }
  }

  /**
   * A batch of replicated shards: each shard's part through its own log (atomic per shard), outside
   * the fence — a write waiting for its followers must never hold up a hand-off or a map change.
   */
  private long[] applyReplicated(List<Mutation> batch) throws VersionMismatchException {
    Map<ShardRef, List<Integer>> byShard = new LinkedHashMap<>();
    for (int i = 0; i < batch.size(); i++) {
      byShard.computeIfAbsent(batch.get(i).shard(), r -> new ArrayList<>()).add(i);
    }
    long[] out = new long[batch.size()];
    Map<ShardRef, List<Mutation>> parts = new LinkedHashMap<>();
    for (Map.Entry<ShardRef, List<Integer>> e : byShard.entrySet()) {
      if (!replicated(e.getKey())) {
        throw new ShardFencedException(e.getKey(), held.get(e.getKey()), "is not a replicated shard served here");
      }
      List<Mutation> part = new ArrayList<>(e.getValue().size());
      e.getValue().forEach(i -> part.add(batch.get(i)));
      parts.put(e.getKey(), part);
    }
    Map<ShardRef, long[]> results = replication.write(parts); // every shard's part through its log at once
    for (Map.Entry<ShardRef, List<Integer>> e : byShard.entrySet()) {
      long[] r = results.get(e.getKey());
      for (int j = 0; j < r.length; j++) {
        out[e.getValue().get(j)] = r[j];
      }
    }
    return out;
  }

  /**
   * Merges stored values (a trash entry's) into a shard served here, inside its fence: each is
   * written only if newer than what the shard holds ({@link ShardEngine#mergeStored}).
   *
   * @return how many user keys were written (write-id records are merged too, and not counted)
   */
  public int merge(ShardRef ref, List<ShardEngine.StoredValue> values) {
    if (replicated(ref)) {
      // A write outside the log would make this replica differ from the others.
      throw new IllegalArgumentException("shard " + ref + " is replicated: a trash entry is merged into it only through its log,"
          + " which restores do not do yet");
    }
    LocalShard s = enter(ref, true);
    try {
      if (s.replicated()) {
        throw new ShardFencedException(ref, s, "began to keep replicas");
      }
      List<byte[]> written = store.mergeStored(ref, values);
      written.forEach(s::writtenStored);
      return (int) written.stream().filter(k -> !ref.isReserved(k)).count();
    } finally {
      s.exit();
    }
  }

  /**
   * Runs {@code work} (housekeeping that writes, such as purging tombstones) inside the shard's
   * fence, as a write would, but only while no move is copying the shard: a move's change log does
   * not record housekeeping, and {@code track} waits for it to finish. Empty if the shard is not
   * served here, paused, or being moved, or if {@code work} returns null.
   */
  public <T> java.util.Optional<T> maintain(ShardRef ref, java.util.function.Supplier<T> work) {
    LocalShard s;
    try {
      s = enter(ref, true);
    } catch (ShardFencedException e) {
      return java.util.Optional.empty();
    }
    try {
      return s.tracked() ? java.util.Optional.empty() : java.util.Optional.ofNullable(work.get());
    } finally {
      s.exit();
    }
  }

  /**
   * {@link #maintain}, for housekeeping that writes the store directly: empty as well if the shard's
   * table keeps replicas (then its housekeeping goes through its log, or the replicas would differ).
   */
  public <T> java.util.Optional<T> maintainUnreplicated(ShardRef ref, java.util.function.Supplier<T> work) {
    return maintain(ref, () -> held.get(ref).replicated() ? null : work.get());
  }

  private LocalShard enter(ShardRef ref, boolean write) {
    LocalShard s = held.get(ref);
    if (s == null) {
      throw new ShardFencedException(ref, null, "is not held by this node");
    }
    s.enter(write);
    return s;
  }
}
