package io.shardwise.server.move;

import io.grpc.Status;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.proto.Errors;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node as the destination of moves: it receives a shard's snapshot and catch-up values while
 * it does not own the shard, and drops them only when the map, read by itself, shows that the
 * move did not happen. It can never overwrite a shard it serves. Thread-safe.
 */
final class MoveDestination {

  private static final Logger LOG = LoggerFactory.getLogger(MoveDestination.class);

  private final MoveNode node;
  private final ConcurrentHashMap<String, ShardRef> incoming = new ConcurrentHashMap<>();

  MoveDestination(MoveNode node) {
    this.node = node;
  }

  /** The shard move {@code moveId} is receiving, if it is. */
  java.util.Optional<ShardRef> incoming(String moveId) {
    return java.util.Optional.ofNullable(incoming.get(moveId));
  }

  /** True while a move into this node is receiving {@code shard}: its data must not be dropped. */
  boolean receiving(ShardRef shard) {
    return incoming.containsValue(shard);
  }

  /** True while a move into this node is receiving a shard whose range overlaps {@code range}. */
  boolean receivingInto(ShardRef range) {
    return incoming.values().stream().anyMatch(range::overlaps);
  }

  /** This node owns {@code shard} now: the move that brought it here is over. */
  void arrived(ShardRef shard) {
    incoming.values().removeIf(shard::equals);
  }

  /**
   * A move's snapshot starts to arrive.
   *
   * @throws io.grpc.StatusRuntimeException if this node owns the shard, the map has no such
   *     shard, or the move is already receiving
   */
  void begin(String moveId, ShardRef shard) {
    ShardMap map = node.map().current();
    ShardAssignment s = map.shard(shard.tableId(), shard.shardNumber())
        .orElseThrow(() -> Errors.invalid("move " + moveId + ": no shard " + shard + " in the map at epoch " + map.epoch()));
    if (s.owner().equals(node.self())) {
      throw Errors.invalid("move " + moveId + ": this node already owns shard " + s.id());
    }
    // Under the store's monitor, as the trash decides and drops a stale copy under it: either that
    // drop is over before this move receives anything, or it sees the move receiving and keeps the range.
    synchronized (node.store()) {
      if (incoming.putIfAbsent(moveId, shard) != null) {
        throw Errors.invalid("move " + moveId + " is already receiving");
      }
    }
  }

  /** The whole snapshot has arrived ({@code file == null}: the shard is empty): it replaces what this node held of the shard. */
  void ingest(String moveId, ShardRef shard, Path file, long bytes) {
    node.store().ingest(shard, file);
    LOG.info("move {}: received {} bytes of shard {}", moveId, bytes, node.map().current().shardName(shard.tableId(), shard.shardNumber()));
  }

  /** The snapshot did not arrive whole: what was received goes, unless this node owns the shard by now. */
  void abort(String moveId, ShardRef shard) {
    incoming.remove(moveId, shard);
    if (!ownedHere(shard)) {
      node.store().drop(shard);
    }
  }

  /** Writes catch-up values of a move that is receiving {@code shard}. */
  void applyChanges(String moveId, ShardRef shard, List<ShardEngine.StoredValue> values) {
    if (!shard.equals(incoming.get(moveId))) {
      throw Errors.invalid("move " + moveId + " is not receiving shard " + shard);
    }
    try {
      node.store().writeStored(shard, values);
    } catch (IllegalArgumentException e) {
      throw Errors.invalid(e.getMessage());
    }
  }

  /**
   * Drops the copy of an abandoned move. The source's word is not enough: the map is read (synced)
   * and applied here first, and a copy that the map gives to this node is kept.
   *
   * @throws io.grpc.StatusRuntimeException UNAVAILABLE if the map cannot be read, FAILED_PRECONDITION
   *     if this node owns the shard
   */
  void dropCopy(String moveId, ShardRef shard) {
    ShardMap map;
    try {
      map = node.maps().syncedMap();
    } catch (RuntimeException e) {
      throw Status.UNAVAILABLE.withDescription("cannot read the map to check the move's outcome: " + e.getMessage()).asRuntimeException();
    }
    node.applyMap().accept(map);
    if (map.owns(node.self(), shard.tableId(), shard.shardNumber()) || ownedHere(shard)) {
      throw Status.FAILED_PRECONDITION.withDescription("move " + moveId + ": the map at epoch " + map.epoch()
          + " gives shard " + shard + " to this node; its copy is kept").asRuntimeException();
    }
    incoming.remove(moveId, shard);
    node.store().drop(shard); // an incomplete copy this node never served
  }

  private boolean ownedHere(ShardRef shard) {
    return node.map().current().owns(node.self(), shard.tableId(), shard.shardNumber());
  }
}
