package io.shardwise.server.move;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.shardwise.server.shard.ChangeLog;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a node's outgoing moves report (Micrometer): bytes and keys moved, moves in flight, the
 * write pause of each cutover, how many cutovers went in one map change, and the catch-up lag (keys written to moving shards and not yet
 * copied).
 */
final class MoveMetrics {

  private final Counter bytes;
  private final Counter keys;
  private final Timer pause;
  private final DistributionSummary cutoversPerChange;
  private final Set<ChangeLog> active = ConcurrentHashMap.newKeySet();

  MoveMetrics(MeterRegistry registry) {
    bytes = Counter.builder("shardwise.move.bytes").baseUnit("bytes").description("bytes sent by moves from this node").register(registry);
    keys = Counter.builder("shardwise.move.keys").description("keys sent by moves from this node (snapshot and catch-up)").register(registry);
    pause = Timer.builder("shardwise.move.write.pause").description("writes paused per cutover").publishPercentiles(0.5, 0.99)
        .register(registry);
    cutoversPerChange = DistributionSummary.builder("shardwise.move.cutovers.per.change")
        .description("cutovers stored together in one compare-and-set of the map (a group commit)").register(registry);
    Gauge.builder("shardwise.moves.in.flight", active, Set::size).description("moves running from this node").register(registry);
    Gauge.builder("shardwise.move.catchup.lag", active, MoveMetrics::lag).description("keys written to moving shards, not yet copied")
        .register(registry);
  }

  private static double lag(Set<ChangeLog> logs) {
    long sum = 0;
    for (ChangeLog log : logs) {
      sum += log.pending();
    }
    return sum;
  }

  void started(ChangeLog log) {
    active.add(log);
  }

  void ended(ChangeLog log) {
    active.remove(log);
  }

  void sent(long byteCount, long keyCount) {
    bytes.increment(byteCount);
    keys.increment(keyCount);
  }

  void cutOverTogether(int cutovers) {
    cutoversPerChange.record(cutovers);
  }

  void paused(Duration d) {
    pause.record(d);
  }
}
