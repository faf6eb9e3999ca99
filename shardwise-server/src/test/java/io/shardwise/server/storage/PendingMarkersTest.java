package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Replication;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pending markers of asynchronous global indexes in the store: written with each write of a row
 * (plain, batch, a transaction's commit), found by one seek per shard, losing only the changes a
 * reconcile names, and carried by a shard's export into another store with their pending entries.
 */
class PendingMarkersTest {

  @TempDir Path dir;
  private ShardStore store;
  private Table table;
  private ShardRef shard;

  @BeforeEach
  void open() {
    store = ShardStore.open(dir.resolve("db"), false);
    PartitionerSpec spec = PartitionerSpec.builder(Strategy.HASHRANGE).build();
    ShardLayout layout = ShardLayout.initial(spec, 1, 1, KeySample.empty()).layout();
    ShardMap map = ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("docs", spec, layout, List.of(NodeId.of("n1")),
        List.of(List.of()), Replication.of(1), ValueFormat.JSON).build());
    IndexDef color = new IndexDef(map.epoch() + 1, List.of("color"), IndexDef.Scope.GLOBAL, IndexDef.State.READY, true);
    map = map.apply(ShardMapDelta.on(map).add(new ShardMapDelta.SetIndexes("docs", List.of(color))).build());
    table = map.table("docs").orElseThrow();
    shard = ShardRef.of(table, table.shards().get(0).id().number());
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static byte[] doc(String color) {
    return ("{\"color\": \"" + color + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] key(String k) {
    return Key.of(k).encode();
  }

  @Test
  void writesLeaveMarkersOnlyOnceTheTableHasAnAsyncIndexAndAReconcileRemovesOnlyTheChangesItNames() throws Exception {
    store.put(shard, key("before"), doc("red"));
    store.defineIndexes(table);
    assertThat(store.pendingRows(shard, new byte[0], 10)).as("a row written before the index: its backfill's").isEmpty();
    long v1 = store.put(shard, key("a"), doc("red"));
    long v2 = store.put(shard, key("a"), doc("blue"));
    store.put(shard, key("b"), doc("green"));
    store.delete(shard, key("before"));
    List<ShardStore.PendingRow> rows = store.pendingRows(shard, new byte[0], 10);
    assertThat(rows).extracting(r -> Key.decode(r.key()).toString()).containsExactlyInAnyOrder(Key.of("a").toString(),
        Key.of("b").toString(), Key.of("before").toString());
    PendingMarker a = store.pendingMarker(shard, key("a"));
    assertThat(a.since()).as("pending since its first write").isEqualTo(v1);
    assertThat(a.latest()).isEqualTo(v2);
    assertThat(store.pendingSummary(shard).rows()).isEqualTo(3);
    assertThat(store.scan(shard, new byte[0], null, 100).entries()).as("markers are no rows").hasSize(2);

    // Reconciled through v1 only: a's marker keeps v2.
    store.apply(List.of(Mutation.reconciled(shard, key("a"), v1)));
    assertThat(store.pendingMarker(shard, key("a"))).satisfies(m -> {
      assertThat(m.since()).isEqualTo(v2);
      assertThat(m.pending(v1)).isFalse();
      assertThat(m.pending(v2)).isTrue();
    });
    // Through v2: gone, with its pending entry.
    store.apply(List.of(Mutation.reconciled(shard, key("a"), v2), Mutation.reconciled(shard, key("nothing"), 5)));
    assertThat(store.pendingMarker(shard, key("a"))).isNull();
    assertThat(store.pendingRows(shard, new byte[0], 10)).hasSize(2);
    // A write after a reconcile starts a marker afresh.
    long v3 = store.put(shard, key("a"), doc("black"));
    assertThat(store.pendingMarker(shard, key("a")).since()).isEqualTo(v3);
    // Paged from a key.
    List<ShardStore.PendingRow> all = store.pendingRows(shard, new byte[0], 10);
    assertThat(store.pendingRows(shard, all.get(1).key(), 10)).hasSize(all.size() - 1);
  }

  @Test
  void aTransactionsCommitLeavesAMarkerAndAMovedCopyBringsItsMarkersAndTheirEntries() throws Exception {
    store.defineIndexes(table);
    byte[] txnId = "txn-1".getBytes(StandardCharsets.UTF_8);
    store.apply(List.of(Mutation.txn(shard, key("t"), Mutation.ANY, TxnStep.prepare(new Intent(txnId, Intent.Op.PUT, doc("red"), 0, new byte[0])))));
    assertThat(store.pendingMarker(shard, key("t"))).as("an intent is no change yet").isNull();
    store.apply(List.of(Mutation.txn(shard, key("t"), Mutation.ANY, TxnStep.resolve(txnId, true))));
    assertThat(store.pendingMarker(shard, key("t"))).isNotNull();
    store.put(shard, key("u"), doc("blue"));

    Path file = dir.resolve("copy.sst");
    store.exportShard(shard, file);
    try (ShardStore other = ShardStore.open(dir.resolve("other"), false)) {
      other.defineIndexes(table);
      other.ingest(shard, file);
      assertThat(other.pendingRows(shard, new byte[0], 10)).as("the copy's markers, found by their entries").hasSize(2);
      other.drop(shard);
      assertThat(other.pendingRows(shard, new byte[0], 10)).isEmpty();
    }
  }
}
