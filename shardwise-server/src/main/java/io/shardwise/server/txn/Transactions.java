package io.shardwise.server.txn;

import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TableKey;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.server.storage.Intent;
import io.shardwise.server.storage.KeyLockedException;
import io.shardwise.server.txn.Participants.RecordStep;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cross-shard transactions: two-phase commit with write intents, decided by one record
 * (Percolator's primary, CockroachDB's transaction record).
 *
 * <p><b>The protocol.</b> The coordinator (the node a client asked) writes the transaction's record,
 * PENDING, beside its anchor key (the first item's), in the anchor's shard. Then each item's shard
 * checks the item's condition and writes an intent — a lock on the key holding its new value and the
 * version it will get — through its ordinary write path (replicated, moved, split and merged with
 * the key). If every item is prepared, one compare-and-set at the anchor turns the record COMMITTED;
 * that is the commit point. Then the intents are resolved: each becomes its value, or, on abort,
 * goes. A condition that fails cancels the transaction: the record becomes ABORTED and the intents
 * written go.
 *
 * <p><b>Meeting an intent.</b> A read or a write that meets another transaction's intent ({@link
 * KeyLockedException}) looks at that transaction's record ({@link #resolveLock}): decided, it
 * resolves the transaction's intents as the record says and tries again; PENDING, it waits; PENDING
 * past its deadline, it aborts the record (a push) and resolves. A coordinator that dies so never
 * blocks a key much past its transaction's deadline; and since only the record decides, an intent is
 * never applied or dropped against the decision.
 *
 * <p><b>Deadlocks</b> are avoided by wait-die: a transaction whose prepare meets a younger one's
 * intent waits for it; meeting an older one's, it aborts itself (ABORTED: retry under a new token,
 * keeping the first attempt's age, so that it grows old enough to wait). Waits only ever go from
 * older to younger, so no cycle forms.
 *
 * <p>Thread-safe; every call blocks its thread while it waits for shards.
 */
public final class Transactions {

  private static final Logger LOG = LoggerFactory.getLogger(Transactions.class);

  /** The most items one transaction may hold. */
  public static final int MAX_ITEMS = 100;

  /** Points between the coordinator's steps where a test stops it, as a coordinator that dies there. */
  public interface Phases {
    Phases NONE = new Phases() {};

    /** Every item is prepared; the commit is next. */
    default void prepared(String txnId) {}

    /** The record says COMMITTED; resolving the intents is next. */
    default void committed(String txnId) {}
  }

  private final Participants shards;
  private final Duration timeout;
  private final TxnClock clock;
  private final Phases phases;

  /**
   * @param timeout how long a transaction may stay undecided: past it, anyone who meets one of its
   *     intents may abort it
   */
  public Transactions(Participants shards, Duration timeout, TxnClock clock, Phases phases) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("a transaction timeout is positive, not " + timeout);
    }
    this.shards = shards;
    this.timeout = timeout;
    this.clock = clock;
    this.phases = phases;
  }

  public Duration timeout() {
    return timeout;
  }

  // ------------------------------------------------------------------ the coordinator

  /**
   * Runs one transaction to its end.
   *
   * @param token the client's id of the transaction (empty: one is made); a repeat answers the first outcome
   * @param firstAttemptMillis when the client first tried this work (0: now): the transaction's age
   * @throws IllegalArgumentException for items that cannot form a transaction; nothing is written
   * @throws io.grpc.StatusRuntimeException if the record could not be written (nothing else was): retry under the same token
   */
  public TxnOutcome transact(List<TxnItem> items, byte[] token, long firstAttemptMillis) {
    return transact(items, token, firstAttemptMillis, Planning.PLAIN);
  }

  /**
   * How a transaction's items were planned, when its coordinator added items of its own to the
   * caller's (a global index's entries, {@link io.shardwise.server.index.GlobalIndexes}).
   *
   * @param mapEpoch the map the items were planned on: a shard whose table has a global index newer
   *     than that refuses them ({@link #plannedEpoch}), so no write lacks an index's entries
   * @param asked the caller's items, which name the transaction for a retry under the same token
   *     (the added items, planned from what the keys held, may differ between tries); null: all
   * @param onePhase whether items in one shard may commit in one phase (a table whose global indexes
   *     are checked at every prepare may not: a one-phase write carries no planning epoch)
   */
  public record Planning(long mapEpoch, List<TxnItem> asked, boolean onePhase) {
    public static final Planning PLAIN = new Planning(0, null, true);
  }

  /** The map epoch a prepare's items were planned on (its {@code meta}); 0 if they were not planned on one. */
  public static long plannedEpoch(byte[] meta) {
    return meta.length == 0 ? 0 : TxnMeta.decode(meta).plannedEpoch();
  }

  /** {@link #transact(List, byte[], long)}, with items planned as {@code planning} says. */
  public TxnOutcome transact(List<TxnItem> items, byte[] token, long firstAttemptMillis, Planning planning) {
    validate(items, token);
    if (token.length == 0) {
      token = randomToken();
    }
    TxnItem anchor = items.get(0);
    TxnId id = new TxnId(anchor.table(), anchor.key(), token);
    long now = clock.millis();
    long priority = firstAttemptMillis > 0 ? Math.min(firstAttemptMillis, now) : now;
    long deadline = now + timeout.toMillis();
    List<TableKey> keys = new ArrayList<>();
    items.forEach(i -> keys.add(new TableKey(i.table(), i.key())));
    TxnRecord begun = TxnRecord.pending(deadline, priority, digest(planning.asked() == null ? items : planning.asked()), keys);
    boolean oneTable = items.stream().allMatch(i -> i.table().equals(anchor.table()));
    if (planning.onePhase() && oneTable && shards.oneShard(items)) {
      TxnOutcome o = onePhase(id, items, begun);
      if (o != null) {
        return o;
      }
    }
    return twoPhase(id, items, begun, planning.mapEpoch());
  }

  /**
   * The one-phase commit of items that lie in one shard: their writes, their conditions and the
   * record in one atomic write of that shard. Null if they do not lie in one shard after all.
   */
  private TxnOutcome onePhase(TxnId id, List<TxnItem> items, TxnRecord begun) {
    Backoff backoff = new Backoff(clock);
    while (true) {
      Participants.OnePhase r = shards.onePhase(id.table(), items, id.token(), id.anchor(), begun.encode());
      if (r.notOneShard()) {
        return null;
      }
      if (r.existing() != null) { // a retry: the first attempt's outcome
        TxnRecord found = TxnRecord.decode(r.existing());
        if (found.digest() != begun.digest()) {
          throw new IllegalArgumentException("token " + printable(id.token()) + " was used by another transaction with other items");
        }
        return awaitDecision(id, found);
      }
      Participants.Prepared p = r.prepared();
      if (p.ok()) {
        return new TxnOutcome(TxnOutcome.Status.COMMITTED, p.versions(), List.of(), id.toString(), "");
      }
      if (p.conditionFailed()) {
        return abortOnePhase(id, begun.cancelled(p.failedItem(), p.currentVersion()));
      }
      TxnItem locked = items.get(p.failedItem());
      if (!resolveLock(p.holderTxnId(), TxnMeta.decode(p.holderMeta()), locked.table(), locked.key())) {
        if (clock.millis() > begun.deadlineMillis()) { // it holds no locks: waiting is safe, but not for ever
          return abortOnePhase(id, begun.aborted("item " + p.failedItem() + " stayed locked by another transaction"));
        }
        backoff.pause();
      }
    }
  }

  /** Two-phase commit: the record, the intents, the decision, the resolution. */
  private TxnOutcome twoPhase(TxnId id, List<TxnItem> items, TxnRecord begun, long plannedEpoch) {
    TxnItem anchor = items.get(0);
    byte[] token = id.token();
    long priority = begun.priority();
    long deadline = begun.deadlineMillis();
    byte[] stored = shards.record(anchor.table(), anchor.key(), token, RecordStep.BEGIN, begun.encode());
    TxnRecord found = TxnRecord.decode(stored);
    if (found.digest() != begun.digest()) {
      throw new IllegalArgumentException("token " + printable(token) + " was used by another transaction with other items");
    }
    if (!Arrays.equals(stored, begun.encode())) { // a retry of a transaction this token began before
      return awaitDecision(id, found);
    }

    byte[] meta = new TxnMeta(anchor.table(), anchor.key(), priority, deadline, plannedEpoch).encode();
    long[] versions = new long[items.size()];
    Map<String, List<Integer>> byTable = new LinkedHashMap<>();
    for (int i = 0; i < items.size(); i++) {
      byTable.computeIfAbsent(items.get(i).table(), t -> new ArrayList<>()).add(i);
    }
    Backoff backoff = new Backoff(clock);
    for (Map.Entry<String, List<Integer>> group : byTable.entrySet()) {
      List<TxnItem> part = new ArrayList<>();
      group.getValue().forEach(i -> part.add(items.get(i)));
      while (true) {
        if (clock.millis() > deadline) {
          return abort(id, begun.aborted("the deadline passed while preparing"));
        }
        Participants.Prepared p;
        try {
          p = shards.prepare(group.getKey(), part, token, meta);
        } catch (RuntimeException e) {
          return abort(id, begun.aborted("a shard could not prepare: " + e.getMessage()));
        }
        if (p.ok()) {
          for (int j = 0; j < part.size(); j++) {
            versions[group.getValue().get(j)] = p.versions()[j];
          }
          break;
        }
        int item = group.getValue().get(p.failedItem());
        if (p.conditionFailed()) {
          return abort(id, begun.cancelled(item, p.currentVersion()));
        }
        TxnMeta holder = TxnMeta.decode(p.holderMeta());
        if (resolveLock(p.holderTxnId(), holder, items.get(item).table(), items.get(item).key())) {
          continue; // the holder was decided and its intents resolved: prepare again
        }
        if (older(holder.priority(), p.holderTxnId(), priority, token)) {
          return abort(id, begun.aborted("item " + item + " is locked by an older transaction"));
        }
        backoff.pause(); // we are older: wait for the younger holder to finish
      }
    }

    phases.prepared(id.toString());
    byte[] after;
    try {
      after = retried(() -> shards.record(anchor.table(), anchor.key(), id.token(), RecordStep.COMMIT, begun.committed(versions).encode()));
    } catch (RuntimeException e) {
      return new TxnOutcome(TxnOutcome.Status.UNKNOWN, null, List.of(), id.toString(),
          "the commit could not be written or confirmed: " + e.getMessage());
    }
    TxnRecord decided = TxnRecord.decode(after);
    if (decided.state() == TxnRecord.State.COMMITTED) {
      phases.committed(id.toString());
    }
    resolveAll(id.token(), decided);
    return outcome(id, decided);
  }

  /** Aborts the transaction (its record, then its intents): CANCELLED if {@code aborted} names a failed condition, else ABORTED. */
  private TxnOutcome abort(TxnId id, TxnRecord aborted) {
    TxnRecord decided = aborted;
    try {
      decided = TxnRecord.decode(retried(() -> shards.record(id.table(), id.anchor(), id.token(), RecordStep.ABORT, aborted.encode())));
    } catch (RuntimeException e) {
      // Only this coordinator could commit the record, and it will not: it stays PENDING until its
      // deadline, when whoever meets an intent of it aborts it.
      LOG.debug("transaction {}: the abort was not recorded ({}); its deadline ends it", id, e.getMessage());
      return outcome(id, aborted);
    }
    // COMMITTED only if a second coordinator ran the same token at the same moment and committed: its outcome stands
    resolveAll(id.token(), decided);
    return outcome(id, decided);
  }

  /**
   * Ends a one-phase transaction its shard refused: an ABORTED record, so that no attempt of it still
   * on its way (a retry under the same token whose first try was lost in the network) can commit it
   * afterwards. A one-phase transaction has no record before that: if the abort cannot be recorded,
   * such an attempt may yet commit, so the answer is UNKNOWN, with the id to look it up.
   */
  private TxnOutcome abortOnePhase(TxnId id, TxnRecord aborted) {
    byte[] decided;
    try {
      decided = retried(() -> shards.record(id.table(), id.anchor(), id.token(), RecordStep.ABORT, aborted.encode()));
    } catch (RuntimeException e) {
      return new TxnOutcome(TxnOutcome.Status.UNKNOWN, null, List.of(), id.toString(),
          "refused at its shard, but the abort could not be recorded: " + e.getMessage());
    }
    return outcome(id, TxnRecord.decode(decided)); // COMMITTED if an earlier attempt under this token was
  }

  /** A record found PENDING (a retry of a transaction under way, or left by its coordinator), awaited or pushed; then its outcome. */
  private TxnOutcome awaitDecision(TxnId id, TxnRecord found) {
    Backoff backoff = new Backoff(clock);
    TxnRecord r = found;
    while (r.state() == TxnRecord.State.PENDING) {
      if (clock.millis() > r.deadlineMillis()) {
        r = TxnRecord.decode(shards.record(id.table(), id.anchor(), id.token(), RecordStep.PUSH, r.aborted("the deadline passed").encode()));
        if (r.state() == TxnRecord.State.PENDING) {
          backoff.pause(); // the anchor's clock has not passed the deadline yet
        }
        continue;
      }
      backoff.pause();
      r = TxnRecord.decode(shards.record(id.table(), id.anchor(), id.token(), RecordStep.READ, null));
    }
    resolveAll(id.token(), r);
    return outcome(id, r);
  }

  /**
   * The outcome of transaction {@code txnId} as its record says: PENDING while undecided (past its
   * deadline it is aborted first).
   *
   * @throws IllegalArgumentException if {@code txnId} is not a transaction id
   */
  public TxnOutcome status(String txnId) {
    TxnId id = TxnId.parse(txnId);
    byte[] stored = shards.record(id.table(), id.anchor(), id.token(), RecordStep.READ, null);
    if (stored == null) {
      return new TxnOutcome(TxnOutcome.Status.UNKNOWN, null, List.of(), txnId, "no record of this transaction: it never began");
    }
    TxnRecord r = TxnRecord.decode(stored);
    if (r.state() == TxnRecord.State.PENDING && clock.millis() > r.deadlineMillis()) {
      r = TxnRecord.decode(shards.record(id.table(), id.anchor(), id.token(), RecordStep.PUSH, r.aborted("the deadline passed").encode()));
    }
    if (r.state() != TxnRecord.State.PENDING) {
      resolveAll(id.token(), r);
    }
    return outcome(id, r);
  }

  private static TxnOutcome outcome(TxnId id, TxnRecord r) {
    switch (r.state()) {
      case COMMITTED:
        return new TxnOutcome(TxnOutcome.Status.COMMITTED, r.versions(), List.of(), id.toString(), "");
      case PENDING:
        return new TxnOutcome(TxnOutcome.Status.PENDING, null, List.of(), id.toString(), "not decided yet");
      default:
        if (r.cancelledItem() >= 0) {
          return new TxnOutcome(TxnOutcome.Status.CANCELLED, null,
              List.of(new TxnOutcome.Cancellation(r.cancelledItem(), "CONDITION_FAILED", r.currentVersion())), id.toString(), r.why());
        }
        return new TxnOutcome(TxnOutcome.Status.ABORTED, null, List.of(), id.toString(), r.why());
    }
  }

  // ------------------------------------------------------------------ reads

  /** A read transaction's answer: per key its value, and how many rounds of reads it took. */
  public record Snapshot(List<Participants.Read> reads, int rounds) {}

  /**
   * Reads {@code keys} (up to 100, of any tables and shards) as of one moment: a round of reads of
   * every key, then another; if every key's version is the same in both, no key changed between
   * them (versions only rise, with every write and every committed transaction), so the first
   * round's values all held at the moment between the rounds. Otherwise the second round is the
   * first of the next try. Each read is linearizable and resolves, or waits behind, the intents it
   * meets, so a committed transaction is never seen in part.
   *
   * @throws IllegalArgumentException for no keys, more than 100, or a key named twice
   * @throws io.grpc.StatusRuntimeException ABORTED if the keys kept changing for the whole transaction timeout
   */
  public Snapshot read(List<TableKey> keys) {
    if (keys.isEmpty() || keys.size() > MAX_ITEMS) {
      throw new IllegalArgumentException("a read transaction names 1 to " + MAX_ITEMS + " keys, not " + keys.size());
    }
    if (new HashSet<>(keys).size() != keys.size()) {
      throw new IllegalArgumentException("a read transaction names each key once");
    }
    long deadline = clock.millis() + timeout.toMillis();
    Backoff backoff = new Backoff(clock);
    List<Participants.Read> before = readRound(keys);
    for (int round = 2; ; round++) {
      List<Participants.Read> after = readRound(keys);
      boolean same = true;
      for (int i = 0; i < keys.size() && same; i++) {
        same = before.get(i).version() == after.get(i).version();
      }
      if (same) {
        return new Snapshot(before, round);
      }
      if (clock.millis() > deadline) {
        throw io.grpc.Status.ABORTED.withDescription("the keys kept changing: no two rounds of reads in " + timeout
            + " agreed; retry").asRuntimeException();
      }
      if (round % 4 == 0) {
        backoff.pause();
      }
      before = after;
    }
  }

  private List<Participants.Read> readRound(List<TableKey> keys) {
    Participants.Read[] out = new Participants.Read[keys.size()];
    Map<String, List<Integer>> byTable = new LinkedHashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      byTable.computeIfAbsent(keys.get(i).table(), t -> new ArrayList<>()).add(i);
    }
    for (Map.Entry<String, List<Integer>> e : byTable.entrySet()) {
      List<Key> part = new ArrayList<>();
      e.getValue().forEach(i -> part.add(keys.get(i).key()));
      List<Participants.Read> read = shards.read(e.getKey(), part);
      for (int j = 0; j < part.size(); j++) {
        out[e.getValue().get(j)] = read.get(j);
      }
    }
    return Arrays.asList(out);
  }

  // ------------------------------------------------------------------ meeting intents

  /**
   * A read or write met another transaction's intent: looks at its record and, if it is decided (or
   * past its deadline, then aborted here), resolves its intents. Returns true if the key is free
   * now (try again at once), false if the transaction is still under way (wait a little, try again).
   */
  public boolean resolveLock(String table, KeyLockedException locked) {
    return resolveLock(table, locked.key(), locked.intent());
  }

  /** As {@link #resolveLock(String, KeyLockedException)}, for {@code intent} met on {@code key} (encoded). */
  public boolean resolveLock(String table, byte[] key, Intent intent) {
    return resolveLock(intent.txnId(), TxnMeta.decode(intent.meta()), table, Key.decode(key));
  }

  private boolean resolveLock(byte[] holderTxnId, TxnMeta holder, String table, Key key) {
    byte[] stored = shards.record(holder.anchorTable(), holder.anchor(), holderTxnId, RecordStep.READ, null);
    TxnRecord r;
    if (stored == null) { // no record: never begun here, or forgotten; an ABORTED record makes sure it never commits
      r = TxnRecord.decode(shards.record(holder.anchorTable(), holder.anchor(), holderTxnId, RecordStep.ABORT,
          TxnRecord.pending(holder.deadlineMillis(), holder.priority(), 0, List.of()).aborted("no record found").encode()));
    } else {
      r = TxnRecord.decode(stored);
    }
    if (r.state() == TxnRecord.State.PENDING && clock.millis() > holder.deadlineMillis()) {
      r = TxnRecord.decode(shards.record(holder.anchorTable(), holder.anchor(), holderTxnId, RecordStep.PUSH,
          r.aborted("the deadline passed; aborted by a transaction or request that met its intent").encode()));
    }
    if (r.state() == TxnRecord.State.PENDING) {
      return false;
    }
    if (r.keys().isEmpty()) { // aborted here, its keys unknown: the key met is resolved, the others when met
      shards.resolve(table, List.of(key), holderTxnId, false);
      return true;
    }
    resolveAll(holderTxnId, r);
    return true;
  }

  /**
   * Resolves every intent of a decided transaction as its record says; true if every shard
   * answered (else whoever meets one later resolves it — while the record is kept).
   */
  private boolean resolveAll(byte[] txnId, TxnRecord decided) {
    boolean commit = decided.state() == TxnRecord.State.COMMITTED;
    Map<String, List<Key>> byTable = new LinkedHashMap<>();
    decided.keys().forEach(k -> byTable.computeIfAbsent(k.table(), t -> new ArrayList<>()).add(k.key()));
    boolean all = true;
    for (Map.Entry<String, List<Key>> e : byTable.entrySet()) {
      try {
        shards.resolve(e.getKey(), e.getValue(), txnId, commit);
      } catch (RuntimeException failure) {
        all = false;
        LOG.debug("resolving the intents of {} in {} failed ({}); they are resolved when met", printable(txnId), e.getKey(),
            failure.getMessage());
      }
    }
    return all;
  }

  // ------------------------------------------------------------------ purging records

  /**
   * Purges the records of transactions decided before {@code cutoffMillis} (their deadlines):
   * resolves each one's intents as it says (whoever met them may have already), then removes it by
   * a step that removes only a decided record. A record left PENDING past its deadline by a dead
   * coordinator is aborted first. After the purge a retry under the same token runs the
   * transaction again, as a write id is forgotten after its horizon. Returns how many went.
   *
   * @param records records of one shard of {@code table} ({@link
   *     io.shardwise.server.storage.ShardEngine#txnRecords}): each one's anchor (encoded, its
   *     partition key alone) and id, with its bytes
   */
  public int purge(String table, List<StoredRecord> records, long cutoffMillis) {
    int purged = 0;
    for (StoredRecord stored : records) {
      TxnRecord r = TxnRecord.decode(stored.record());
      if (r.deadlineMillis() >= cutoffMillis) {
        continue;
      }
      Key anchor = Key.decode(stored.anchor());
      if (r.state() == TxnRecord.State.PENDING) {
        r = TxnRecord.decode(shards.record(table, anchor, stored.txnId(), RecordStep.PUSH, r.aborted("the deadline passed").encode()));
        if (r.state() == TxnRecord.State.PENDING) {
          continue;
        }
      }
      // Only once every intent is resolved: an intent met with no record is aborted, which would be
      // wrong for a committed transaction's.
      if (!resolveAll(stored.txnId(), r)) {
        continue;
      }
      if (shards.record(table, anchor, stored.txnId(), RecordStep.FORGET, r.encode()) == null) {
        purged++;
      }
    }
    return purged;
  }

  /** A transaction's record as a shard keeps it: its anchor (encoded), its id, its bytes. */
  public record StoredRecord(byte[] anchor, byte[] txnId, byte[] record) {}

  // ------------------------------------------------------------------ the pieces

  private static void validate(List<TxnItem> items, byte[] token) {
    if (items.isEmpty() || items.size() > MAX_ITEMS) {
      throw new IllegalArgumentException("a transaction holds 1 to " + MAX_ITEMS + " items, not " + items.size());
    }
    if (token.length > TxnId.MAX_TOKEN_BYTES) {
      throw new IllegalArgumentException("a transaction's token is at most " + TxnId.MAX_TOKEN_BYTES + " bytes, not " + token.length);
    }
    Set<TableKey> seen = new HashSet<>();
    for (int i = 0; i < items.size(); i++) {
      if (!seen.add(new TableKey(items.get(i).table(), items.get(i).key()))) {
        throw new IllegalArgumentException("item " + i + " names the same key as an earlier item (" + items.get(i).table() + "/"
            + items.get(i).key() + "): a transaction touches a key once");
      }
    }
  }

  /** True if the transaction of {@code (p1, id1)} is older than {@code (p2, id2)}: lower first-attempt time, then lower id. */
  static boolean older(long p1, byte[] id1, long p2, byte[] id2) {
    return p1 != p2 ? p1 < p2 : Arrays.compareUnsigned(id1, id2) < 0;
  }

  private static long digest(List<TxnItem> items) {
    com.google.common.hash.Hasher h = com.google.common.hash.Hashing.murmur3_128().newHasher();
    for (TxnItem i : items) {
      h.putString(i.table(), StandardCharsets.UTF_8).putBytes(i.key().encode()).putInt(i.op().ordinal()).putBytes(i.value())
          .putLong(i.expectedVersion());
    }
    return h.hash().asLong();
  }

  private static byte[] randomToken() {
    byte[] t = new byte[16];
    java.util.concurrent.ThreadLocalRandom.current().nextBytes(t);
    return t;
  }

  private static String printable(byte[] token) {
    return java.util.HexFormat.of().formatHex(token);
  }

  /** A record step tried up to three times, for a shard that is changing hands. */
  private byte[] retried(java.util.function.Supplier<byte[]> step) {
    RuntimeException last = null;
    Backoff backoff = new Backoff(clock);
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        return step.get();
      } catch (RuntimeException e) {
        last = e;
        backoff.pause();
      }
    }
    throw last;
  }

  /** Pauses of up to 1 ms doubling to 20 ms. */
  private static final class Backoff {
    private final TxnClock clock;
    private long millis = 1;

    Backoff(TxnClock clock) {
      this.clock = clock;
    }

    void pause() {
      clock.pause(millis);
      millis = Math.min(20, millis * 2);
    }
  }
}
