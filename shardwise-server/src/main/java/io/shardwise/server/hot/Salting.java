package io.shardwise.server.hot;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Key;
import io.shardwise.core.key.Lists;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.CounterOp;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.GetRequest;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.proto.v1.SaltedKey;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.Retries;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Salting a write-hot counter or list: the registry of salted keys in ZooKeeper, and the two changes of a
 * key's state, each a sequence of idempotent steps that any controller finding it half done runs to
 * its end ({@link #resume}).
 *
 * <p><b>Promote</b> (a key into {@code fanout} sub-keys): the registry records the key {@code
 * PROMOTING} with a new generation; the key itself becomes a salted key ({@link Counters#salt}: its
 * value so far is its total); the registry says {@code SALTED}, and writers, as they refresh, add to
 * a sub-key at random. A writer that has not refreshed still adds to the key, which counts it.
 *
 * <p><b>Demote</b>: the registry says {@code DEMOTING} (writers go back to the key); each sub-key is
 * sealed (a late writer's increment or append is refused, unapplied, and it refreshes); each sealed
 * sub-key's final value is folded into the key, once ({@link Counters#fold}, {@link Lists#fold});
 * with the last fold the key is a counter (a list) again and the registry forgets it. Sealed
 * sub-keys stay (a few bytes each): a reader that read the key before a fold still finds the
 * sub-key's value.
 *
 * <p>A reader reads the key; if it is salted, it adds the sub-keys it has not folded. Every
 * increment acknowledged before the read began is in the key's total or in a sub-key the read
 * finds, and a fold moves a value from a sub-key into the total without a moment when a reader
 * could count it twice or not at all (the key's folded set says which one to count).
 */
public final class Salting {

  private static final Logger LOG = LoggerFactory.getLogger(Salting.class);

  public static final String ROOT = Coordinator.ROOT + "/salted";
  private static final String GENERATIONS = Coordinator.ROOT + "/salted-generations/g-";
  private static final Duration STEP_BUDGET = Duration.ofSeconds(60);
  private static final long DEADLINE_SECONDS = 10;

  private final Coordinator coordinator;
  private final Peers peers;

  public Salting(Coordinator coordinator, Peers peers) {
    this.coordinator = coordinator;
    this.peers = peers;
  }

  /** A hot key whose writes are at least this share of its requests is write-hot. */
  static final double WRITE_HOT_SHARE = 0.5;

  /** A write-hot key whose writes are at least this share increments or appends is a counter (a list) to salt rather than isolate. */
  static final double MERGE_SHARE = 0.9;

  /**
   * Whether salting is the remedy for hot key {@code k} of table {@code t} (the balancer's load
   * policy and the console's button both ask): a write-hot counter or list (writes at least half of
   * its sampled requests, nearly all of them increments or appends) on a table placed by hash, and
   * not a sub-key itself. Anything else hot is isolated.
   */
  public static boolean saltable(Table t, io.shardwise.proto.v1.HotKey k) {
    return k.getWrites() > 0 && k.getWrites() >= WRITE_HOT_SHARE * (k.getReads() + k.getWrites())
        && k.getMerges() >= MERGE_SHARE * k.getWrites()
        && t.layout().strategy() != io.shardwise.core.partition.Strategy.RANGE && !Counters.isSubKey(k.getKey().toByteArray());
  }

  /** Each sub-key of a key salted by the load policy takes at most this share of the split rate. */
  static final double SUB_KEY_SHARE_OF_SPLIT_RATE = 0.5;

  /**
   * Sub-keys per live node a counter is salted into at least: placed by hash, a few sub-keys land
   * unevenly on the nodes (with 3 nodes, 6 sub-keys left the busiest node at 1.35× the average in
   * the bench, 12 at 1.13×, 24 at 1.09×).
   */
  public static final int SUB_KEYS_PER_NODE = 4;

  /** The sub-keys an operator's salting gets unless told: {@link #SUB_KEYS_PER_NODE} per live node (2 to 64). */
  public static int defaultFanout(int liveNodes) {
    return fanoutFor(0, 1, liveNodes);
  }

  /**
   * How many sub-keys a key taking {@code keyRate} requests per second is salted into: enough for
   * each to take at most half the split rate, and at least {@link #SUB_KEYS_PER_NODE} per live node
   * (at least 2, at most {@link Counters#MAX_FANOUT}).
   */
  public static int fanoutFor(double keyRate, long splitRps, int liveNodes) {
    long needed = (long) Math.ceil(keyRate / (SUB_KEY_SHARE_OF_SPLIT_RATE * Math.max(1, splitRps)));
    return (int) Math.max(2, Math.min(Counters.MAX_FANOUT, Math.max(needed, (long) SUB_KEYS_PER_NODE * liveNodes)));
  }

  // ------------------------------------------------------------------ the registry

  /** Every salted key (and every one being promoted or demoted), of {@code table} or, if empty, of every table. */
  public List<SaltedKey> list(String table) {
    return list(coordinator, coordinator.readMap().map(), table);
  }

  /**
   * {@link #list(String)}, read from {@code coordinator}, leaving out the keys of tables not in
   * {@code map} (dropped): a node answering clients passes the map it has applied.
   */
  public static List<SaltedKey> list(Coordinator coordinator, ShardMap map, String table) {
    List<SaltedKey> out = new ArrayList<>();
    for (String tableId : coordinator.children(ROOT)) {
      for (String name : coordinator.children(ROOT + "/" + tableId)) {
        coordinator.read(ROOT + "/" + tableId + "/" + name).map(r -> parse(r.data()))
            .filter(k -> table.isEmpty() || k.getTable().equals(table))
            .filter(k -> map.table(k.getTable()).map(t -> t.id() == k.getTableId()).orElse(false)) // a dropped table's keys are not listed
            .ifPresent(out::add);
      }
    }
    return out;
  }

  public Optional<SaltedKey> get(Table table, Key key) {
    return coordinator.read(path(table.id(), key)).map(r -> parse(r.data()));
  }

  private static String path(long tableId, Key key) {
    return ROOT + "/" + tableId + "/" + HexFormat.of().formatHex(key.encode());
  }

  private static SaltedKey parse(byte[] data) {
    try {
      return SaltedKey.parseFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("a salted key's record does not parse: " + e.getMessage(), e);
    }
  }

  // ------------------------------------------------------------------ promote and demote

  /**
   * Salts {@code key} of {@code tableName} into {@code fanout} sub-keys (runs a promotion left half
   * done to its end).
   *
   * @throws IllegalArgumentException if the table does not exist or its keys are not placed by hash
   *     (a range table keeps a key's sub-keys beside it: isolate the key instead), the fanout is out
   *     of range, or the key is salted already or being demoted
   */
  public SaltedKey promote(String tableName, Key key, int fanout, String why) {
    Table table = hashedTable(tableName);
    Counters.checkFanout(fanout);
    if (Counters.isSubKey(key.partitionKey())) {
      throw new IllegalArgumentException("that key is a salted key's sub-key");
    }
    Optional<SaltedKey> existing = get(table, key);
    if (existing.isPresent() && existing.get().getState() != SaltedKey.State.PROMOTING) {
      throw new IllegalArgumentException("key '" + display(key) + "' of " + tableName + " is " + describe(existing.get()) + " already");
    }
    SaltedKey entry = existing.orElseGet(() -> {
      boolean list = Lists.isList(read(tableName, key)); // the key's value says what it is; absent: a counter
      SaltedKey fresh = SaltedKey.newBuilder().setTable(tableName).setTableId(table.id()).setKey(proto(key))
          .setGeneration(newGeneration()).setFanout(fanout).setList(list).setState(SaltedKey.State.PROMOTING)
          .setSinceMillis(System.currentTimeMillis()).setWhy(why).build();
      return parse(coordinator.update(path(table.id(), key), old -> old == null ? fresh.toByteArray() : null));
    });
    return finishPromotion(entry);
  }

  private SaltedKey finishPromotion(SaltedKey entry) {
    Key key = key(entry);
    apply(entry.getTable(), key, CounterOp.newBuilder().setSalt(CounterOp.Salt.newBuilder().setGeneration(entry.getGeneration())
        .setFanout(entry.getFanout())).setList(entry.getList()).build());
    SaltedKey salted = parse(coordinator.update(path(entry.getTableId(), key), data -> {
      SaltedKey now = data == null ? null : parse(data);
      if (now == null || now.getGeneration() != entry.getGeneration() || now.getState() != SaltedKey.State.PROMOTING) {
        return null; // changed meanwhile (demoted by another controller): leave it
      }
      return now.toBuilder().setState(SaltedKey.State.SALTED).setSinceMillis(System.currentTimeMillis()).build().toByteArray();
    }));
    LOG.info("salted {} '{}' of {} into {} sub-keys (generation {}): {}", entry.getList() ? "list" : "counter", display(key),
        entry.getTable(), entry.getFanout(), entry.getGeneration(), entry.getWhy());
    return salted;
  }

  /**
   * Demotes a salted key back to one counter (runs a demotion left half done to its end).
   *
   * @throws IllegalArgumentException if the key is not salted
   */
  public void demote(String tableName, Key key, String why) {
    Table table = coordinator.readMap().map().table(tableName)
        .orElseThrow(() -> new IllegalArgumentException("no table '" + tableName + "'"));
    SaltedKey entry = get(table, key).orElseThrow(() -> new IllegalArgumentException("key '" + display(key) + "' of " + tableName
        + " is not salted"));
    if (entry.getState() == SaltedKey.State.PROMOTING) {
      entry = finishPromotion(entry); // its key must be salted before its sub-keys are folded into it
    }
    byte[] stored = coordinator.update(path(table.id(), key), data -> {
      if (data == null) {
        return null; // another controller finished demoting it meanwhile
      }
      SaltedKey now = parse(data);
      return now.getState() == SaltedKey.State.DEMOTING ? null
          : now.toBuilder().setState(SaltedKey.State.DEMOTING).setSinceMillis(System.currentTimeMillis()).setWhy(why).build().toByteArray();
    });
    if (stored != null) {
      finishDemotion(parse(stored));
    }
  }

  private void finishDemotion(SaltedKey entry) {
    Key key = key(entry);
    int generation = entry.getGeneration();
    boolean list = entry.getList();
    for (int i = 0; i < entry.getFanout(); i++) {
      apply(entry.getTable(), Counters.subKey(key, generation, i), CounterOp.newBuilder().setSeal(true).setList(list).build());
    }
    long folded = 0;
    for (int i = 0; i < entry.getFanout(); i++) {
      Key sub = Counters.subKey(key, generation, i);
      byte[] stored = read(entry.getTable(), sub);
      CounterOp.Fold.Builder fold = CounterOp.Fold.newBuilder().setGeneration(generation).setIndex(i);
      if (list) {
        if (!(Lists.decode(stored) instanceof Lists.Sealed sealed)) {
          throw new IllegalStateException("sub-key " + i + " of '" + display(key) + "' is not sealed after its seal");
        }
        fold.setElements(ByteString.copyFrom(stored));
        folded += sealed.elements().size();
      } else {
        if (!(Counters.decode(stored) instanceof Counters.Sealed sealed)) {
          throw new IllegalStateException("sub-key " + i + " of '" + display(key) + "' is not sealed after its seal");
        }
        fold.setValue(sealed.value());
        folded += sealed.value();
      }
      apply(entry.getTable(), key, CounterOp.newBuilder().setFold(fold).setList(list).build());
    }
    coordinator.delete(path(entry.getTableId(), key));
    LOG.info("demoted salted {} '{}' of {} (generation {}): {} sub-keys folded into it, {} {} in all from them ({})", list ? "list" : "counter",
        display(key), entry.getTable(), generation, entry.getFanout(), folded, list ? "elements" : "counted", entry.getWhy());
  }

  /**
   * Runs to its end every promotion and demotion that began more than {@code olderThanMillis}
   * before {@code nowMillis} (its controller stopped, most likely; if it is still at work, both run
   * the same idempotent steps); returns how many.
   */
  public int resume(long nowMillis, long olderThanMillis) {
    int n = 0;
    for (SaltedKey k : list("")) {
      if (nowMillis - k.getSinceMillis() < olderThanMillis) {
        continue;
      }
      if (k.getState() == SaltedKey.State.PROMOTING) {
        finishPromotion(k);
        n++;
      } else if (k.getState() == SaltedKey.State.DEMOTING) {
        finishDemotion(k);
        n++;
      }
    }
    return n;
  }

  private Table hashedTable(String tableName) {
    Table table = coordinator.readMap().map().table(tableName)
        .orElseThrow(() -> new IllegalArgumentException("no table '" + tableName + "'"));
    if (table.layout().strategy() == io.shardwise.core.partition.Strategy.RANGE) {
      throw new IllegalArgumentException("table " + tableName + " is range-partitioned: a key's sub-keys would sit beside it in the"
          + " same shard; isolate the key instead (shardwise hotspots fix)");
    }
    return table;
  }

  /** A unique, increasing generation: sub-keys of a key salted again are new keys, never the sealed ones of before. */
  private int newGeneration() {
    String name = coordinator.createSequential(GENERATIONS, new byte[0]);
    coordinator.delete(GENERATIONS.substring(0, GENERATIONS.lastIndexOf('/') + 1) + name); // the parent keeps counting
    return Integer.parseInt(name.substring(2));
  }

  // ------------------------------------------------------------------ talking to the owners

  /** Sends a counter operation on {@code key} through any live node (which forwards it to the owner), retrying what is transient. */
  private void apply(String table, Key key, CounterOp op) {
    ByteString id = ByteString.copyFrom(java.nio.ByteBuffer.allocate(16).putLong(ThreadLocalRandom.current().nextLong())
        .putLong(ThreadLocalRandom.current().nextLong()).array());
    PutRequest request = PutRequest.newBuilder().setHeader(RequestHeader.newBuilder().setForward(true).setRequestId(id)).setTable(table)
        .setKey(proto(key)).setCounter(op).build();
    withRetries(() -> DataServiceGrpc.newBlockingStub(peers.channel(anyNode())).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
        .put(request));
  }

  /** The value of {@code key}, read at its shard's leader (null if absent). */
  private byte[] read(String table, Key key) {
    GetRequest request = GetRequest.newBuilder().setHeader(RequestHeader.newBuilder().setForward(true)).setTable(table).setKey(proto(key))
        .build();
    GetResponse r = withRetries(() -> DataServiceGrpc.newBlockingStub(peers.channel(anyNode()))
        .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).get(request));
    return r.getFound() ? r.getValue().toByteArray() : null;
  }

  private <T> T withRetries(java.util.function.Supplier<T> call) {
    return Retries.withBackoff(STEP_BUDGET, Salting::transientFailure, attempt -> call.get());
  }

  private static boolean transientFailure(RuntimeException e) {
    if (!(e instanceof StatusRuntimeException s)) {
      return false;
    }
    ErrorInfo.Code code = Errors.code(s);
    return code == ErrorInfo.Code.WRONG_SHARD || code == ErrorInfo.Code.MAP_BEHIND || code == ErrorInfo.Code.NOT_SERVING
        || code == ErrorInfo.Code.NOT_ENOUGH_REPLICAS || code == ErrorInfo.Code.LEADER_NOT_READY || code == ErrorInfo.Code.NOT_LEADER
        || s.getStatus().getCode() == Status.Code.UNAVAILABLE || s.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED;
  }

  private String anyNode() {
    List<NodeInfo> live = new ArrayList<>(coordinator.liveNodesNow().values());
    if (live.isEmpty()) {
      throw Status.UNAVAILABLE.withDescription("no live node").asRuntimeException();
    }
    return live.get(ThreadLocalRandom.current().nextInt(live.size())).getAddress();
  }

  private static io.shardwise.proto.v1.Key proto(Key key) {
    return io.shardwise.proto.v1.Key.newBuilder().setPartitionKey(ByteString.copyFrom(key.partitionKey()))
        .setSortKey(ByteString.copyFrom(key.sortKey())).build();
  }

  private static Key key(SaltedKey k) {
    return Key.of(k.getKey().getPartitionKey().toByteArray(), k.getKey().getSortKey().toByteArray());
  }

  private static String display(Key key) {
    return io.shardwise.core.key.ByteStrings.toDisplay(key.partitionKey());
  }

  /** "salted into 8 sub-keys", "being demoted". */
  public static String describe(SaltedKey k) {
    return switch (k.getState()) {
      case PROMOTING -> "being salted into " + k.getFanout() + " sub-keys";
      case SALTED -> "salted into " + k.getFanout() + " sub-keys";
      case DEMOTING -> "being demoted";
      default -> k.getState().name().toLowerCase(java.util.Locale.ROOT);
    };
  }
}
