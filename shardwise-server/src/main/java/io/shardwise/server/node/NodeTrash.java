package io.shardwise.server.node;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.MergeStoredRequest;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.RestoredEntry;
import io.shardwise.proto.v1.StoredValue;
import io.shardwise.proto.v1.TrashEntry;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.TrashAdmin;
import io.shardwise.server.shard.LocalShards;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.ShardTrash;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node does with its trash besides keeping it: puts copies in, brings a dropped table's
 * copies back when the table is undropped, and, for an operator, lists, restores and purges
 * entries. A restore merges an entry into its shard's current owner — here or on another node —
 * writing a key only where the entry's version is newer, so nothing written or deleted since is
 * undone. Thread-safe.
 */
final class NodeTrash implements TrashAdmin {

  private static final Logger LOG = LoggerFactory.getLogger(NodeTrash.class);
  private static final int MERGE_BATCH_KEYS = 1_000;

  private final NodeId self;
  private final ShardStore store;
  private final LocalShards shards;
  private final Supplier<ShardMap> map;
  private final Coordinator coordinator;
  private final Peers peers;

  NodeTrash(NodeId self, ShardStore store, LocalShards shards, Supplier<ShardMap> map, Coordinator coordinator, Peers peers) {
    this.self = self;
    this.store = store;
    this.shards = shards;
    this.map = map;
    this.coordinator = coordinator;
    this.peers = peers;
  }

  /** Moves what the store holds of {@code shard} to the trash if {@code stillForeign} says so when it starts. */
  void put(ShardRef shard, ShardTrash.Kind kind, String reason, BooleanSupplier stillForeign) {
    try {
      store.trash().put(shard, kind, reason, stillForeign).ifPresent(e ->
          LOG.info("node {}: shard {} ({} keys, {} bytes) to the trash: {}", self, name(shard), e.liveKeys(), e.bytes(), reason));
      if (stillForeign.getAsBoolean()) {
        shards.forget(shard);
      }
    } catch (RuntimeException e) {
      LOG.warn("node {}: could not move shard {} to the trash: {}", self, name(shard), e.getMessage());
    }
  }

  /**
   * Before this node applies {@code next}: shards it owns of a table that {@code previous} does not
   * have (an undropped table keeps its id) get back the copies its drop put in the trash. They are
   * written straight to the store, before the shard serves, so no write can come between. The
   * caller holds the trash's lock until it has installed {@code next}: a drop's trashing that has
   * not run yet then sees the table back and keeps the data where it is.
   */
  void restoreUndropped(ShardMap previous, ShardMap next) {
    assert Thread.holdsLock(store.trash()) : "the caller holds the trash until the new map is installed";
    List<ShardTrash.Entry> entries = null;
    for (Table t : next.tables().values()) {
      if (previous.tables().values().stream().anyMatch(old -> old.id() == t.id())) {
        continue;
      }
      for (ShardAssignment s : t.shards()) {
        if (!s.owner().equals(self)) {
          continue;
        }
        if (entries == null) {
          entries = store.trash().entries();
        }
        ShardRef ref = ShardRef.of(t, s.id().number());
        for (ShardTrash.Entry e : entries) {
          if (e.kind() == ShardTrash.Kind.TABLE_DROPPED && e.shard().tableId() == ref.tableId()
              && e.shard().shardNumber() == ref.shardNumber()) {
            long[] merged = {0};
            store.trash().forEachBatch(e.id(), MERGE_BATCH_KEYS,
                values -> merged[0] += store.mergeStored(ref, rekeyed(e.shard(), ref, values)).size());
            store.trash().purge(e.id());
            LOG.info("node {}: table {} undropped: shard {} got back {} stored keys from trash entry {}", self, t.name(), name(ref), merged[0],
                e.id());
          }
        }
      }
    }
  }

  @Override
  public List<TrashEntry> list() {
    ShardMap current = map.get();
    List<TrashEntry> out = new ArrayList<>();
    for (ShardTrash.Entry e : store.trash().entries()) {
      String table = current.tables().values().stream().filter(t -> t.id() == e.shard().tableId()).map(Table::name).findFirst().orElse("");
      out.add(TrashEntry.newBuilder().setId(e.id()).setTable(table).setTableId(e.shard().tableId()).setNumber(e.shard().shardNumber())
          .setKind(e.kind().name().toLowerCase(Locale.ROOT)).setTrashedAtMillis(e.trashedAtMillis()).setKeys(e.liveKeys())
          .setBytes(e.bytes()).setReason(e.reason()).build());
    }
    return out;
  }

  /**
   * {@inheritDoc}
   *
   * <p>An entry whose shard a split or a merge has replaced since is restored key by key into the
   * shards that hold those keys now (write-id records and the version floor stay behind: they
   * belonged to the old shard).
   *
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for no such entry, FAILED_PRECONDITION if its
   *     table is not in the map (undrop it first) or an owner cannot take it now
   */
  @Override
  public RestoredEntry restore(long id) {
    ShardTrash.Entry e = store.trash().entry(id)
        .orElseThrow(() -> Status.NOT_FOUND.withDescription("node " + self + " has no trash entry " + id).asRuntimeException());
    ShardMap current = map.get();
    Table table = current.tableById(e.shard().tableId())
        .orElseThrow(() -> Status.FAILED_PRECONDITION.withDescription("trash entry " + id + " is of table id " + e.shard().tableId()
            + ", which is not in the map at epoch " + current.epoch()
            + (e.kind() == ShardTrash.Kind.TABLE_DROPPED ? "; 'table undrop' brings a dropped table back with its data" : ""))
            .asRuntimeException());
    if (!table.globalIndexes().isEmpty() || io.shardwise.core.map.Tables.indexTable(table.name())) {
      // A merge writes rows as they were stored, without the transaction that would change a global index's entries with them.
      throw Status.FAILED_PRECONDITION.withDescription("trash entry " + id + " is of table " + table.name() + ", which "
          + (!table.globalIndexes().isEmpty() ? "has a global index: drop the index, restore, then create it again"
          : "is a global index's: its entries are rebuilt by creating the index again")).asRuntimeException();
    }
    boolean sameShard = e.shard().layout() != ShardRef.Layout.TABLE && table.positionOf(e.shard().shardNumber()) >= 0;
    if (!sameShard && !table.layout().splittable()) {
      throw Status.FAILED_PRECONDITION.withDescription("trash entry " + id + " holds " + e.shard() + ", which table " + table.name()
          + " does not have").asRuntimeException();
    }
    long[] written = {0};
    long[] offered = {0};
    java.util.Set<String> owners = new java.util.TreeSet<>();
    store.trash().forEachBatch(id, MERGE_BATCH_KEYS, batch -> {
      // A shard may be paused for a move's cutover, or have moved, split or merged since the map was
      // read: the batch is placed again by the map as it is then and merged again. A merge is
      // idempotent (newer versions win), so the parts already merged write nothing the second time.
      io.shardwise.server.rpc.Retries.withBackoff(RESTORE_RETRY, NodeTrash::transientRefusal, attempt -> {
        Table now = attempt == 1 ? table : map.get().tableById(table.id()).orElse(table);
        Map<Long, List<ShardEngine.StoredValue>> byShard = sameShard && now.positionOf(e.shard().shardNumber()) >= 0
            ? Map.of(e.shard().shardNumber(), rekeyed(e.shard(), ShardRef.of(now, e.shard().shardNumber()), batch))
            : placedByKey(now, e.shard(), batch);
        long offeredNow = 0;
        for (var part : byShard.entrySet()) {
          ShardAssignment owner = now.shard(part.getKey()).orElseThrow();
          ShardRef target = ShardRef.of(now, part.getKey());
          offeredNow += userKeys(target, part.getValue());
          written[0] += mergeInto(owner, target, part.getValue());
          owners.add(owner.owner().value());
        }
        offered[0] += offeredNow;
        return null;
      });
    });
    store.trash().purge(id);
    LOG.info("node {}: trash entry {} (shard {}) restored into {}: {} of {} keys written, the rest were as new or newer there", self, id,
        e.shard(), owners, written[0], offered[0]);
    return RestoredEntry.newBuilder().setId(id).setKeysMerged(written[0]).setKeysNewerKept(offered[0] - written[0])
        .setOwner(String.join(",", owners)).build();
  }

  /** A batch of an entry's user keys, by the shard of {@code table} that holds each now, re-keyed for it. */
  private static Map<Long, List<ShardEngine.StoredValue>> placedByKey(Table table, ShardRef from, List<ShardEngine.StoredValue> batch) {
    Map<Long, List<ShardEngine.StoredValue>> out = new java.util.TreeMap<>();
    Map<Long, ShardRef> refs = new java.util.HashMap<>();
    for (ShardEngine.StoredValue v : batch) {
      if (from.isReserved(v.storeKey())) {
        continue;
      }
      byte[] user = from.userKey(v.storeKey());
      byte[] partitionKey;
      try {
        partitionKey = io.shardwise.core.key.Key.decode(user).partitionKey();
      } catch (IllegalArgumentException notAKey) {
        continue; // no user key of a table: nothing to place
      }
      long number = table.shardFor(partitionKey).id().number();
      ShardRef to = refs.computeIfAbsent(number, n -> ShardRef.of(table, n));
      out.computeIfAbsent(number, n -> new ArrayList<>()).add(new ShardEngine.StoredValue(to.storeKey(user), v.stored()));
    }
    return out;
  }

  /** How long a restore keeps trying a batch whose shard is paused, moving or briefly without a live owner. */
  private static final java.time.Duration RESTORE_RETRY = java.time.Duration.ofSeconds(30);

  private static boolean transientRefusal(RuntimeException e) {
    Status.Code code = e instanceof io.grpc.StatusRuntimeException s ? s.getStatus().getCode() : Status.Code.UNKNOWN;
    return code == Status.Code.FAILED_PRECONDITION || code == Status.Code.UNAVAILABLE || code == Status.Code.ABORTED;
  }

  /** Merges values into {@code target} on its owner, here or over gRPC; returns the user keys written. */
  private long mergeInto(ShardAssignment owner, ShardRef target, List<ShardEngine.StoredValue> values) {
    if (owner.owner().equals(self)) {
      try {
        return shards.merge(target, values);
      } catch (RuntimeException fenced) {
        throw Status.FAILED_PRECONDITION.withDescription("shard " + owner.id() + " cannot take the entry now: " + fenced.getMessage())
            .asRuntimeException();
      }
    }
    var info = coordinator.liveNodes().get(owner.owner());
    if (info == null) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + owner.id() + " belongs to " + owner.owner() + ", which is not live")
          .asRuntimeException();
    }
    MergeStoredRequest.Builder request = MergeStoredRequest.newBuilder().setTableId(target.tableId()).setNumber(target.shardNumber());
    for (ShardEngine.StoredValue v : values) {
      request.addValues(StoredValue.newBuilder().setStoreKey(ByteString.copyFrom(v.storeKey())).setStored(ByteString.copyFrom(v.stored())));
    }
    return MoveServiceGrpc.newBlockingStub(peers.channel(info.getAddress())).withDeadlineAfter(60, TimeUnit.SECONDS)
        .mergeStored(request.build()).getWritten();
  }

  /** {@code users/96} while the map has the table, {@code table#5/96} after it was dropped. */
  private String name(ShardRef shard) {
    return map.get().shardName(shard.tableId(), shard.shardNumber());
  }

  private static long userKeys(ShardRef shard, List<ShardEngine.StoredValue> values) {
    return values.stream().filter(v -> !shard.isReserved(v.storeKey())).count();
  }

  /**
   * A trash entry's stored values as {@code to} stores them: an entry written in another layout
   * (before placement order, format 1) is re-keyed ({@link ShardRef#rekey}); write-id records that
   * cannot be placed are left out.
   */
  private static List<ShardEngine.StoredValue> rekeyed(ShardRef from, ShardRef to, List<ShardEngine.StoredValue> values) {
    if (from.equals(to)) {
      return values;
    }
    List<ShardEngine.StoredValue> out = new ArrayList<>(values.size());
    for (ShardEngine.StoredValue v : values) {
      byte[] key = to.rekey(from, v.storeKey());
      if (key != null) {
        out.add(new ShardEngine.StoredValue(key, v.stored()));
      }
    }
    return out;
  }

  @Override
  public List<Long> purge(List<Long> ids) {
    List<Long> purged = new ArrayList<>();
    for (long id : ids) {
      Optional<ShardTrash.Entry> e = store.trash().entry(id);
      if (e.isPresent() && store.trash().purge(id)) {
        purged.add(id);
        LOG.info("node {}: trash entry {} (shard {}, {} keys) purged by an operator", self, id, name(e.get().shard()), e.get().liveKeys());
      }
    }
    return purged;
  }
}
