package io.shardwise.server.replication;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.server.move.MemoryEngine;
import io.shardwise.server.replication.Messages.AppendBatch;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link Replicator}s of several nodes wired by hand, for tests of what one leader does: every
 * task runs at once on the calling thread (the worst case for batching), messages wait on a wire
 * the test delivers, nodes marked {@link #down} refuse every message as a dead node's host does,
 * and the map changes replicators ask for are stored at once and applied to every node.
 */
final class WiredReplicators {

  final Map<NodeId, Replicator> nodes = new LinkedHashMap<>();
  final Map<NodeId, MemoryEngine> engines = new LinkedHashMap<>();
  /** The messages sent, in order, with their destination. */
  final List<Map.Entry<NodeId, AppendBatch>> sent = new ArrayList<>();
  /** Nodes whose messages fail on delivery. */
  final Set<NodeId> down = new java.util.HashSet<>();
  final AtomicLong clock = new AtomicLong();
  private final ArrayDeque<Runnable> wire = new ArrayDeque<>();
  private ShardMap map = ShardMap.EMPTY;

  /** Replicators for {@code ids}, each on a memory engine and with {@code config}; their stores granted in the map. */
  WiredReplicators(Path dir, ReplicationConfig config, NodeId... ids) {
    ShardMapDelta.Builder grants = ShardMapDelta.on(map);
    for (NodeId id : ids) {
      MemoryEngine engine = new MemoryEngine(id.value() + "-store", () -> 0L);
      engines.put(id, engine);
      grants.add(new ShardMapDelta.GrantStore(id, engine.storeId()));
      nodes.put(id, new Replicator(id, engine, transport(id), this::update, Runnable::run, Runnable::run, dir.resolve(id.value()), clock::get,
          config));
    }
    map = map.apply(grants.build());
  }

  ShardMap map() {
    return map;
  }

  /** Stores {@code delta} and applies the new map to every node. */
  void change(ShardMapDelta delta) {
    ShardMap before = map;
    map = map.apply(delta);
    nodes.values().forEach(r -> r.apply(before, map));
  }

  /** Runs every message and reply on the wire, and those they send, until it is empty. */
  void deliverAll() {
    for (int i = 0; !wire.isEmpty(); i++) {
      assertThat(i).as("messages delivered").isLessThan(1_000);
      wire.poll().run();
    }
  }

  /** Moves the clock on by {@code nanos} and ticks every node (heartbeats, in-sync changes), delivering what that sends. */
  void tick(long nanos) {
    clock.addAndGet(nanos);
    nodes.values().forEach(Replicator::tick);
    deliverAll();
  }

  private Replicator.Transport transport(NodeId from) {
    return new Replicator.Transport() {
      @Override
      public void send(NodeId to, AppendBatch batch, java.util.function.BiConsumer<Messages.AppendReply, Throwable> done) {
        sent.add(Map.entry(to, batch));
        wire.add(() -> {
          if (down.contains(to)) {
            done.accept(null, new IllegalStateException("connection refused: " + to));
          } else {
            done.accept(nodes.get(to).onAppend(batch), null);
          }
        });
      }

      @Override
      public void sendSnapshot(NodeId to, NodeId leader, Messages.SnapshotOffer offer, Path file,
          java.util.function.BiConsumer<Messages.ShardReply, Throwable> done) {
        throw new AssertionError(from + ": no follower here lacks what the log holds");
      }
    };
  }

  private void update(java.util.function.Function<ShardMap, Optional<ShardMapDelta>> change,
      java.util.function.BiConsumer<ShardMap, Throwable> done) {
    wire.add(() -> { // stored as the wire moves on, as a compare-and-set in ZooKeeper is
      Optional<ShardMapDelta> delta = change.apply(map);
      delta.ifPresent(this::change);
      done.accept(map, null);
    });
  }
}
