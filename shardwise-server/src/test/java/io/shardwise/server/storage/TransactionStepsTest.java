package io.shardwise.server.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A transaction's steps on one shard ({@link TxnStep}) on a real RocksDB: intents lock keys, resolves apply them, records change by compare-and-set. */
class TransactionStepsTest {

  private static final ShardRef A = new ShardRef(7, 0);
  private static final byte[] T1 = b("txn-1");
  private static final byte[] T2 = b("txn-2");

  @TempDir Path dir;
  private ShardStore store;

  @BeforeEach
  void open() {
    store = ShardStore.open(dir.resolve("db"), false);
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] k(String partition) {
    return Key.of(b(partition), b("s")).encode();
  }

  private static Mutation prepare(byte[] txn, byte[] key, Intent.Op op, String value, long expected) {
    return Mutation.txn(A, key, expected, TxnStep.prepare(new Intent(txn, op, value == null ? new byte[0] : b(value), 0, b("meta"))));
  }

  private static Mutation resolve(byte[] txn, byte[] key, boolean commit) {
    return Mutation.txn(A, key, Mutation.ANY, TxnStep.resolve(txn, commit));
  }

  @Test
  void anIntentLocksItsKeyUntilItsCommitWritesTheVersionItPromised() throws Exception {
    store.put(A, k("a"), b("old"));
    long[] promised = store.apply(List.of(prepare(T1, k("a"), Intent.Op.PUT, "new", 1), prepare(T1, k("b"), Intent.Op.PUT, "fresh", 0)));
    assertThat(promised).containsExactly(2, 1);

    assertThatThrownBy(() -> store.get(A, k("a"))).isInstanceOf(KeyLockedException.class)
        .satisfies(e -> assertThat(((KeyLockedException) e).intent().txnId()).isEqualTo(T1));
    assertThatThrownBy(() -> store.put(A, k("a"), b("other"))).isInstanceOf(KeyLockedException.class);
    assertThatThrownBy(() -> store.apply(List.of(prepare(T2, k("b"), Intent.Op.DELETE, null, Mutation.ANY))))
        .isInstanceOf(KeyLockedException.class);
    assertThat(store.apply(List.of(prepare(T1, k("a"), Intent.Op.PUT, "new", 1)))).as("a prepare repeated").containsExactly(2);
    assertThat(store.get(A, k("c"))).as("other keys are free").isNull();

    assertThat(store.apply(List.of(resolve(T1, k("a"), true), resolve(T1, k("b"), true)))).containsExactly(2, 1);
    assertThat(store.get(A, k("a"))).satisfies(v -> {
      assertThat(new String(v.value(), StandardCharsets.UTF_8)).isEqualTo("new");
      assertThat(v.version()).isEqualTo(2);
    });
    assertThat(store.get(A, k("b")).version()).isEqualTo(1);
    assertThat(store.apply(List.of(resolve(T1, k("a"), true)))).as("resolved before: nothing to do").containsExactly(-1);
    assertThat(store.put(A, k("a"), b("after"))).isEqualTo(3);
  }

  @Test
  void anAbortedIntentLeavesTheKeyAsItWas() throws Exception {
    store.put(A, k("a"), b("old"));
    store.apply(List.of(prepare(T1, k("a"), Intent.Op.DELETE, null, Mutation.EXISTS)));
    assertThat(store.apply(List.of(resolve(T2, k("a"), false)))).as("another transaction's resolve").containsExactly(-1);
    assertThatThrownBy(() -> store.get(A, k("a"))).isInstanceOf(KeyLockedException.class);
    store.apply(List.of(resolve(T1, k("a"), false)));
    assertThat(store.get(A, k("a")).version()).isEqualTo(1);
  }

  @Test
  void aFailedConditionNamesItsItemAndWritesNoIntent() {
    store.put(A, k("a"), b("old"));
    assertThatThrownBy(() -> store.apply(List.of(prepare(T1, k("b"), Intent.Op.PUT, "x", Mutation.ANY),
        prepare(T1, k("a"), Intent.Op.CHECK, null, 0))))
        .isInstanceOf(VersionMismatchException.class)
        .satisfies(e -> {
          assertThat(((VersionMismatchException) e).index()).isEqualTo(1);
          assertThat(((VersionMismatchException) e).actual()).isEqualTo(1);
        });
    assertThat(store.get(A, k("b"))).as("nothing of the batch was written").isNull();
    assertThatThrownBy(() -> store.apply(List.of(prepare(T1, k("z"), Intent.Op.CHECK, null, Mutation.EXISTS))))
        .isInstanceOf(VersionMismatchException.class);
  }

  @Test
  void aCommittedDeleteLeavesATombstoneAndACheckWritesNothing() throws Exception {
    store.put(A, k("a"), b("old"));
    store.put(A, k("c"), b("checked"));
    assertThat(store.apply(List.of(prepare(T1, k("a"), Intent.Op.DELETE, null, 1), prepare(T1, k("c"), Intent.Op.CHECK, null, 1),
        prepare(T1, k("d"), Intent.Op.DELETE, null, Mutation.ANY)))).containsExactly(2, 0, 0);
    store.apply(List.of(resolve(T1, k("a"), true), resolve(T1, k("c"), true), resolve(T1, k("d"), true)));
    assertThat(store.get(A, k("a"))).isNull();
    assertThat(store.put(A, k("a"), b("again"))).as("versions go on above the tombstone").isEqualTo(3);
    assertThat(store.get(A, k("c")).version()).isEqualTo(1);
    assertThat(store.get(A, k("d"))).isNull();
  }

  @Test
  void aRecordChangesOnlyAsItsStepSays() throws Exception {
    byte[] anchor = k("a");
    store.apply(List.of(Mutation.txn(A, anchor, Mutation.ANY, TxnStep.record(T1, r -> r == null ? b("PENDING") : r))));
    byte[][] seen = new byte[1][];
    store.apply(List.of(Mutation.txn(A, anchor, Mutation.ANY, TxnStep.record(T1, r -> {
      seen[0] = r;
      return b("COMMITTED");
    }))));
    assertThat(new String(seen[0], StandardCharsets.UTF_8)).isEqualTo("PENDING");
    store.apply(List.of(Mutation.txn(A, anchor, Mutation.ANY, TxnStep.record(T1, r -> {
      seen[0] = r;
      return r;
    }))));
    assertThat(new String(seen[0], StandardCharsets.UTF_8)).isEqualTo("COMMITTED");
    assertThat(store.get(A, anchor)).as("a record is not a key's value").isNull();
    assertThat(store.scan(A, new byte[0], null, 10).entries()).as("nor is it scanned").isEmpty();
    store.apply(List.of(Mutation.txn(A, anchor, Mutation.ANY, TxnStep.record(T1, r -> null))));
    store.apply(List.of(Mutation.txn(A, anchor, Mutation.ANY, TxnStep.record(T1, r -> {
      seen[0] = r;
      return r;
    }))));
    assertThat(seen[0]).as("removed").isNull();
  }
}
