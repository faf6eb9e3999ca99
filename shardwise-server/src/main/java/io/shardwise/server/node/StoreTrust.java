package io.shardwise.server.node;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.server.balance.Failover;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.storage.ShardStore;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the map from counting on data a node no longer has. The map's in-sync sets and
 * leaderships name nodes, but what they vouch for is a node's <em>data</em>: a node restarted on a
 * wiped (or another) data directory under its old id would still be in them, and the controller
 * could make it the leader of shards it holds nothing of — every acknowledged write lost (Kafka's
 * KIP-966 problem). So the map records the store each node's replicas are granted to ({@link
 * ShardMap#storeOf}, a data directory's {@link ShardStore#storeId}). A node that starts on another
 * store, before it serves anything, takes itself out of every in-sync set, hands each shard it
 * leads to an in-sync follower ({@link Failover#forget}) and grants its replicas to the new store,
 * all in one compare-and-set; it rejoins each in-sync set the usual way, by catching up from the
 * leader, and a leader's word that it caught up counts only for the granted store ({@link
 * ShardMapDelta.ChangeInSync#stores}), so what a leader learnt from the old directory can never
 * vouch for the new one.
 *
 * <p>A node that is the only in-sync replica of a shard it leads refuses to start, naming the
 * shards, and changes nothing: its lost data was their only complete copy, and serving them empty
 * would lose every acknowledged write silently.
 */
final class StoreTrust {

  private static final Logger LOG = LoggerFactory.getLogger(StoreTrust.class);

  private StoreTrust() {}

  /**
   * Checks {@code store} against the store the map grants {@code node}'s replicas to, and if they
   * differ makes the map forget the node's replicas and grant them to {@code store}.
   *
   * @throws IllegalStateException if the node leads a replicated shard none of whose followers is
   *     in sync (nothing is changed then)
   */
  static void establish(Coordinator coordinator, NodeId node, ShardStore.Identity store) {
    ShardMap current = coordinator.readMap().map();
    Optional<String> granted = current.storeOf(node);
    if (granted.isPresent() && granted.get().equals(store.id())) {
      return;
    }
    boolean trusted = granted.isEmpty() && store.adopted(); // a directory written before store ids: the data the map counts on
    Set<NodeId> others = new HashSet<>(coordinator.liveNodesNow().keySet());
    others.remove(node);
    int[] forgotten = {0};
    ShardMap after = coordinator.updateMap(map -> {
      if (map.storeOf(node).filter(store.id()::equals).isPresent()) {
        return Optional.empty();
      }
      ShardMapDelta.Builder delta = ShardMapDelta.on(map);
      if (!trusted) {
        Failover.Forgetting f = Failover.forget(map, node, others);
        if (!f.stranded().isEmpty()) {
          List<String> names = f.stranded().stream().map(Object::toString).limit(10).toList();
          throw new IllegalStateException("node " + node + " starts on a data directory the map does not know (store " + store.id()
              + map.storeOf(node).map(g -> "; its replicas are granted to store " + g).orElse("") + "), but it leads "
              + f.stranded().size() + " replicated shard(s) with no in-sync follower: " + String.join(", ", names)
              + (f.stranded().size() > 10 ? ", …" : "") + ". Their acknowledged writes were only in its old data directory: start it"
              + " on that directory again. Nothing was changed");
        }
        f.delta().ifPresent(d -> d.changes().forEach(delta::add));
        forgotten[0] = f.delta().map(d -> d.changes().size()).orElse(0);
      }
      return Optional.of(delta.add(new ShardMapDelta.GrantStore(node, store.id())).build());
    });
    if (forgotten[0] > 0 || granted.isPresent()) {
      LOG.warn("node {}: starts on store {}, not the store {} its replicas were granted to (a wiped or replaced data directory): it left"
          + " the in-sync sets and leaderships of {} shard(s) and rebuilds them from their leaders (map epoch {})", node, store.id(),
          granted.orElse("(none recorded)"), forgotten[0], after.epoch());
    } else {
      LOG.info("node {}: its replicas are granted to store {} (map epoch {})", node, store.id(), after.epoch());
    }
  }
}
