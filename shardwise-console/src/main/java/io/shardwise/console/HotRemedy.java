package io.shardwise.console;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.Counters;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.server.balance.Isolation;
import java.util.Locale;
import java.util.Optional;

/**
 * The remedy the cluster page offers for a hot key: one that takes at least half of its shard's
 * sampled requests (guaranteed) is salted if it is a write-hot counter on a table placed by hash
 * (writes at least half of its requests, nearly all increments), else isolated if its table's
 * shards split. The same rule as the balancer's load policy.
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
    boolean writeHot = requests > 0 && key.getWrites() >= 0.5 * requests;
    boolean counter = key.getWrites() > 0 && key.getIncrements() >= 0.9 * key.getWrites();
    String what = String.format(Locale.ROOT, "'%s' takes at least %.0f%% of %s/%d's requests (%.0f%% writes%s)",
        ByteStrings.toDisplay(key.getKey().toByteArray()), 100 * share, shard.getTable(), shard.getNumber(),
        requests == 0 ? 0 : 100.0 * key.getWrites() / requests, counter ? ", nearly all increments" : "");
    if (writeHot && counter && table.layout().strategy() != Strategy.RANGE) {
      return Optional.of(new HotRemedy("salt", what + ": a write-hot counter; salting spreads its increments over sub-keys"));
    }
    if (table.layout().splittable()) {
      return Optional.of(new HotRemedy("isolate", what + ": isolate it in a shard of its own on the least-loaded node"));
    }
    return Optional.empty();
  }
}
