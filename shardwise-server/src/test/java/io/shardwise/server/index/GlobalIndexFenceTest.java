package io.shardwise.server.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.StatusRuntimeException;
import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.ErrorInfo;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The fence between writes planned without a global index and the index's backfill: a write is
 * refused once its shard's map has an index newer than its plan, and a drain returns only after
 * every write that entered before it has left.
 */
class GlobalIndexFenceTest {

  private static final NodeId N1 = NodeId.of("n1");

  private static ShardMap docs() {
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout();
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("docs", spec, layout, List.of(N1), List.of(List.of()),
        Replication.of(1), ValueFormat.JSON).build());
  }

  private static ShardMap withGlobalIndex(ShardMap map) {
    IndexDef color = new IndexDef(map.epoch() + 1, List.of("color"), IndexDef.Scope.GLOBAL, IndexDef.State.BUILDING);
    return map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes("docs", List.of(color))).build());
  }

  @Test
  void aWritePlannedBeforeTheTablesNewestGlobalIndexIsRefusedNamingTheMapToPlanOn() {
    AtomicReference<ShardMap> map = new AtomicReference<>(docs());
    GlobalIndexFence fence = new GlobalIndexFence(map::get);
    assertThat(fence.write("docs", 0, () -> "written")).as("no global index: a plain write passes").isEqualTo("written");
    map.set(withGlobalIndex(map.get()));
    long index = map.get().table("docs").orElseThrow().newestSyncIndex();
    assertThatThrownBy(() -> fence.write("docs", 0, () -> "written")).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
      assertThat(Errors.code(e)).isEqualTo(ErrorInfo.Code.INDEXED_WRITE);
      assertThat(Errors.info(e).orElseThrow().getMapEpoch()).isEqualTo(map.get().epoch());
      assertThat(GlobalIndexFence.replanEpoch("a shard could not prepare: " + e.getMessage())).isEqualTo(map.get().epoch());
    });
    assertThatThrownBy(() -> fence.write("docs", index - 1, () -> "written")).hasMessageContaining("planned on map epoch " + (index - 1));
    assertThat(fence.write("docs", index, () -> "written")).as("planned with the index").isEqualTo("written");
    assertThat(fence.write("other", 0, () -> "written")).as("a table the map does not have: its shard refuses it").isEqualTo("written");
    assertThat(GlobalIndexFence.replanEpoch("item 0 is locked by an older transaction")).isZero();
  }

  /** A plain write, and a transaction's resolution (never refused, even of a table with a sync global index). */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"write", "resolution"})
  void aDrainReturnsOnlyOnceEveryWriteThatEnteredBeforeItHasLeft(String kind) throws Exception {
    GlobalIndexFence fence = new GlobalIndexFence(kind.equals("write") ? GlobalIndexFenceTest::docs : () -> withGlobalIndex(docs()));
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      java.util.function.Function<java.util.function.Supplier<String>, String> inside = kind.equals("write")
          ? step -> fence.write("docs", 0, step) : fence::pass;
      Future<String> write = threads.submit(() -> inside.apply(() -> {
        entered.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        return "landed";
      }));
      entered.await();
      Future<?> drain = threads.submit(fence::drain);
      assertThatThrownBy(() -> drain.get(200, TimeUnit.MILLISECONDS)).as("a write is still in the fence").isInstanceOf(TimeoutException.class);
      release.countDown();
      assertThat(write.get(5, TimeUnit.SECONDS)).isEqualTo("landed");
      drain.get(5, TimeUnit.SECONDS);
    } finally {
      threads.shutdownNow();
    }
  }
}
