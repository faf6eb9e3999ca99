package io.shardwise.server.txn;

import io.grpc.Status;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TableKey;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.server.storage.KeyLockedException;
import io.shardwise.server.storage.ScanPage;
import io.shardwise.server.storage.ShardRef;
import io.shardwise.server.storage.ShardStore;
import io.shardwise.server.storage.ShardEngine.StoredValue;
import io.shardwise.server.storage.Versioned;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.function.Supplier;

/**
 * One seeded schedule of cross-shard transactions: the real {@link Transactions} coordinators, and
 * the real {@link ShardSteps} on the shards of one RocksDB {@link ShardStore}, between them a
 * network that loses requests and replies, and coordinators that crash (kill -9: their thread ends
 * at that step, what they wrote stays). Several coordinators run at once, interleaved by a
 * scheduler that lets exactly one of them take a step at a time, in an order the seed picks, on a
 * clock the schedule advances — so a seed always runs the same way, and a wait (wait-die, a
 * deadline) costs no real time.
 *
 * <p>The work is a bank: transfers between accounts on several shards, each writing a row of its
 * own (its proof of having committed), some in one shard (the one-phase path), and read
 * transactions of every account. A client whose transaction ended in an exception retries it under
 * the same token, sometimes. The checks, once every coordinator is done and the clock is past every
 * deadline: a transfer answered COMMITTED has its row, one answered CANCELLED or ABORTED has not;
 * each balance is its opening plus exactly the transfers whose row exists (none half applied);
 * every read transaction saw the opening total; once every key has been read, no intent is left on
 * any shard; and a purge removes every record.
 */
final class TxnSimulation {

  static final String TABLE = "bank";
  private static final long TABLE_ID = 1;
  private static final int SHARDS = 4;
  private static final int ACCOUNTS = 10;
  private static final long OPENING = 1_000;
  private static final Duration TIMEOUT = Duration.ofMillis(200);

  /** A coordinator's process dies at this step: an Error, so nothing in the protocol catches it. */
  static final class Crash extends Error {
    private static final long serialVersionUID = 1L;

    Crash() {
      super("the coordinator crashed", null, false, false);
    }
  }

  /** What a schedule did. */
  record Stats(int transfers, int committed, int cancelled, int aborted, int unknown, int onePhase, int reads, int crashes,
      int lostRequests, int lostReplies, int retries, long simulatedMillis) {}

  private final Random random;
  private final ShardStore store;
  private final Scheduler scheduler;
  private final Transactions txns;
  private final ShardSteps steps;
  private long now = 1_000_000;
  private boolean faults = true;
  private int crashes;
  private int lostRequests;
  private int lostReplies;

  private record Transfer(String id, int from, int to, long amount, boolean onePhase, String outcome) {}

  private final List<Transfer> transfers = new ArrayList<>();
  private final List<String> broken = new ArrayList<>();
  private int reads;
  private int retries;

  TxnSimulation(long seed, ShardStore store) {
    this.random = new Random(seed);
    this.store = store;
    this.scheduler = new Scheduler(random);
    TxnClock clock = new TxnClock() {
      @Override
      public long millis() {
        return now;
      }

      @Override
      public void pause(long upToMillis) {
        now += 1 + random.nextInt((int) Math.max(1, upToMillis));
        scheduler.yield();
      }
    };
    this.steps = new ShardSteps(store::apply, () -> now);
    this.txns = new Transactions(new SimParticipants(), TIMEOUT, clock, Transactions.Phases.NONE);
  }

  Stats run(int coordinators, int transfersEach, int audits) throws Exception {
    for (int i = 0; i < ACCOUNTS; i++) {
      store.put(shardOf(account(i)), account(i).encode(), balance(OPENING));
    }
    List<Runnable> actors = new ArrayList<>();
    for (int c = 0; c < coordinators; c++) {
      int worker = c;
      actors.add(() -> {
        for (int n = 0; n < transfersEach; n++) {
          transfer("t" + worker + "-" + n);
        }
      });
    }
    actors.add(() -> {
      for (int n = 0; n < audits; n++) {
        audit();
      }
    });
    scheduler.run(actors);
    faults = false;
    now += TIMEOUT.toMillis() * 2; // past every deadline: whoever meets an undecided transaction aborts it
    check();
    Map<String, Integer> outcomes = new TreeMap<>();
    transfers.forEach(t -> outcomes.merge(t.outcome(), 1, Integer::sum));
    return new Stats(transfers.size(), outcomes.getOrDefault("COMMITTED", 0), outcomes.getOrDefault("CANCELLED", 0),
        outcomes.getOrDefault("ABORTED", 0), outcomes.getOrDefault("UNKNOWN", 0), (int) transfers.stream().filter(Transfer::onePhase).count(),
        reads, crashes, lostRequests, lostReplies, retries, now - 1_000_000);
  }

  // ------------------------------------------------------------------ the work

  /** One transfer as a client does it: a consistent read of both accounts, then a transaction conditioned on their versions. */
  private void transfer(String id) {
    boolean onePhase = random.nextInt(4) == 0;
    int from = random.nextInt(ACCOUNTS);
    int to = onePhase ? sameShardAs(from) : (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
    if (to < 0) {
      onePhase = false;
      to = (from + 1) % ACCOUNTS;
    }
    long amount = 1 + random.nextInt(50);
    List<Participants.Read> read = consistentRead(List.of(new TableKey(TABLE, account(from)), new TableKey(TABLE, account(to))));
    if (read == null) {
      return; // never begun
    }
    String outcome;
    try {
      Key row = onePhase ? rowBeside(id, account(from)) : Key.of("xfer-" + id);
      List<TxnItem> items = List.of(
          TxnItem.put(TABLE, account(from), balance(balanceOf(read.get(0)) - amount)).onlyIf(read.get(0).version()),
          TxnItem.put(TABLE, account(to), balance(balanceOf(read.get(1)) + amount)).onlyIf(read.get(1).version()),
          TxnItem.put(TABLE, row, (from + ">" + to + ":" + amount).getBytes(StandardCharsets.UTF_8)).onlyIf(TxnItem.ABSENT));
      outcome = transact(items, id);
    } catch (Crash | RuntimeException e) {
      outcome = "UNKNOWN"; // the reads failed, or the client gave up: the transaction may or may not have begun
    }
    transfers.add(new Transfer(id, from, to, amount, onePhase, outcome));
  }

  /** Runs a transaction; after an exception the client retries under the same token, up to twice, half the time. */
  private String transact(List<TxnItem> items, String id) {
    byte[] token = id.getBytes(StandardCharsets.UTF_8);
    long firstAttempt = now;
    for (int attempt = 0; ; attempt++) {
      try {
        TxnOutcome o = txns.transact(items, token, firstAttempt);
        return o.status() == TxnOutcome.Status.PENDING ? "UNKNOWN" : o.status().name();
      } catch (Crash | RuntimeException e) {
        if (attempt == 2 || random.nextBoolean()) {
          return "UNKNOWN";
        }
        retries++;
      }
    }
  }

  private void audit() {
    List<TableKey> keys = new ArrayList<>();
    for (int i = 0; i < ACCOUNTS; i++) {
      keys.add(new TableKey(TABLE, account(i)));
    }
    List<Participants.Read> read = consistentRead(keys);
    if (read == null) {
      return;
    }
    long total = 0;
    for (Participants.Read r : read) {
      total += balanceOf(r);
    }
    reads++;
    if (total != ACCOUNTS * OPENING) {
      broken.add("a read transaction saw a total of " + total);
    }
  }

  /** A read transaction, asked again (of another node) while its node crashes or its reads are lost, up to 10 times; null if never answered. */
  private List<Participants.Read> consistentRead(List<TableKey> keys) {
    for (int attempt = 0; attempt < 10; attempt++) {
      try {
        return txns.read(keys).reads();
      } catch (Crash | RuntimeException e) {
        // the next attempt
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ the checks

  private void check() {
    long[] expected = new long[ACCOUNTS];
    Arrays.fill(expected, OPENING);
    for (Transfer t : transfers) {
      Key row = t.onePhase() ? rowBeside(t.id(), account(t.from())) : Key.of("xfer-" + t.id());
      boolean applied = readOne(row).value() != null;
      if (applied) {
        expected[t.from()] -= t.amount();
        expected[t.to()] += t.amount();
      }
      if (applied ? t.outcome().equals("CANCELLED") || t.outcome().equals("ABORTED") : t.outcome().equals("COMMITTED")) {
        broken.add(t + (applied ? " was applied" : " is missing"));
      }
    }
    for (int i = 0; i < ACCOUNTS; i++) {
      long actual = balanceOf(readOne(account(i)));
      if (actual != expected[i]) {
        broken.add("account " + i + " holds " + actual + "; its committed transfers make " + expected[i]);
      }
    }
    List<Transactions.StoredRecord> records = new ArrayList<>();
    for (int s = 0; s < SHARDS; s++) {
      ShardRef shard = new ShardRef(TABLE_ID, s);
      ScanPage page = store.scan(shard, new byte[0], null, 100_000);
      for (ScanPage.Locked l : page.locked()) {
        broken.add("an intent of " + new String(l.intent().txnId(), StandardCharsets.UTF_8) + " outlived its transaction on "
            + Key.decode(l.key()));
      }
      for (StoredValue v : store.txnRecords(shard, 100_000)) {
        byte[][] at = shard.ofTxnRecord(v.storeKey());
        records.add(new Transactions.StoredRecord(at[0], at[1], v.stored()));
      }
    }
    int purged = txns.purge(TABLE, records, now);
    if (purged != records.size()) {
      broken.add(purged + " of " + records.size() + " records were purged past every deadline");
    }
    for (int s = 0; s < SHARDS; s++) {
      if (!store.txnRecords(new ShardRef(TABLE_ID, s), 10).isEmpty()) {
        broken.add("shard " + s + " still holds records after the purge");
      }
    }
    if (!broken.isEmpty()) {
      throw new AssertionError("broken invariants:\n" + String.join("\n", broken));
    }
  }

  private Participants.Read readOne(Key key) {
    return new SimParticipants().read(TABLE, List.of(key)).get(0);
  }

  // ------------------------------------------------------------------ the shards, over a lossy network

  /** The shards of table {@code bank} in the store, each call's steps taken at them with the faults the seed picks. */
  private final class SimParticipants implements Participants {

    @Override
    public Prepared prepare(String table, List<TxnItem> items, byte[] txnId, byte[] meta) {
      long[] versions = new long[items.size()];
      for (Map.Entry<Integer, List<Integer>> e : byShard(items).entrySet()) {
        List<TxnItem> part = new ArrayList<>();
        e.getValue().forEach(i -> part.add(items.get(i)));
        Prepared p = step(() -> steps.prepare(new ShardRef(TABLE_ID, e.getKey()), part, txnId, meta));
        if (!p.ok()) {
          int item = e.getValue().get(p.failedItem());
          return p.conditionFailed() ? Prepared.conditionFailed(item, p.currentVersion()) : Prepared.locked(item, p.holderTxnId(), p.holderMeta());
        }
        for (int j = 0; j < part.size(); j++) {
          versions[e.getValue().get(j)] = p.versions()[j];
        }
      }
      return Prepared.ok(versions);
    }

    @Override
    public boolean oneShard(List<TxnItem> items) {
      return byShard(items).size() == 1;
    }

    @Override
    public OnePhase onePhase(String table, List<TxnItem> items, byte[] txnId, Key anchor, byte[] pending) {
      if (byShard(items).size() != 1 || shardOf(anchor).shardNumber() != shardOf(items.get(0).key()).shardNumber()) {
        return new OnePhase(null, true, null);
      }
      return step(() -> steps.onePhase(shardOf(anchor), items, txnId, anchor, pending));
    }

    @Override
    public void resolve(String table, List<Key> keys, byte[] txnId, boolean commit) {
      Map<Long, List<Key>> byShard = new TreeMap<>();
      keys.forEach(k -> byShard.computeIfAbsent(shardOf(k).shardNumber(), s -> new ArrayList<>()).add(k));
      byShard.forEach((s, part) -> step(() -> {
        steps.resolve(new ShardRef(TABLE_ID, s), part, txnId, commit);
        return null;
      }));
    }

    @Override
    public byte[] record(String table, Key anchor, byte[] txnId, RecordStep step, byte[] proposed) {
      return step(() -> steps.record(shardOf(anchor), anchor, txnId, step, proposed));
    }

    /** Linearizable reads, as a node's: an undecided transaction's key reads as it was; a decided one is resolved first. */
    @Override
    public List<Read> read(String table, List<Key> keys) {
      List<Read> out = new ArrayList<>();
      for (Key k : keys) {
        out.add(step(() -> {
          while (true) {
            try {
              Versioned v = store.get(shardOf(k), k.encode());
              return v == null ? new Read(null, 0) : new Read(v.value(), v.version());
            } catch (KeyLockedException locked) {
              if (!txns.resolveLock(TABLE, locked)) {
                Versioned v = locked.committed();
                return v == null ? new Read(null, 0) : new Read(v.value(), v.version());
              }
            }
          }
        }));
      }
      return out;
    }

    private Map<Integer, List<Integer>> byShard(List<TxnItem> items) {
      Map<Integer, List<Integer>> out = new TreeMap<>();
      for (int i = 0; i < items.size(); i++) {
        out.computeIfAbsent((int) shardOf(items.get(i).key()).shardNumber(), s -> new ArrayList<>()).add(i);
      }
      return out;
    }
  }

  /**
   * One step at one shard, as a coordinator's call to it over the network: the other coordinators
   * may go first; the request may be lost (nothing applied) or its reply (applied); the coordinator
   * may crash before or after it.
   */
  private <T> T step(Supplier<T> atShard) {
    scheduler.yield();
    now += random.nextInt(4);
    fault("request");
    T answer = atShard.get();
    fault("reply");
    return answer;
  }

  /** Out of 1,000: 8 times the coordinator crashes, 30 times the {@code what} is lost. */
  private void fault(String what) {
    if (!faults || !scheduler.running()) {
      return;
    }
    int roll = random.nextInt(1000);
    if (roll < 8) {
      crashes++;
      throw new Crash();
    }
    if (roll < 38) {
      if (what.equals("request")) {
        lostRequests++;
      } else {
        lostReplies++;
      }
      throw Status.UNAVAILABLE.withDescription("the " + what + " was lost").asRuntimeException();
    }
  }

  // ------------------------------------------------------------------ keys

  private static Key account(int i) {
    return Key.of("acct-" + i);
  }

  private static ShardRef shardOf(Key key) {
    return new ShardRef(TABLE_ID, Math.floorMod(Arrays.hashCode(key.partitionKey()) * 0x9E3779B1, SHARDS));
  }

  /** Another account in the same shard as {@code account}, or -1. */
  private int sameShardAs(int account) {
    List<Integer> same = new ArrayList<>();
    for (int i = 0; i < ACCOUNTS; i++) {
      if (i != account && shardOf(account(i)).equals(shardOf(account(account)))) {
        same.add(i);
      }
    }
    return same.isEmpty() ? -1 : same.get(random.nextInt(same.size()));
  }

  /** A transfer's row in the same shard as {@code account}: the one-phase path needs every item in one shard. */
  private static Key rowBeside(String id, Key account) {
    for (int salt = 0; ; salt++) {
      Key k = Key.of("xfer-" + id + "-" + salt);
      if (shardOf(k).equals(shardOf(account))) {
        return k;
      }
    }
  }

  private static byte[] balance(long v) {
    return ByteBuffer.allocate(8).putLong(v).array();
  }

  private static long balanceOf(Participants.Read r) {
    return r.value() == null ? 0 : ByteBuffer.wrap(r.value()).getLong();
  }

  // ------------------------------------------------------------------ the scheduler

  /**
   * Runs actors on threads of their own, one step at a time: an actor runs until it yields (at its
   * next step at a shard, or a pause), then the seed picks which actor takes the next step. Only
   * one thread ever runs, so the schedule — and every outcome — is the seed's.
   */
  static final class Scheduler {
    private final Random random;
    private final Semaphore turnOver = new Semaphore(0);
    private final ThreadLocal<Semaphore> mine = new ThreadLocal<>();
    private volatile boolean running;

    Scheduler(Random random) {
      this.random = random;
    }

    boolean running() {
      return running && mine.get() != null;
    }

    /** Called by an actor at a step: another actor (or the same) takes the next one. A no-op outside {@link #run}. */
    void yield() {
      Semaphore go = mine.get();
      if (go == null) {
        return;
      }
      turnOver.release();
      go.acquireUninterruptibly();
    }

    void run(List<Runnable> actors) throws Exception {
      List<Semaphore> gates = new ArrayList<>();
      List<Thread> threads = new ArrayList<>();
      boolean[] done = new boolean[actors.size()];
      Throwable[] failed = new Throwable[1];
      for (int i = 0; i < actors.size(); i++) {
        Semaphore go = new Semaphore(0);
        gates.add(go);
        int index = i;
        Runnable actor = actors.get(i);
        Thread t = new Thread(() -> {
          mine.set(go);
          go.acquireUninterruptibly();
          try {
            actor.run();
          } catch (Throwable e) {
            failed[0] = e;
          } finally {
            done[index] = true;
            mine.remove();
            turnOver.release();
          }
        }, "txn-sim-actor-" + i);
        t.setDaemon(true);
        threads.add(t);
        t.start();
      }
      running = true;
      try {
        while (true) {
          List<Integer> live = new ArrayList<>();
          for (int i = 0; i < done.length; i++) {
            if (!done[i]) {
              live.add(i);
            }
          }
          if (live.isEmpty() || failed[0] != null) {
            break;
          }
          gates.get(live.get(random.nextInt(live.size()))).release();
          turnOver.acquire();
        }
      } finally {
        running = false;
      }
      if (failed[0] != null) {
        threads.forEach(Thread::interrupt);
        throw new AssertionError("an actor failed", failed[0]);
      }
      for (Thread t : threads) {
        t.join();
      }
    }
  }
}
