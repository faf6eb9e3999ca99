package io.shardwise.server.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.server.storage.Mutation;
import io.shardwise.server.storage.ShardEngine;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.Versioned;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The local shard's fence, states and change log, over a real RocksDB store. */
class LocalShardsTest {

  private static final ShardRef A = new ShardRef(7, 0);
  private static final ShardRef A_NEXT = new ShardRef(7, 1);

  @TempDir Path dir;
  private ShardStore store;
  private LocalShards shards;

  @BeforeEach
  void open() {
    store = ShardStore.open(dir.resolve("db"), false);
    shards = new LocalShards(store);
    shards.own(A, 1);
    shards.own(A_NEXT, 1);
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String s(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void aSnapshotPlusItsChangeLogRebuildsTheShardExactlyOnAnotherStore() throws Exception {
    for (int i = 0; i < 1000; i++) {
      shards.put(A, b("k" + i), b("old" + i));
    }
    shards.delete(A, b("k5"), null);
    shards.put(A_NEXT, b("k1"), b("neighbour"));
    LocalShard local = shards.get(A);
    ChangeLog log = local.track();
    Path sst = dir.resolve("a.sst");
    ShardEngine.ExportStats exported = store.exportShard(A, sst);
    assertThat(exported.entries()).isEqualTo(1000); // the tombstone travels too
    assertThat(exported.liveKeys()).isEqualTo(999);
    // Written after the snapshot: only the change log carries these.
    shards.put(A, b("k1"), b("new1"));
    shards.delete(A, b("k2"), null);
    shards.put(A, b("k5"), b("back5"));
    shards.apply(List.of(Mutation.put(A, b("fresh"), b("f")), Mutation.put(A_NEXT, b("k2"), b("not tracked"))));

    try (ShardStore other = ShardStore.open(dir.resolve("other"), false)) {
      other.put(A, b("stale"), b("left over from an abandoned copy"));
      other.ingest(A, sst);
      assertThat(other.get(A, b("stale"))).isNull();
      List<byte[]> changed = log.drain();
      assertThat(changed).hasSize(4);
      other.writeStored(A, store.readStored(changed));
      assertThat(log.pending()).isZero();
      // Values and versions are identical on both sides, deletes included.
      for (String k : List.of("k0", "k1", "k2", "k5", "k999", "fresh")) {
        Versioned mine = store.get(A, b(k));
        Versioned theirs = other.get(A, b(k));
        if (mine == null) {
          assertThat(theirs).as(k).isNull();
        } else {
          assertThat(s(theirs.value())).as(k).isEqualTo(s(mine.value()));
          assertThat(theirs.version()).as(k).isEqualTo(mine.version());
        }
      }
      assertThat(store.get(A, b("k5")).version()).isEqualTo(3); // put, delete, put: the sequence continues
      assertThat(other.put(A, b("k5"), b("next"))).isEqualTo(4);
      assertThat(other.get(A_NEXT, b("k1"))).isNull(); // only the tracked shard moved
      assertThatThrownBy(() -> other.writeStored(A, store.readStored(List.of(A_NEXT.storeKey(b("k1"))))))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not belong");
    }
    local.resume();
  }

  @Test
  void aPausedShardRefusesWritesUntilResumedAndOtherShardsGoOn() throws Exception {
    LocalShard local = shards.get(A);
    local.track();
    local.pause(false);
    assertThatThrownBy(() -> shards.put(A, b("k"), b("v"))).isInstanceOf(ShardFencedException.class);
    assertThatThrownBy(() -> shards.delete(A, b("k"), null)).isInstanceOf(ShardFencedException.class);
    assertThatThrownBy(() -> shards.apply(List.of(Mutation.put(A_NEXT, b("x"), b("y")), Mutation.put(A, b("k"), b("v")))))
        .isInstanceOf(ShardFencedException.class);
    assertThat(shards.get(A_NEXT, b("x"))).as("a refused batch writes nothing").isNull();
    assertThat(shards.get(A, b("k"))).isNull(); // reads go on until the cutover instant
    shards.put(A_NEXT, b("x"), b("y"));
    local.pause(true);
    assertThatThrownBy(() -> shards.get(A, b("k"))).isInstanceOf(ShardFencedException.class);
    ExecutorService waiter = Executors.newSingleThreadExecutor();
    try {
      ShardFencedException refused = org.assertj.core.api.Assertions.catchThrowableOfType(ShardFencedException.class,
          () -> shards.put(A, b("k"), b("v")));
      assertThat(refused.awaitOpen(Duration.ofMillis(1))).as("still paused").isFalse();
      Future<Boolean> opened = waiter.submit(() -> refused.awaitOpen(Duration.ofSeconds(10)));
      local.resume();
      assertThat(opened.get(10, TimeUnit.SECONDS)).isTrue();
    } finally {
      waiter.shutdownNow();
    }
    assertThat(shards.put(A, b("k"), b("v"))).isEqualTo(1);
    local.track();
    assertThatThrownBy(local::track).isInstanceOf(IllegalStateException.class).hasMessageContaining("already being moved");
  }

  @Test
  void aHandedOffShardServesNothingAndAHandOffWaitsForTheWriteInFlight() throws Exception {
    shards.put(A, b("k"), b("before"));
    // A write holds the fence shared across its store call; the hand-off must wait for it.
    LocalShard local = shards.get(A);
    local.enter(true);
    CountDownLatch handedOff = new CountDownLatch(1);
    Thread t = new Thread(() -> {
      shards.handOff(A);
      handedOff.countDown();
    });
    t.start();
    assertThat(handedOff.await(200, TimeUnit.MILLISECONDS)).as("the hand-off waits for the write in flight").isFalse();
    local.exit();
    assertThat(handedOff.await(10, TimeUnit.SECONDS)).isTrue();
    t.join();

    assertThat(local.state()).isEqualTo(LocalShard.State.HANDED_OFF);
    assertThatThrownBy(() -> shards.put(A, b("k"), b("after"))).isInstanceOf(ShardFencedException.class)
        .hasMessageContaining("handed off");
    assertThatThrownBy(() -> shards.get(A, b("k"))).isInstanceOf(ShardFencedException.class);
    assertThatThrownBy(() -> shards.scan(A, new byte[0], null, 10)).isInstanceOf(ShardFencedException.class);
    assertThatThrownBy(local::track).isInstanceOf(IllegalStateException.class);
    assertThat(s(store.get(A, b("k")).value())).as("the data stays in the store").isEqualTo("before");
    assertThatThrownBy(() -> shards.put(new ShardRef(9, 9), b("k"), b("v"))).isInstanceOf(ShardFencedException.class)
        .hasMessageContaining("not held");

    shards.own(A, 3); // a newer map gives it back (after a move back, say)
    assertThat(local.state()).isEqualTo(LocalShard.State.SERVING);
    assertThat(local.epoch()).isEqualTo(3);
    assertThat(shards.put(A, b("k"), b("again"))).isEqualTo(2);
  }

  @Test
  void housekeepingRunsInsideTheFenceAndNeverWhileAMoveCopiesTheShard() {
    shards.put(A, b("k"), b("v"));
    shards.delete(A, b("k"), null);
    long cutoff = System.currentTimeMillis() + 1;
    LocalShard local = shards.get(A);
    local.track();
    assertThat(shards.maintain(A, () -> store.purgeTombstones(A, cutoff, new byte[0]))).as("a move is copying A").isEmpty();
    local.resume();
    assertThat(shards.maintain(A, () -> store.purgeTombstones(A, cutoff, new byte[0]).purged())).contains(1);
    local.pause(false);
    assertThat(shards.maintain(A, () -> 1)).as("paused for a cutover").isEmpty();
    local.resume();
    shards.handOff(A);
    assertThat(shards.maintain(A, () -> 1)).as("handed off").isEmpty();
    assertThat(shards.maintain(new ShardRef(9, 9), () -> 1)).as("not held").isEmpty();
  }
}
