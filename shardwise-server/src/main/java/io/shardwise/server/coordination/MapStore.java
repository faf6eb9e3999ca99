package io.shardwise.server.coordination;

import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import java.util.Optional;
import java.util.function.Function;

/**
 * The shard map as the move protocol sees it: one compare-and-set to change it, and a read that
 * decides an outcome. {@link Coordinator} keeps it in ZooKeeper; the move simulation keeps it in
 * memory and loses replies on purpose.
 */
public interface MapStore {

  /**
   * Changes the map: reads it, asks {@code plan} for a delta (empty: nothing to do), applies it,
   * and stores the result with a compare-and-set. {@code plan} may run more than once and must
   * not have side effects. An exception does not say the change was not stored: a lost reply
   * looks the same as a refused change, and only {@link #syncedMap} tells them apart.
   *
   * @return the stored map after the change (or the current map if {@code plan} had nothing)
   */
  ShardMap updateMap(Function<ShardMap, Optional<ShardMapDelta>> plan);

  /**
   * The map, at least as new as every change any client had stored when this was called: for
   * deciding an outcome (did my cutover happen?), never for the request path.
   */
  ShardMap syncedMap();
}
