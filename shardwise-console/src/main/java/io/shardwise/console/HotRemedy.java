package io.shardwise.console;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.Counters;
import io.shardwise.core.map.Table;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.balance.Isolation;
import io.shardwise.server.hot.Salting;
import java.util.Locale;
import java.util.Optional;

/**
 * The remedy the cluster page offers for a hot key: one that takes at least half of its shard's
 * sampled requests (guaranteed) is salted if {@link Salting#saltable}, else isolated if its
 * table's shards split — the balancer's load policy asks the same.
 */
record HotRemedy(String kind, String finding) {

  static Optional<HotRemedy> of(Table table, ShardInfo shard, HotKey key) {
    if (table == null || shard.getHotSampled() == 0 || Counters.isSubKey(key.getKey().toByteArray())) {
      return Optional.empty();
    }
    double share = (double) (key.getCount() - key.getError()) / shard.getHotSampled();
    if (share < Isolation.HOT_KEY_SHARE) {
      return Optional.empty();
    }
    long requests = key.getReads() + key.getWrites();
    String what = String.format(Locale.ROOT, "'%s' takes at least %.0f%% of %s/%d's requests (%.0f%% writes%s)",
        ByteStrings.toDisplay(key.getKey().toByteArray()), 100 * share, shard.getTable(), shard.getNumber(),
        requests == 0 ? 0 : 100.0 * key.getWrites() / requests,
        key.getWrites() == 0 ? "" : String.format(Locale.ROOT, ", %.0f%% of them increments or appends", 100.0 * key.getMerges() / key.getWrites()));
    if (Salting.saltable(table, key)) {
      return Optional.of(new HotRemedy("salt", what + ": a write-hot counter or list, nearly all increments or appends; salting spreads them over sub-keys"));
    }
    if (table.layout().splittable()) {
      return Optional.of(new HotRemedy("isolate", what + ": isolate it in a shard of its own on the least-loaded node"));
    }
    return Optional.empty();
  }
}
