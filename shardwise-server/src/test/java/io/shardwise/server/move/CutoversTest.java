package io.shardwise.server.move;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.MapStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The group commit of cutovers: what queues behind a compare-and-set goes in the next one, together. */
class CutoversTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  /** A map in memory whose first change waits for a gate, so that others queue behind it. */
  private static final class GatedMap implements MapStore {
    volatile ShardMap stored = initial();
    final CountDownLatch firstEntered = new CountDownLatch(1);
    final CountDownLatch gate = new CountDownLatch(1);
    final List<Integer> changesPerCommit = new ArrayList<>();
    volatile boolean fail;
    private boolean first = true;

    @Override
    public ShardMap updateMap(Function<ShardMap, Optional<ShardMapDelta>> plan) {
      boolean wait;
      synchronized (this) {
        wait = first;
        first = false;
      }
      if (wait) {
        firstEntered.countDown();
        await(gate);
      }
      synchronized (this) {
        if (fail) {
          throw new CoordinationException("connection loss");
        }
        Optional<ShardMapDelta> delta = plan.apply(stored);
        changesPerCommit.add(delta.map(d -> d.changes().size()).orElse(0));
        delta.ifPresent(d -> stored = stored.apply(d));
        return stored;
      }
    }

    @Override
    public ShardMap syncedMap() {
      return stored;
    }
  }

  private static ShardMap initial() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.MOD).build();
    ShardLayout layout = ShardLayout.initial(spec, 8, 2, KeySample.empty()).layout();
    List<ShardAssignment> shards = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      shards.add(new ShardAssignment(new ShardId("t", i), N1, 1));
    }
    return ShardMap.restore(1, List.of(ShardMap.table("t", 1, spec, layout, shards)));
  }

  private static Cutovers cutovers(MapStore maps) {
    return new Cutovers(maps, new MoveMetrics(new io.micrometer.core.instrument.simple.SimpleMeterRegistry()));
  }

  private static NodeId owner(ShardMap map, int shard) {
    return map.shard(1, shard).orElseThrow().owner();
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private Future<ShardMap> cutOver(Cutovers cutovers, int shard, boolean refuse) {
    return threads.submit(() -> cutovers.cutOver(new ShardId("t", shard), N1, N2, map -> {
      if (refuse) {
        throw new IllegalStateException("shard " + shard + " changed epoch during the move");
      }
    }));
  }

  private static void awaitQueued(Cutovers cutovers, int n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (cutovers.waiting() < n && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    assertThat(cutovers.waiting()).isEqualTo(n);
  }

  @Test
  void cutoversThatQueueBehindAChangeAreStoredTogetherInTheNextOne() throws Exception {
    GatedMap maps = new GatedMap();
    Cutovers cutovers = cutovers(maps);
    long before = maps.stored.epoch();
    Future<ShardMap> lone = cutOver(cutovers, 0, false);
    maps.firstEntered.await(10, TimeUnit.SECONDS);
    List<Future<ShardMap>> queued = List.of(cutOver(cutovers, 1, false), cutOver(cutovers, 2, false), cutOver(cutovers, 3, false));
    awaitQueued(cutovers, 3);
    maps.gate.countDown();

    assertThat(owner(lone.get(10, TimeUnit.SECONDS), 0)).isEqualTo(N2);
    for (Future<ShardMap> f : queued) {
      ShardMap after = f.get(10, TimeUnit.SECONDS);
      assertThat(List.of(owner(after, 1), owner(after, 2), owner(after, 3))).containsOnly(N2);
    }
    assertThat(maps.changesPerCommit).containsExactly(1, 3);
    assertThat(maps.stored.epoch()).isEqualTo(before + 2);
    assertThat(cutovers.commits()).isEqualTo(2);
    assertThat(cutovers.cutovers()).isEqualTo(4);
  }

  @Test
  void aRefusedCutoverIsLeftOutAndTheOthersAreStored() throws Exception {
    GatedMap maps = new GatedMap();
    Cutovers cutovers = cutovers(maps);
    Future<ShardMap> lone = cutOver(cutovers, 0, false);
    maps.firstEntered.await(10, TimeUnit.SECONDS);
    Future<ShardMap> refused = cutOver(cutovers, 1, true);
    Future<ShardMap> stored = cutOver(cutovers, 2, false);
    awaitQueued(cutovers, 2);
    maps.gate.countDown();

    lone.get(10, TimeUnit.SECONDS);
    // The refused one learns from the map it gets back that the shard is still n1's, at its epoch.
    assertThat(owner(refused.get(10, TimeUnit.SECONDS), 1)).isEqualTo(N1);
    assertThat(owner(stored.get(10, TimeUnit.SECONDS), 2)).isEqualTo(N2);
    assertThat(maps.changesPerCommit).containsExactly(1, 1);
  }

  @Test
  void whenTheChangeDoesNotAnswerEveryCutoverOfTheBatchIsToldItsOutcomeIsUnknown() throws Exception {
    GatedMap maps = new GatedMap();
    Cutovers cutovers = cutovers(maps);
    maps.fail = true;
    Future<ShardMap> lone = cutOver(cutovers, 0, false);
    maps.firstEntered.await(10, TimeUnit.SECONDS);
    Future<ShardMap> a = cutOver(cutovers, 1, false);
    Future<ShardMap> b = cutOver(cutovers, 2, false);
    awaitQueued(cutovers, 2);
    maps.gate.countDown();
    for (Future<ShardMap> f : List.of(lone, a, b)) {
      assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(IllegalStateException.class)
          .hasMessageContaining("connection loss");
    }
    assertThat(cutovers.commits()).isZero();
  }
}
