package io.shardwise.client;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.txn.TableKey;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.core.txn.TxnOutcome;
import io.shardwise.proto.Channels;
import io.shardwise.proto.Errors;
import io.shardwise.proto.MapCodec;
import io.shardwise.core.key.Counters;
import io.shardwise.core.key.Lists;
import io.shardwise.proto.v1.AdminServiceGrpc;
import io.shardwise.proto.v1.BatchGetRequest;
import io.shardwise.proto.v1.BatchGetResponse;
import io.shardwise.proto.v1.BatchPutRequest;
import io.shardwise.proto.v1.BatchPutResponse;
import io.shardwise.proto.v1.ClusterStatusRequest;
import io.shardwise.proto.v1.ClusterStatusResponse;
import io.shardwise.proto.v1.CreateTableRequest;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.DeleteRequest;
import io.shardwise.proto.v1.DescribeTableRequest;
import io.shardwise.proto.v1.DropTableRequest;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.GetRequest;
import io.shardwise.proto.v1.GetResponse;
import io.shardwise.proto.v1.GetShardMapRequest;
import io.shardwise.proto.v1.GetShardMapResponse;
import io.shardwise.proto.v1.ListTablesRequest;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.PutRequest;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.TableInfo;
import io.shardwise.proto.v1.TableKeyRef;
import io.shardwise.proto.v1.TransactGetRequest;
import io.shardwise.proto.v1.TransactGetResponse;
import io.shardwise.proto.v1.TransactRequest;
import io.shardwise.proto.v1.TransactResponse;
import io.shardwise.proto.v1.TxnStatusRequest;
import io.shardwise.proto.v1.UndropTableRequest;
import io.shardwise.proto.v1.UndropTableResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The Java client of a Shardwise cluster.
 *
 * <p>In {@link Routing#CLIENT} mode it keeps a versioned copy of the shard map (from any seed
 * node's admin API), sends each request straight to the owner of its key's shard with the map's
 * epoch, and refreshes the map when an owner answers WRONG_SHARD (at most once per
 * {@code minRefreshInterval}) and every {@code refreshInterval}. In {@link Routing#ROUTER} and
 * {@link Routing#NODE} modes it sends every request to the seeds, which route. Every mode retries a
 * refused request a bounded number of times with exponential backoff.
 *
 * <p>Thread-safe; share one instance. Close it to release its channels.
 */
public final class ShardwiseClient implements AutoCloseable {

  private final Routing routing;
  private final List<String> seeds;
  private final int maxAttempts;
  private final Duration minRefreshInterval;
  private final int maxMessageBytes;
  private final NearCache nearCache;
  private final int followerStalenessMillis; // 0: reads at the leader only
  private final SaltedKeyCache salted;
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final ScheduledExecutorService refresher;
  private volatile ShardMap map = ShardMap.EMPTY;
  private volatile Map<NodeId, String> addresses = Map.of();
  private volatile long lastRefreshNanos;
  private volatile int nextSeed;

  private ShardwiseClient(Builder b) {
    this.routing = b.routing;
    this.seeds = List.copyOf(b.seeds);
    this.maxAttempts = b.maxAttempts;
    this.minRefreshInterval = b.minRefreshInterval;
    this.maxMessageBytes = b.maxMessageBytes;
    this.nearCache = b.nearCacheTtl == null ? null : new NearCache(b.nearCacheTtl, b.nearCacheKeys);
    this.followerStalenessMillis = b.followerStaleness == null ? 0 : (int) b.followerStaleness.toMillis();
    this.salted = new SaltedKeyCache(b.saltedKeysMaxAge, () -> onAnySeedAt(seed -> AdminServiceGrpc.newBlockingStub(channel(seed))
        .withDeadlineAfter(MAP_FETCH_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
        .saltedKeys(io.shardwise.proto.v1.SaltedKeysRequest.getDefaultInstance())).getKeysList());
    if (routing == Routing.CLIENT) {
      refreshMap();
      this.refresher = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "shardwise-map-refresh");
        t.setDaemon(true);
        return t;
      });
      long every = b.refreshInterval.toMillis();
      refresher.scheduleWithFixedDelay(this::refreshQuietly, every, every, TimeUnit.MILLISECONDS);
    } else {
      this.refresher = null;
    }
  }

  /** Rows per scan page, at most (the API's limit). */
  static final int MAX_SCAN_PAGE = 1000;

  public static Builder builder() {
    return new Builder();
  }

  /** Configures a client; {@link #seeds} is required. */
  public static final class Builder {
    private Routing routing = Routing.CLIENT;
    private List<String> seeds = List.of();
    private int maxAttempts = 6;
    private Duration refreshInterval = Duration.ofSeconds(30);
    private Duration saltedKeysMaxAge = Duration.ofSeconds(2);
    private Duration minRefreshInterval = Duration.ofMillis(50);
    private int maxMessageBytes = 32 * 1024 * 1024;
    private Duration nearCacheTtl;
    private long nearCacheKeys;
    private Duration followerStaleness;

    /** Node addresses ({@code host:port}); for {@link Routing#ROUTER}, router addresses. */
    public Builder seeds(List<String> addresses) {
      if (addresses.isEmpty()) {
        throw new IllegalArgumentException("at least one seed address is needed");
      }
      this.seeds = List.copyOf(addresses);
      return this;
    }

    public Builder routing(Routing routing) {
      this.routing = routing;
      return this;
    }

    /** Attempts per request, including the first (default 6). */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("max attempts must be at least 1, not " + attempts);
      }
      this.maxAttempts = attempts;
      return this;
    }

    /**
     * How long this client routes increments by its list of salted keys before asking for it again
     * (default 2 s). A stale list never loses or doubles a count; it only spreads a newly salted
     * key's increments later.
     */
    public Builder saltedKeysMaxAge(Duration maxAge) {
      if (maxAge.isNegative() || maxAge.isZero()) {
        throw new IllegalArgumentException("the salted keys' max age must be positive, not " + maxAge);
      }
      this.saltedKeysMaxAge = maxAge;
      return this;
    }

    /** How often the map is refreshed without a reason (default 30 s). */
    public Builder refreshInterval(Duration interval) {
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException("refresh interval must be positive, not " + interval);
      }
      this.refreshInterval = interval;
      return this;
    }

    /**
     * Keeps the values of up to {@code maxKeys} recently read keys for {@code ttl} (at most 10 s),
     * so that {@link #get} and {@link #getAsync} of a read-hot key are answered here, not by its
     * node. The price: such a read may miss another client's write for up to {@code ttl} (this
     * client's own writes are always seen). Off by default; {@link #batchGet} and scans never use it.
     *
     * @throws IllegalArgumentException if {@code ttl} is not in (0, 10 s] or {@code maxKeys} is below 1
     */
    public Builder nearCache(Duration ttl, long maxKeys) {
      NearCache.validate(ttl, maxKeys); // now, not at build()
      this.nearCacheTtl = ttl;
      this.nearCacheKeys = maxKeys;
      return this;
    }

    /**
     * Reads of replicated tables ({@link #get}) go to any replica of the key's shard, chosen at
     * random, not only its leader: a follower answers if it applied its leader's commit within
     * {@code maxStaleness}, else the leader does. Spreads reads (a read-hot key's among its replicas)
     * at the price of bounded staleness: such a read may miss writes acknowledged in the last
     * {@code maxStaleness}, and two reads may see the key go back in time; it never sees a write that
     * could be lost. Off by default (linearizable reads at the leader). Only in {@link Routing#CLIENT}
     * and {@link Routing#NODE} modes; a router answers from the leader.
     *
     * @throws IllegalArgumentException if {@code maxStaleness} is not in [1 ms, 1 h]
     */
    public Builder readFromFollowers(Duration maxStaleness) {
      if (maxStaleness.toMillis() < 1 || maxStaleness.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("the max staleness of follower reads must be 1 ms to 1 h, not " + maxStaleness);
      }
      this.followerStaleness = maxStaleness;
      return this;
    }

    public ShardwiseClient build() {
      if (seeds.isEmpty()) {
        throw new IllegalArgumentException("seeds were not set");
      }
      return new ShardwiseClient(this);
    }
  }

  // ------------------------------------------------------------------ map

  /** The epoch of the map this client routes by (0 in router and node modes). */
  public long mapEpoch() {
    return map.epoch();
  }

  /** How long one node may take to answer a map request in {@link #refreshMap} before the others' answers are taken. */
  private static final Duration MAP_FETCH_DEADLINE = Duration.ofSeconds(3);
  /** The longest wait between attempts at a node that cannot be reached (a map refresh each, at most one per {@code minRefreshInterval}). */
  private static final long UNREACHABLE_BACKOFF_CAP_MILLIS = 100;

  /**
   * Fetches the current map, asking every seed and every node of the last map at once and taking
   * the newest answer among the first to arrive: a stopped or unreachable node costs nothing while
   * another answers, and at most {@code MAP_FETCH_DEADLINE} if none does.
   */
  public synchronized void refreshMap() {
    java.util.LinkedHashSet<String> targets = new java.util.LinkedHashSet<>(seeds);
    targets.addAll(addresses.values());
    GetShardMapRequest request = mapRequest();
    java.util.concurrent.LinkedBlockingQueue<Object> answers = new java.util.concurrent.LinkedBlockingQueue<>();
    List<com.google.common.util.concurrent.ListenableFuture<GetShardMapResponse>> calls = new java.util.ArrayList<>();
    for (String target : targets) {
      var call = AdminServiceGrpc.newFutureStub(channel(target)).withDeadlineAfter(MAP_FETCH_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
          .getShardMap(request);
      calls.add(call);
      call.addListener(() -> {
        try {
          answers.add(Map.entry(target, com.google.common.util.concurrent.Futures.getDone(call)));
        } catch (java.util.concurrent.ExecutionException | RuntimeException e) {
          answers.add(e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e);
        }
      }, Runnable::run);
    }
    Throwable last = null;
    GetShardMapResponse best = null;
    String bestFrom = null;
    try {
      // The first answer, and any others already in: a node a little behind must not win over one that is current.
      for (int received = 0; received < targets.size() && (best == null || !answers.isEmpty()); received++) {
        Object a = answers.poll(MAP_FETCH_DEADLINE.toMillis() + 1_000, TimeUnit.MILLISECONDS);
        if (a == null) {
          break;
        }
        if (a instanceof Map.Entry<?, ?> answer) {
          GetShardMapResponse r = (GetShardMapResponse) answer.getValue();
          if (best == null || r.getMap().getEpoch() > best.getMap().getEpoch()) {
            best = r;
            bestFrom = (String) answer.getKey();
          }
        } else {
          last = (Throwable) a;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      calls.forEach(c -> c.cancel(false));
    }
    if (best == null) {
      throw new ShardwiseException(Status.Code.UNAVAILABLE, "no node answered for the map within " + MAP_FETCH_DEADLINE.toSeconds()
          + " s (" + String.join(", ", targets) + ")" + (last instanceof StatusRuntimeException sre ? ": " + sre.getStatus().getDescription() : ""));
    }
    install(best, bestFrom);
  }

  /** Installs the map {@code address} serves if it is not older than ours. */
  private void fetchMap(String address) {
    install(AdminServiceGrpc.newBlockingStub(channel(address)).withDeadlineAfter(MAP_FETCH_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
        .getShardMap(mapRequest()), address);
  }

  /** Asks for the tables changed since our map only, once we have one. */
  private GetShardMapRequest mapRequest() {
    return GetShardMapRequest.newBuilder().setKnownEpoch(map.epoch()).setChangesOnly(map.epoch() > 0).build();
  }

  /**
   * The map a response describes: the whole map, or the tables and shards it sends with the rest
   * kept from ours. Empty if the changes do not fit our map: made against another epoch (ours
   * moved on meanwhile), naming a table we lack, or a layout that changed (new shard ids).
   */
  private Optional<ShardMap> decode(GetShardMapResponse r) {
    if (!r.getChangesOnly()) {
      return Optional.of(MapCodec.fromProto(r.getMap()));
    }
    if (r.getBaseEpoch() != map.epoch()) {
      return Optional.empty();
    }
    List<Table> tables = new java.util.ArrayList<>();
    for (String name : r.getUnchangedTablesList()) {
      Optional<Table> kept = map.table(name);
      if (kept.isEmpty()) {
        return Optional.empty();
      }
      tables.add(kept.get());
    }
    for (io.shardwise.proto.v1.TableShardChanges c : r.getShardChangesList()) {
      Optional<Table> changed = map.table(c.getTable().getName()).flatMap(mine -> MapCodec.applyShardChanges(mine, c));
      if (changed.isEmpty()) {
        return Optional.empty();
      }
      tables.add(changed.get());
    }
    r.getMap().getTablesList().forEach(t -> tables.add(MapCodec.fromProto(t)));
    return Optional.of(ShardMap.restore(r.getMap().getEpoch(), tables));
  }

  /** Installs a fetched map if it is not older than ours, with the live nodes' addresses it came with. */
  private void install(GetShardMapResponse r, String address) {
    Optional<ShardMap> decoded = decode(r);
    if (decoded.isEmpty()) {
      // Changes that do not fit our map: ask the same node for the whole of it.
      try {
        r = AdminServiceGrpc.newBlockingStub(channel(address)).withDeadlineAfter(MAP_FETCH_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
            .getShardMap(GetShardMapRequest.newBuilder().setKnownEpoch(map.epoch()).build());
      } catch (StatusRuntimeException e) {
        return; // the next refresh asks again
      }
      decoded = decode(r);
    }
    ShardMap fetched = decoded.get();
    Map<NodeId, String> live = new HashMap<>();
    for (NodeInfo n : r.getNodesList()) {
      live.put(NodeId.of(n.getId()), n.getAddress());
    }
    if (fetched.epoch() >= map.epoch()) {
      map = fetched;
      if (!live.equals(addresses)) {
        // A node joined or came back: connect to it now, not when a reconnect backoff runs out.
        channels.values().forEach(ManagedChannel::resetConnectBackoff);
      }
      addresses = Map.copyOf(live);
    }
    lastRefreshNanos = System.nanoTime();
  }

  /**
   * After a refusal that names a newer map ({@code epoch}): fetch it from the node that refused
   * (it has that map), unless another thread already did. Many callers refused at once cause one
   * fetch, not one each.
   */
  private synchronized void catchUpTo(long epoch, String refusedBy) {
    if (map.epoch() >= epoch) {
      return;
    }
    try {
      fetchMap(refusedBy);
    } catch (StatusRuntimeException e) {
      // fall back to the seeds below
    }
    if (map.epoch() < epoch) {
      refreshRateLimited();
    }
  }

  private void refreshQuietly() {
    try {
      refreshMap();
    } catch (RuntimeException e) {
      // the next request or the next period tries again
    }
  }

  /**
   * For a table this client's map lacks: refreshes, after the rest of the minimum interval if the
   * map was refreshed just now. A table created a moment ago through another client reaches every
   * node's map within milliseconds; a client made (and so refreshed) in between must not answer
   * NOT_FOUND for it. Requests for a table that does not exist wait up to the interval, and refresh
   * at most once per interval between them.
   */
  private void refreshForMissingTable() {
    long wait = minRefreshInterval.toNanos() - (System.nanoTime() - lastRefreshNanos);
    if (wait > 0) {
      java.util.concurrent.locks.LockSupport.parkNanos(wait);
    }
    refreshRateLimited();
  }

  /** Refreshes unless the map was refreshed within the minimum interval. */
  private void refreshRateLimited() {
    if (System.nanoTime() - lastRefreshNanos >= minRefreshInterval.toNanos()) {
      refreshMap();
    }
  }

  // ------------------------------------------------------------------ data

  public Optional<Versioned> get(String table, Key key) {
    return nearCache == null ? getFromCluster(table, key) : nearCache.get(table, key, () -> getFromCluster(table, key));
  }

  /** What the near-cache has done, if this client has one ({@link Builder#nearCache}). */
  public Optional<NearCacheStats> nearCacheStats() {
    return nearCache == null ? Optional.empty() : Optional.of(nearCache.stats());
  }

  private Optional<Versioned> getFromCluster(String table, Key key) {
    GetResponse r = followerStalenessMillis > 0
        ? withRetries(table, key, replicaTarget(table, key), false, (target, stub, header) -> routing == Routing.CLIENT
            ? followerBatcher(target, table).get(header, Protos.key(key))
            : stub.get(GetRequest.newBuilder().setHeader(header).setTable(table).setKey(Protos.key(key))
                .setMaxStalenessMillis(followerStalenessMillis).build()))
        : call(table, key, (target, stub, header) -> routing == Routing.CLIENT
            ? batcher(target, table).get(header, Protos.key(key))
            : stub.get(GetRequest.newBuilder().setHeader(header).setTable(table).setKey(Protos.key(key)).build()));
    return r.getFound() ? Optional.of(new Versioned(r.getValue().toByteArray(), r.getVersion())) : Optional.empty();
  }

  /**
   * {@link #get} without blocking the caller: in client mode the request joins the next batch to
   * its owner at once; if that attempt fails for a reason a retry can fix (WRONG_SHARD, MAP_BEHIND,
   * an unavailable node), the request continues as a blocking {@link #get} with all its retries on
   * a client thread. In router and node modes it is a {@link #get} on a client thread.
   *
   * <p>The future may complete on the client's network thread: attach blocking work with the
   * {@code ...Async} methods of {@link CompletableFuture} and an executor of your own, never with
   * {@code thenApply}/{@code thenAccept}, or every request of the client waits behind it.
   */
  public CompletableFuture<Optional<Versioned>> getAsync(String table, Key key) {
    if (nearCache == null) {
      return getAsyncFromCluster(table, key);
    }
    NearCache.Lookup lookup = nearCache.lookup(table, key);
    if (lookup.hit()) {
      return CompletableFuture.completedFuture(lookup.value());
    }
    return getAsyncFromCluster(table, key).whenComplete((value, error) -> {
      if (error == null) {
        nearCache.store(lookup, value);
      }
    });
  }

  private CompletableFuture<Optional<Versioned>> getAsyncFromCluster(String table, Key key) {
    if (routing != Routing.CLIENT) {
      return CompletableFuture.supplyAsync(() -> getFromCluster(table, key), asyncRetries);
    }
    return firstTryAsync(table, key, (target, header) -> batcher(target, table).getAsync(header, Protos.key(key)), () -> getFromCluster(table, key), r -> {
      GetResponse g = (GetResponse) r;
      return g.getFound() ? Optional.of(new Versioned(g.getValue().toByteArray(), g.getVersion())) : Optional.<Versioned>empty();
    });
  }

  /** {@link #put} without blocking the caller; see {@link #getAsync} for how it retries. */
  public CompletableFuture<Long> putAsync(String table, Key key, byte[] value) {
    if (routing != Routing.CLIENT || value.length > OwnerBatcher.MAX_BYTES / 4) {
      return CompletableFuture.supplyAsync(() -> put(table, key, value), asyncRetries);
    }
    try {
      checkDocument(table, value);
    } catch (ShardwiseException e) {
      return CompletableFuture.failedFuture(e);
    }
    ByteString id = newRequestId();
    markWritten(table, key);
    CompletableFuture<Long> out = firstTryAsync(table, key,
        (target, header) -> batcher(target, table).putAsync(withId(header, id), Protos.key(key), ByteString.copyFrom(value)),
        () -> put(table, key, value, id), r -> (Long) r);
    return nearCache == null ? out : out.whenComplete((v, error) -> markWritten(table, key));
  }

  private <T> CompletableFuture<T> firstTryAsync(
      String table, Key key, java.util.function.BiFunction<String, RequestHeader, CompletableFuture<Object>> attempt,
      java.util.function.Supplier<T> blockingWithRetries, Function<Object, T> convert) {
    CompletableFuture<T> out = new CompletableFuture<>();
    String target;
    try {
      target = target(table, key);
    } catch (RuntimeException e) {
      return CompletableFuture.supplyAsync(blockingWithRetries, asyncRetries);
    }
    RequestHeader header = RequestHeader.newBuilder().setMapEpoch(map.epoch()).build();
    attempt.apply(target, header).whenComplete((r, error) -> {
      if (error == null) {
        out.complete(convert.apply(r));
        return;
      }
      Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null ? error.getCause() : error;
      ErrorInfo.Code code = Errors.code(cause);
      if (code == ErrorInfo.Code.VERSION_MISMATCH || !(cause instanceof StatusRuntimeException)) {
        out.completeExceptionally(cause instanceof StatusRuntimeException ? new ShardwiseException((StatusRuntimeException) cause) : cause);
        return;
      }
      CompletableFuture.runAsync(() -> {
        try {
          out.complete(blockingWithRetries.get());
        } catch (RuntimeException e) {
          out.completeExceptionally(e);
        }
      }, asyncRetries);
    });
    return out;
  }

  /** Writes {@code value}; returns its new version. A retried attempt is never applied twice. */
  public long put(String table, Key key, byte[] value) {
    return put(table, key, value, newRequestId());
  }

  private long put(String table, Key key, byte[] value, ByteString id) {
    markWritten(table, key);
    try {
      if (routing == Routing.CLIENT && value.length <= OwnerBatcher.MAX_BYTES / 4) {
        checkDocument(table, value);
        return write(table, key, (target, stub, header) -> batcher(target, table).put(withId(header, id), Protos.key(key), ByteString.copyFrom(value)));
      }
      return write(table, key, (target, stub, header) -> stub.put(PutRequest.newBuilder().setHeader(withId(header, id)).setTable(table)
          .setKey(Protos.key(key)).setValue(ByteString.copyFrom(value)).build())).getVersion();
    } finally {
      markWritten(table, key); // also after a failure: a write whose outcome is unknown may have landed
    }
  }

  /** Tells the near-cache (if any) that this client writes {@code key}: before sending, and once answered. */
  private void markWritten(String table, Key key) {
    if (nearCache != null) {
      nearCache.written(table, key);
    }
  }

  /**
   * Writes {@code value} only if the key is at {@code expectedVersion} (0: only if absent).
   *
   * @throws VersionMismatchException with the current version; nothing was written
   * @throws OutcomeUnknownException if the client cannot tell whether it was applied
   */
  public long putIfVersion(String table, Key key, byte[] value, long expectedVersion) {
    ByteString id = newRequestId();
    markWritten(table, key);
    try {
      return write(table, key, (target, stub, header) -> stub.put(PutRequest.newBuilder().setHeader(withId(header, id)).setTable(table)
          .setKey(Protos.key(key)).setValue(ByteString.copyFrom(value)).setConditional(true).setExpectedVersion(expectedVersion).build()))
          .getVersion();
    } finally {
      markWritten(table, key);
    }
  }

  /** How many times an increment or append refused by a sealed sub-key is sent again (each time after asking for the salted keys). */
  private static final int MAX_SEALED_ROUNDS = 3;

  /**
   * Adds {@code delta} (negative: subtracts) to the counter at {@code key}, atomically at its owner;
   * an absent key counts 0. A salted key's increment goes to one of its sub-keys at random (see
   * {@link #counter}). A retried attempt is never applied twice.
   *
   * @throws ShardwiseException ({@code FAILED_PRECONDITION}) if the key holds a value that is not a
   *     counter; nothing was written
   * @throws OutcomeUnknownException if the client cannot tell whether it was applied
   */
  public void increment(String table, Key key, long delta) {
    merge(table, key, io.shardwise.proto.v1.CounterOp.newBuilder().setIncrement(delta).build());
  }

  /**
   * Appends {@code element} at the end of the list at {@code key}, atomically at its owner (an
   * absent key is an empty list). The owner stamps it (its clock, in microseconds, after the list's
   * last stamp); {@link #list} returns elements in stamp order. A salted list's append goes to one
   * of its sub-keys at random. A retried attempt is never applied twice.
   *
   * @throws ShardwiseException ({@code FAILED_PRECONDITION}) if the key holds a value that is not a
   *     list; ({@code INVALID_ARGUMENT}) if the list would pass the value limit; nothing was written
   * @throws OutcomeUnknownException if the client cannot tell whether it was applied
   */
  public void append(String table, Key key, byte[] element) {
    merge(table, key, io.shardwise.proto.v1.CounterOp.newBuilder().setAppend(ByteString.copyFrom(element)).build());
  }

  /** An increment or an append: to a random sub-key of a salted key, else to the key; sent again (unapplied) if a sealed sub-key refuses it. */
  private void merge(String table, Key key, io.shardwise.proto.v1.CounterOp op) {
    ByteString id = newRequestId();
    markWritten(table, key);
    try {
      for (int round = 0; ; round++) {
        Key target = salted.lookup(table, key, round > 0).filter(k -> k.getState() == io.shardwise.proto.v1.SaltedKey.State.SALTED)
            .map(k -> Counters.subKey(key, k.getGeneration(), java.util.concurrent.ThreadLocalRandom.current().nextInt(k.getFanout())))
            .orElse(key);
        try {
          write(table, target, (t, stub, header) -> stub.put(PutRequest.newBuilder().setHeader(withId(header, id)).setTable(table)
              .setKey(Protos.key(target)).setCounter(op).build()));
          return;
        } catch (CounterSealedException e) {
          if (round >= MAX_SEALED_ROUNDS) {
            throw e; // refused each time, unapplied: the key keeps being salted and demoted faster than this client can follow
          }
        }
      }
    } finally {
      markWritten(table, key);
    }
  }

  /**
   * The counter at {@code key} (0 if absent). For a salted key: its own total plus every sub-key it
   * has not folded in yet — each increment acknowledged before this call is counted once.
   *
   * @throws ShardwiseException ({@code FAILED_PRECONDITION}) if the key holds a value that is not a counter
   */
  public long counter(String table, Key key) {
    try {
      byte[] stored = batchGet(table, List.of(key)).get(0).map(Versioned::value).orElse(null);
      Counters.Value v = Counters.decode(stored);
      if (v instanceof Counters.Plain p) {
        return p.value();
      }
      if (!(v instanceof Counters.Salted s)) {
        throw new Counters.CounterException(Counters.Refusal.NOT_A_COUNTER, "the key is a salted key's sealed sub-key");
      }
      return Counters.merged(s, unfoldedSubKeys(table, key, s.generation(), s.fanout(), s::isFolded));
    } catch (Counters.CounterException e) {
      throw new ShardwiseException(Status.Code.FAILED_PRECONDITION, e.getMessage());
    }
  }

  /**
   * The list at {@code key} (empty if absent), in stamp order. For a salted list: its own elements
   * and those of every sub-key it has not folded in yet, merged by stamp — each append acknowledged
   * before this call is in it once, and any two reads agree on the order of the elements both return.
   *
   * @throws ShardwiseException ({@code FAILED_PRECONDITION}) if the key holds a value that is not a list
   */
  public List<byte[]> list(String table, Key key) {
    try {
      byte[] stored = batchGet(table, List.of(key)).get(0).map(Versioned::value).orElse(null);
      Lists.Value v = Lists.decode(stored);
      if (v instanceof Lists.Plain p) {
        return Lists.values(p.elements());
      }
      if (!(v instanceof Lists.Salted s)) {
        throw new Counters.CounterException(Counters.Refusal.NOT_A_LIST, "the key is a salted list's sealed sub-key");
      }
      return Lists.values(Lists.merged(s, unfoldedSubKeys(table, key, s.generation(), s.fanout(), s::isFolded)));
    } catch (Counters.CounterException e) {
      throw new ShardwiseException(Status.Code.FAILED_PRECONDITION, e.getMessage());
    }
  }

  /** The stored values of a salted key's sub-keys it has not folded ({@code [i]}: sub-key i's, null if absent or folded). */
  private byte[][] unfoldedSubKeys(String table, Key key, int generation, int fanout, java.util.function.IntPredicate folded) {
    List<Key> subKeys = new ArrayList<>();
    List<Integer> indexes = new ArrayList<>();
    for (int i = 0; i < fanout; i++) {
      if (!folded.test(i)) {
        subKeys.add(Counters.subKey(key, generation, i));
        indexes.add(i);
      }
    }
    byte[][] values = new byte[fanout][];
    List<Optional<Versioned>> read = subKeys.isEmpty() ? List.of() : batchGet(table, subKeys);
    for (int j = 0; j < read.size(); j++) {
      values[indexes.get(j)] = read.get(j).map(Versioned::value).orElse(null);
    }
    return values;
  }

  /** Deletes {@code key}; true if it existed. */
  public boolean delete(String table, Key key) {
    ByteString id = newRequestId();
    markWritten(table, key);
    try {
      return write(table, key, (target, stub, header) -> stub.delete(DeleteRequest.newBuilder().setHeader(withId(header, id)).setTable(table)
          .setKey(Protos.key(key)).build())).getDeleted();
    } finally {
      markWritten(table, key);
    }
  }

  /** A write id: 16 random bytes, made once per logical write and sent with each of its attempts. */
  private static ByteString newRequestId() {
    java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
    return ByteString.copyFrom(java.nio.ByteBuffer.allocate(16).putLong(r.nextLong()).putLong(r.nextLong()).array());
  }

  private static RequestHeader withId(RequestHeader header, ByteString id) {
    return header.toBuilder().setRequestId(id).build();
  }

  /**
   * Writes several keys, possibly of several shards: one request per owner in client mode. Each
   * owner applies its part atomically; a batch spanning owners is not atomic across them.
   *
   * @return the new version of each entry, in order
   */
  public long[] batchPut(String table, List<Map.Entry<Key, byte[]>> entries) {
    entries.forEach(e -> markWritten(table, e.getKey()));
    try {
      return batchPutToCluster(table, entries);
    } finally {
      entries.forEach(e -> markWritten(table, e.getKey()));
    }
  }

  private long[] batchPutToCluster(String table, List<Map.Entry<Key, byte[]>> entries) {
    if (routing == Routing.CLIENT) { // sent to each owner apart: checked whole before any part goes
      for (int i = 0; i < entries.size(); i++) {
        checkDocument(table, entries.get(i).getValue(), "entry " + i);
      }
    }
    long[] versions = new long[entries.size()];
    Map<String, List<Integer>> groups = groupByTarget(table, entries.size(), i -> entries.get(i).getKey());
    List<ByteString> ids = new ArrayList<>(entries.size());
    for (int i = 0; i < entries.size(); i++) {
      ids.add(newRequestId());
    }
    for (Map.Entry<String, List<Integer>> g : groups.entrySet()) {
      BatchPutResponse r = withRetries(table, entries.get(g.getValue().get(0)).getKey(), g.getKey(), true, (target, stub, header) -> {
        BatchPutRequest.Builder b = BatchPutRequest.newBuilder().setHeader(header).setTable(table);
        g.getValue().forEach(i -> b.addEntries(io.shardwise.proto.v1.KeyValue.newBuilder().setKey(Protos.key(entries.get(i).getKey()))
            .setValue(ByteString.copyFrom(entries.get(i).getValue()))).addRequestIds(ids.get(i)));
        return stub.batchPut(b.build());
      });
      for (int j = 0; j < g.getValue().size(); j++) {
        versions[g.getValue().get(j)] = r.getVersions(j);
      }
    }
    return versions;
  }

  // ------------------------------------------------------------------ transactions

  /** How many times {@link #transact(List)} runs a transaction that was ABORTED by a conflict or its deadline. */
  private static final int TXN_ATTEMPTS = 8;

  /**
   * Applies {@code items} (up to 100, on any shards and tables) all together or not at all: puts,
   * deletes and condition checks, each with an optional condition on its key ({@link TxnItem}),
   * serializable with every other write of those keys. A node coordinates it (in client mode, the
   * owner of the first item's key, where its record is kept).
   *
   * <p>A transaction ABORTED by a conflict with an older one, or by its deadline, is run again
   * under a new token, keeping its first attempt's age (so it waits rather than aborts once it is
   * the oldest), up to 8 times; the last outcome is returned.
   *
   * @return COMMITTED with each item's version, CANCELLED with the item whose condition failed,
   *     ABORTED after the last attempt, or UNKNOWN (look it up with {@link #txnStatus})
   * @throws OutcomeUnknownException if no node answered whether it committed; its id is in the message of
   *     no answer, so retry with {@link #transact(List, String)} under the same token to learn it
   */
  public TxnOutcome transact(List<TxnItem> items) {
    long first = System.currentTimeMillis();
    TxnOutcome last = null;
    for (int attempt = 0; attempt < TXN_ATTEMPTS; attempt++) {
      last = transact(items, newRequestId(), first);
      if (last.status() != TxnOutcome.Status.ABORTED) {
        return last;
      }
      sleep(Math.min(100, 2L << attempt) + java.util.concurrent.ThreadLocalRandom.current().nextInt(5));
    }
    return last;
  }

  /**
   * Runs the transaction once under {@code token} (at most 64 bytes): sent again with the same
   * token and items, it answers the first outcome and applies nothing twice.
   */
  public TxnOutcome transact(List<TxnItem> items, String token) {
    return transact(items, ByteString.copyFromUtf8(token), 0);
  }

  private TxnOutcome transact(List<TxnItem> items, ByteString token, long firstAttemptMillis) {
    if (items.isEmpty()) {
      throw new IllegalArgumentException("a transaction holds at least one item");
    }
    TransactRequest.Builder b = TransactRequest.newBuilder().setToken(token).setFirstAttemptMillis(firstAttemptMillis);
    items.forEach(i -> b.addItems(io.shardwise.proto.TxnCodec.item(i)));
    items.forEach(i -> markWritten(i.table(), i.key()));
    try {
      TxnItem anchor = items.get(0);
      TransactResponse r = withRetries(anchor.table(), anchor.key(), null, true,
          (target, stub, header) -> stub.transact(b.setHeader(header).build()));
      return io.shardwise.proto.TxnCodec.outcome(r);
    } finally {
      items.forEach(i -> markWritten(i.table(), i.key()));
    }
  }

  /**
   * Reads up to 100 keys of any tables and shards as of one moment (a committed transaction is seen
   * whole or not at all): empty for an absent key, in order. A node coordinates it (in client mode,
   * the owner of the first key).
   */
  public List<Optional<Versioned>> transactGet(List<TableKey> keys) {
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("a read transaction names at least one key");
    }
    TransactGetRequest.Builder b = TransactGetRequest.newBuilder();
    keys.forEach(k -> b.addItems(TableKeyRef.newBuilder().setTable(k.table()).setKey(Protos.key(k.key()))));
    TableKey first = keys.get(0);
    TransactGetResponse r = withRetries(first.table(), first.key(), null, false, (target, stub, header) -> stub.transactGet(b.setHeader(header).build()));
    List<Optional<Versioned>> out = new ArrayList<>(r.getResultsCount());
    r.getResultsList().forEach(g -> out.add(g.getFound() ? Optional.of(new Versioned(g.getValue().toByteArray(), g.getVersion())) : Optional.empty()));
    return out;
  }

  /**
   * The number of the shard that holds {@code key} by this client's map (fetched once if the map
   * lacks the table): which keys a transaction will find in one shard, and so commit in one phase.
   */
  public long shardOf(String table, Key key) {
    return knownTable(table).shardFor(key.partitionKey()).id().number();
  }

  /** {@code table} by this client's map, fetched again once if the map lacks it. */
  private Table knownTable(String table) {
    Table t = map.table(table).orElse(null);
    if (t == null) {
      refreshForMissingTable();
      t = map.table(table).orElseThrow(() -> new ShardwiseException(Status.Code.NOT_FOUND, "no table named '" + table + "'"));
    }
    return t;
  }

  /**
   * Refuses, here, a value that the table's format does not take (a table of JSON documents: one
   * JSON object), as its node would: puts to one owner travel together in one batch, which a node
   * refuses whole, so one bad value must not reach it among other callers' puts.
   */
  private void checkDocument(String table, byte[] value) {
    checkDocument(table, value, "the value");
  }

  /** As {@link #checkDocument(String, byte[])}, naming the value {@code what} in the refusal. */
  private void checkDocument(String table, byte[] value, String what) {
    if (knownTable(table).format() == io.shardwise.core.doc.ValueFormat.JSON) {
      try {
        io.shardwise.proto.Documents.check(value);
      } catch (io.shardwise.proto.Documents.NotADocumentException e) {
        throw new ShardwiseException(Status.Code.INVALID_ARGUMENT, what + " is " + e.getMessage() + " (table " + table
            + " holds JSON documents); nothing was written");
      }
    }
  }

  /**
   * The rows of a table of JSON documents that meet {@code where} (for example {@code color = 'red'
   * AND year >= 2020}; see {@code io.shardwise.core.doc.Where}), at most {@code limit} (up to
   * 10,000). Without an index every shard is read at once, each filtered at its owner; a shard that
   * does not answer within {@code shardDeadline} is named in the plan and the result is not
   * {@linkplain QueryResult#complete complete}.
   */
  public QueryResult query(String table, String where, int limit, java.time.Duration shardDeadline) {
    return query(table, where, limit, shardDeadline, new byte[0]);
  }

  /** The page of {@link #query(String, String, int, java.time.Duration)} after the one that gave {@code pageToken} (its {@link QueryResult#nextPageToken}). */
  public QueryResult query(String table, String where, int limit, java.time.Duration shardDeadline, byte[] pageToken) {
    return query(table, null, where, limit, shardDeadline, pageToken);
  }

  /**
   * As {@link #query(String, String, int, java.time.Duration, byte[])}, only the rows of partition
   * key {@code partitionKey} ({@code null}: every partition): one shard is asked.
   */
  public QueryResult query(String table, byte[] partitionKey, String where, int limit, java.time.Duration shardDeadline, byte[] pageToken) {
    return query(table, partitionKey, where, limit, shardDeadline, pageToken, false);
  }

  /**
   * As {@link #query(String, byte[], String, int, java.time.Duration, byte[])}; with {@code
   * consistent}, a query through an asynchronous global index first waits (up to {@code
   * shardDeadline}) until the index shows every write acknowledged before the query began (it
   * changes nothing for other queries: local and sync global indexes are never stale).
   *
   * @throws ShardwiseException UNAVAILABLE if the index did not catch up in time
   */
  public QueryResult query(String table, byte[] partitionKey, String where, int limit, java.time.Duration shardDeadline, byte[] pageToken,
      boolean consistent) {
    return query(table, partitionKey, where, limit, shardDeadline, pageToken, consistent, List.of());
  }

  /**
   * As {@link #query(String, byte[], String, int, java.time.Duration, byte[], boolean)}, each
   * document with only {@code fields} (paths such as {@code owner.id}; none: whole documents).
   * Through a global index that covers them and the condition's fields ({@link IndexInfo#covering}),
   * no row is fetched: the answer comes from the index's entries (each row's version is then 0).
   */
  public QueryResult query(String table, byte[] partitionKey, String where, int limit, java.time.Duration shardDeadline, byte[] pageToken,
      boolean consistent, List<String> fields) {
    io.shardwise.proto.v1.QueryRequest.Builder request = io.shardwise.proto.v1.QueryRequest.newBuilder().setTable(table)
        .setWhere(where).setLimit(limit).setShardDeadlineMillis((int) Math.min(Integer.MAX_VALUE, shardDeadline.toMillis()))
        .setPageToken(ByteString.copyFrom(pageToken)).setConsistent(consistent).addAllFields(fields);
    if (partitionKey != null) {
      request.setPartitionKey(ByteString.copyFrom(partitionKey)).setHasPartitionKey(true);
    }
    io.shardwise.proto.v1.QueryResponse r = onAnySeed(stub -> stub.query(request.build()));
    io.shardwise.proto.v1.QueryPlan p = r.getPlan();
    return new QueryResult(r.getRowsList().stream().map(Protos::row).toList(), new QueryResult.Plan(p.getAccess(), p.getShards(),
        p.getMissingShardsList(), p.getRowsExamined(), p.getRowsMatched(), p.getBytesShipped(), p.getSlowestShardMicros(), p.getIndex(),
        p.getIndexEntries(), java.util.stream.IntStream.range(0, Math.min(p.getIndexProbesCount(), p.getIndexProbeEntriesCount()))
            .mapToObj(i -> new QueryResult.PostingList(p.getIndexProbes(i), p.getIndexProbeEntries(i))).toList(), p.getIndexShards(),
        p.getRowShards(), p.getConsistentWaitMicros(), p.getStalePossible(), p.getCovered()),
        r.getComplete(), r.getTruncated(), r.getNextPageToken().toByteArray());
  }

  /**
   * Creates a local secondary index on {@code field} (a path: {@code owner.id}) of a table of JSON
   * documents. It is built online: every write maintains it at once, every node indexes the rows it
   * held before, and queries use it once {@link IndexInfo#ready} ({@link #indexes}).
   *
   * @throws ShardwiseException INVALID_ARGUMENT for a table of bytes or a bad field, ALREADY_EXISTS
   *     for an index on that field, LIMIT_EXCEEDED past {@value io.shardwise.core.doc.IndexDef#MAX_PER_TABLE} indexes
   */
  public List<IndexInfo> createIndex(String table, String field) {
    return indexInfos(onSeed(stub -> stub.createIndex(io.shardwise.proto.v1.CreateIndexRequest.newBuilder().setTable(table)
        .setField(field).setScope("local").build())));
  }

  /**
   * Creates a global secondary index on {@code field}: a table of its own ({@code table.field}),
   * partitioned by the indexed value ({@code strategy} "hashrange" or "range"; empty: hashrange) over
   * {@code shards} shards (0: one per live node): a query of one value reads one index shard. Kept
   * {@linkplain GlobalIndexMode#ASYNC asynchronously} (a write costs its own shard; the index lags
   * by {@link IndexInfo#lagMillis}) or {@linkplain GlobalIndexMode#SYNC in sync} (never stale; a
   * write costs a two-phase commit). Built online like a local index ({@link #indexes}).
   */
  public List<IndexInfo> createGlobalIndex(String table, String field, GlobalIndexMode mode, String strategy, int shards) {
    return createGlobalIndex(table, field, mode, strategy, shards, List.of());
  }

  /**
   * {@link #createGlobalIndex(String, String, GlobalIndexMode, String, int)} whose entries also hold
   * {@code covering} (paths; at most 16): a query needing only the indexed field and these — in its
   * condition and its {@code fields} — is answered from the index without fetching a row.
   */
  public List<IndexInfo> createGlobalIndex(String table, String field, GlobalIndexMode mode, String strategy, int shards,
      List<String> covering) {
    return indexInfos(onSeed(stub -> stub.createIndex(io.shardwise.proto.v1.CreateIndexRequest.newBuilder().setTable(table)
        .setField(field).setScope("global").setMode(mode.label()).setStrategy(strategy == null ? "" : strategy).setShards(shards)
        .addAllCovering(covering).build())));
  }

  /** {@link #createGlobalIndex(String, String, GlobalIndexMode, String, int)}, kept asynchronously (the default). */
  public List<IndexInfo> createGlobalIndex(String table, String field, String strategy, int shards) {
    return createGlobalIndex(table, field, GlobalIndexMode.ASYNC, strategy, shards);
  }

  /** Drops the index on {@code field}: queries stop using it at once, each node deletes its entries. */
  public List<IndexInfo> dropIndex(String table, String field) {
    return indexInfos(onSeed(stub -> stub.dropIndex(io.shardwise.proto.v1.DropIndexRequest.newBuilder().setTable(table).setField(field)
        .build())));
  }

  /** The table's indexes and how far each is built. */
  public List<IndexInfo> indexes(String table) {
    return indexInfos(onAnySeed(stub -> stub.indexStatus(io.shardwise.proto.v1.IndexStatusRequest.newBuilder().setTable(table).build())));
  }

  /**
   * The index consistency checker: on every live node, each local index of the table compared with
   * the node's rows; each ready global index's table compared with every row (node "global"). Every
   * row and entry is read: a check, not a query, exact when no write runs meanwhile. An index is
   * {@link IndexCheck#exact} when no entry is missing and none is left over.
   */
  public IndexCheck.Report checkIndexes(String table) {
    io.shardwise.proto.v1.IndexCheckResponse r = onAnySeed(stub -> stub.checkIndexes(io.shardwise.proto.v1.IndexStatusRequest.newBuilder()
        .setTable(table).build()));
    return new IndexCheck.Report(r.getChecksList().stream().map(c -> new IndexCheck(c.getNode(), c.getField(), c.getRows(), c.getEntries(),
        c.getMissing(), c.getExtra())).toList(), r.getUnreachableList());
  }

  private static List<IndexInfo> indexInfos(io.shardwise.proto.v1.IndexStatusResponse r) {
    return r.getIndexesList().stream().map(i -> new IndexInfo(i.getId(), i.getField(), i.getScope(), i.getState(), i.getReplicas(),
        i.getReplicasBuilt(), i.getRowsIndexed(), i.getBuildingOnList(), i.getIndexTable(), i.getMode(), i.getPendingRows(), i.getLagMillis(),
        i.getCoveringList()))
        .toList();
  }

  /** A transaction's outcome as its record says now (PENDING while undecided), by the id an outcome carries. */
  public TxnOutcome txnStatus(String txnId) {
    return io.shardwise.proto.TxnCodec.outcome(onAnySeed(stub -> stub.txnStatus(TxnStatusRequest.newBuilder().setTxnId(txnId).build())));
  }

  /** Reads several keys; an empty result for each absent key, in order. */
  public List<Optional<Versioned>> batchGet(String table, List<Key> keys) {
    List<Optional<Versioned>> out = new ArrayList<>(java.util.Collections.nCopies(keys.size(), Optional.<Versioned>empty()));
    Map<String, List<Integer>> groups = groupByTarget(table, keys.size(), keys::get);
    for (Map.Entry<String, List<Integer>> g : groups.entrySet()) {
      BatchGetResponse r = withRetries(table, keys.get(g.getValue().get(0)), g.getKey(), false, (target, stub, header) -> {
        BatchGetRequest.Builder b = BatchGetRequest.newBuilder().setHeader(header).setTable(table);
        g.getValue().forEach(i -> b.addKeys(Protos.key(keys.get(i))));
        return stub.batchGet(b.build());
      });
      for (int j = 0; j < g.getValue().size(); j++) {
        GetResponse one = r.getResults(j);
        if (one.getFound()) {
          out.set(g.getValue().get(j), Optional.of(new Versioned(one.getValue().toByteArray(), one.getVersion())));
        }
      }
    }
    return out;
  }

  /**
   * One page of a scan. Single-partition scans go to the partition's owner; scans over several
   * shards are coordinated by a node (or the router), which reads the shards in order.
   */
  public ScanPage scan(Scan scan) {
    ScanRequest request = Protos.scan(scan);
    if (scan.scope() == Scan.Scope.PARTITION) {
      Key key = Key.of(scan.from());
      return Protos.page(call(scan.table(), key, (target, stub, header) -> stub.scan(request.toBuilder().setHeader(header).build())));
    }
    return Protos.page(withRetries(scan.table(), null, null, false,
        (target, stub, header) -> stub.scan(request.toBuilder().setHeader(header.toBuilder().setForward(true)).build())));
  }

  /**
   * Up to {@code limit} rows whose partition keys are at or after {@code from}, in key order,
   * across as many pages (and shards) as it takes: a short range scan on a {@code range} table.
   */
  public List<KeyValue> scanFrom(String table, byte[] from, int limit) {
    List<KeyValue> rows = new ArrayList<>();
    Scan scan = Scan.range(table, from, null);
    ScanPage page;
    do {
      page = scan(scan.limit(Math.min(limit - rows.size(), MAX_SCAN_PAGE)));
      rows.addAll(page.rows());
      scan = page.hasMore() ? scan.after(page) : scan;
    } while (rows.size() < limit && page.hasMore());
    return rows;
  }

  // ------------------------------------------------------------------ tables and cluster

  /** Creates a table; returns it as created, with the settings its strategy took by default filled in. */
  public TableDescription createTable(String name, TableSpec spec) {
    CreateTableRequest.Builder request = CreateTableRequest.newBuilder().setName(name).setSpec(Protos.spec(spec));
    spec.replicas().ifPresent(request::setReplicas);
    spec.minInSync().ifPresent(request::setMinInSync);
    if (spec.format() != io.shardwise.core.doc.ValueFormat.BYTES) {
      request.setValueFormat(spec.format().label());
    }
    TableInfo info = onSeed(stub -> stub.createTable(request.build()));
    awaitEpoch(info.getMapEpoch());
    return Protos.table(info);
  }

  public List<TableDescription> listTables() {
    return onAnySeed(stub -> stub.listTables(ListTablesRequest.getDefaultInstance())).getTablesList().stream().map(Protos::table).toList();
  }

  /** A table and its shards; with {@code withStats}, each shard's keys and bytes too (its owner reads the whole shard). */
  public TableDescription describeTable(String name, boolean withStats) {
    return Protos.table(onAnySeed(stub -> stub.describeTable(DescribeTableRequest.newBuilder().setName(name).setWithStats(withStats).build())));
  }

  /** Drops a table; its data stays in its owners' trash for their trash grace, and {@link #undropTable} brings it back. */
  public void dropTable(String name) {
    long epoch = onSeed(stub -> stub.dropTable(DropTableRequest.newBuilder().setName(name).build())).getMapEpoch();
    awaitEpoch(epoch);
    if (nearCache != null) {
      nearCache.forgetTable(name);
    }
  }

  /**
   * Splits shard {@code shard} of a {@code range} table at {@code partitionKey}, which becomes the
   * first key of the upper half: two new shards on the same owner, and only the map changes.
   *
   * @return the table after the split
   */
  public TableDescription splitShard(String table, long shard, byte[] partitionKey) {
    return splitShard(io.shardwise.proto.v1.SplitShardRequest.newBuilder().setTable(table).setShard(shard)
        .setAtPartitionKey(com.google.protobuf.ByteString.copyFrom(partitionKey)).build());
  }

  /**
   * Splits shard {@code shard} of a {@code hashrange} table at hash {@code at}, the first hash of
   * the upper half: two new shards on the same owner, and only the map changes.
   */
  public TableDescription splitShardAtHash(String table, long shard, long at) {
    return splitShard(io.shardwise.proto.v1.SplitShardRequest.newBuilder().setTable(table).setShard(shard).setHasAtHash(true).setAtHash(at)
        .build());
  }

  /**
   * Splits shard {@code shard} of a {@code range} or {@code hashrange} table by size: its owner
   * finds the partition key (hash) with half the shard's live bytes below it, never splitting one
   * partition key; an empty hashrange shard splits at the middle of its hashes.
   *
   * @throws ShardwiseException FAILED_PRECONDITION if the shard is empty (range) or one partition key
   */
  public TableDescription splitShard(String table, long shard) {
    return splitShard(io.shardwise.proto.v1.SplitShardRequest.newBuilder().setTable(table).setShard(shard).build());
  }

  private TableDescription splitShard(io.shardwise.proto.v1.SplitShardRequest request) {
    TableInfo info = onSeed(stub -> stub.splitShard(request));
    awaitEpoch(info.getMapEpoch());
    return Protos.table(info);
  }

  /**
   * Merges shard {@code shard} of a {@code range} or {@code hashrange} table with the next one in
   * order into one new shard. Both must be on one node.
   */
  public TableDescription mergeShards(String table, long shard) {
    TableInfo info = onSeed(stub -> stub.mergeShards(io.shardwise.proto.v1.MergeShardsRequest.newBuilder().setTable(table).setShard(shard).build()));
    awaitEpoch(info.getMapEpoch());
    return Protos.table(info);
  }

  /**
   * Changes a replicated table's replicas per shard ({@code replicas}) and the fewest in-sync
   * replicas a write needs ({@code minInSync}); 0 leaves either as it is (a new factor with the
   * default min in-sync, a majority, moves the min with it). Returns at once: the cluster then adds
   * or removes followers a shard at a time, as {@link #describeTable} shows.
   */
  public TableDescription setReplication(String table, int replicas, int minInSync) {
    TableInfo info = onSeed(stub -> stub.setReplication(io.shardwise.proto.v1.SetReplicationRequest.newBuilder().setTable(table)
        .setReplicas(replicas).setMinInSync(minInSync).build()));
    awaitEpoch(info.getMapEpoch());
    return Protos.table(info);
  }

  /**
   * Splits a {@code range} or {@code hashrange} table into {@code shards} shards in all, from a
   * sample of its live keys: each shard in proportion to its bytes, at points of equal bytes its
   * owner finds (never inside a partition key); a hashrange shard without keys into equal hash
   * ranges. Only the map changes; the new shards stay on their nodes until the balancer spreads them.
   *
   * @throws ShardwiseException INVALID_ARGUMENT for a count not above the table's shards or above
   *     the limit, FAILED_PRECONDITION for a range table without keys
   */
  public TableDescription presplitTable(String table, int shards) {
    TableInfo info = onSeed(stub -> stub.presplitTable(io.shardwise.proto.v1.PresplitTableRequest.newBuilder().setTable(table)
        .setShards(shards).build()));
    awaitEpoch(info.getMapEpoch());
    return Protos.table(info);
  }

  /**
   * Brings back the last table dropped under {@code name} with the data its owners still keep in
   * their trash; fails with ALREADY_EXISTS while a table has the name.
   */
  public Undropped undropTable(String name) {
    UndropTableResponse r = onSeed(stub -> stub.undropTable(UndropTableRequest.newBuilder().setName(name).build()));
    awaitEpoch(r.getTable().getMapEpoch());
    if (nearCache != null) {
      nearCache.forgetTable(name);
    }
    return new Undropped(Protos.table(r.getTable()), r.getShardsFoundInTrash(), r.getOwnersNotAskedList());
  }

  /** Every node and table, with each node's keys, bytes and trash (a node that does not answer: sizes unknown). */
  public ClusterStatus clusterStatus() {
    ClusterStatusResponse r = onAnySeedAt(seed -> AdminServiceGrpc.newBlockingStub(channel(seed))
        .withDeadlineAfter(ADMIN_DEADLINE_SECONDS, TimeUnit.SECONDS).clusterStatus(ClusterStatusRequest.getDefaultInstance()));
    return new ClusterStatus(r.getMapEpoch(), r.getNodesList().stream().map(Protos::node).toList(),
        r.getTablesList().stream().map(Protos::table).toList());
  }

  /**
   * After a change this client made (a table created or dropped), routes by a map that has it: the
   * first node to answer a refresh may not have applied it yet, so refresh until the map is at
   * {@code epoch} (at most {@code MAP_FETCH_DEADLINE}; later calls refresh on their own).
   */
  private void awaitEpoch(long epoch) {
    if (routing != Routing.CLIENT) {
      return;
    }
    long deadline = System.nanoTime() + MAP_FETCH_DEADLINE.toNanos();
    while (map.epoch() < epoch && System.nanoTime() < deadline) {
      refreshQuietly();
      if (map.epoch() < epoch) {
        sleep(20);
      }
    }
  }

  // ------------------------------------------------------------------ plumbing

  /** One attempt of a request: to {@code target} (host:port), through {@code stub}, with {@code header}. */
  interface Call<R> {
    R apply(String target, DataServiceGrpc.DataServiceBlockingStub stub, RequestHeader header);
  }

  /** Concurrent single-key requests to one owner leave together (client mode only). */
  private final Map<String, OwnerBatcher> batchers = new ConcurrentHashMap<>();

  /** Runs what an asynchronous call must not run on a Netty thread: re-sends and retries. */
  private final java.util.concurrent.ExecutorService asyncRetries = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "shardwise-client-retry");
    t.setDaemon(true);
    return t;
  });

  private OwnerBatcher batcher(String target, String table) {
    return batchers.computeIfAbsent(target + "\u0000" + table, k -> new OwnerBatcher(channel(target), table, 0, asyncRetries));
  }

  /** The batcher of follower reads (at this client's max staleness) to {@code target}. */
  private OwnerBatcher followerBatcher(String target, String table) {
    return batchers.computeIfAbsent(target + "\u0000" + table + "\u0000follower",
        k -> new OwnerBatcher(channel(target), table, followerStalenessMillis, asyncRetries));
  }

  private <R> R call(String table, Key key, Call<R> call) {
    return withRetries(table, key, null, false, call);
  }

  /** A write with a write id: its retries are safe, and an outcome it cannot know is reported as such. */
  private <R> R write(String table, Key key, Call<R> call) {
    return withRetries(table, key, null, true, call);
  }

  /**
   * Sends a request to its target (the key's owner in client mode, else a seed), retrying on
   * WRONG_SHARD (after refreshing the map), MAP_BEHIND, NOT_SERVING and UNAVAILABLE, with backoff.
   */
  private <R> R withRetries(String table, Key key, String fixedTarget, boolean write, Call<R> call) {
    RuntimeException last = null;
    StatusRuntimeException ambiguous = null; // an attempt that may have been applied
    for (int attempt = 0; attempt < maxAttempts; attempt++) {
      String target;
      try {
        target = fixedTarget != null && attempt == 0 ? fixedTarget : target(table, key);
      } catch (ShardwiseException e) {
        if (e.code() != Status.Code.UNAVAILABLE) {
          throw e;
        }
        // The owner is not in our list of live nodes: it may have just restarted. Refresh, wait, retry.
        last = e;
        refreshQuietlyRateLimited();
        sleep(Math.min(UNREACHABLE_BACKOFF_CAP_MILLIS, 10L << attempt));
        continue;
      }
      // A batch group retried after a refusal may now span several owners: let the node forward.
      boolean forward = routing == Routing.NODE || (fixedTarget != null && attempt > 0);
      long requestEpoch = map.epoch();
      RequestHeader header = RequestHeader.newBuilder().setMapEpoch(requestEpoch).setForward(forward).build();
      try {
        return call.apply(target, DataServiceGrpc.newBlockingStub(channel(target)).withDeadlineAfter(30, TimeUnit.SECONDS), header);
      } catch (StatusRuntimeException e) {
        last = e;
        ErrorInfo.Code code = Errors.code(e);
        if (code == ErrorInfo.Code.VERSION_MISMATCH) {
          throw new VersionMismatchException(e, Errors.info(e).map(ErrorInfo::getCurrentVersion).orElse(0L));
        }
        // A counter refusal proves the write was not applied, even after an ambiguous attempt: a
        // retry of an applied write is answered from its record before the operation is looked at.
        if (code == ErrorInfo.Code.COUNTER_SEALED) {
          throw new CounterSealedException(e);
        }
        if (code == ErrorInfo.Code.NOT_A_COUNTER || code == ErrorInfo.Code.NOT_A_LIST) {
          throw new ShardwiseException(e);
        }
        // Without the server's error info, a failure may have come after the owner applied the
        // write (the connection or the reply was lost); a write retries it under the same id.
        boolean maybeApplied = code == ErrorInfo.Code.CODE_UNSPECIFIED && (e.getStatus().getCode() == Status.Code.UNAVAILABLE
            || e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED || e.getStatus().getCode() == Status.Code.CANCELLED);
        if (write && maybeApplied) {
          ambiguous = e;
        }
        // A deadline is not retried (the owner may be paused: another 30 s would not help); for a
        // write it ends as an unknown outcome below.
        boolean retriable = code == ErrorInfo.Code.WRONG_SHARD || code == ErrorInfo.Code.MAP_BEHIND || code == ErrorInfo.Code.NOT_SERVING
            || e.getStatus().getCode() == Status.Code.UNAVAILABLE;
        if (!retriable) {
          if (ambiguous != null) {
            throw new OutcomeUnknownException(ambiguous);
          }
          throw new ShardwiseException(e);
        }
        long refusedAt = Errors.info(e).map(ErrorInfo::getMapEpoch).orElse(0L);
        if (routing == Routing.CLIENT && code == ErrorInfo.Code.WRONG_SHARD && refusedAt > requestEpoch) {
          // The refusal names a newer map (a shard moved): get it and go to the new owner at once.
          try {
            catchUpTo(refusedAt, target);
          } catch (RuntimeException ignored) {
            // retried below with backoff
          }
          if (map.epoch() > requestEpoch) {
            continue;
          }
        }
        if (routing == Routing.CLIENT && (code == ErrorInfo.Code.WRONG_SHARD || e.getStatus().getCode() == Status.Code.UNAVAILABLE)) {
          refreshQuietlyRateLimited();
        } else if (routing != Routing.CLIENT) {
          nextSeed = (nextSeed + 1) % seeds.size();
        }
        // A node that cannot be reached costs nothing to ask again, and its shards get a new leader
        // the moment its session expires: look again soon. A node that refused is asked more gently.
        boolean unreachable = code == ErrorInfo.Code.CODE_UNSPECIFIED && e.getStatus().getCode() == Status.Code.UNAVAILABLE;
        sleep(Math.min(unreachable ? UNREACHABLE_BACKOFF_CAP_MILLIS : 500, 10L << attempt));
      }
    }
    if (ambiguous != null) {
      throw new OutcomeUnknownException(ambiguous);
    }
    throw last instanceof StatusRuntimeException ? new ShardwiseException((StatusRuntimeException) last) : last;
  }

  private void refreshQuietlyRateLimited() {
    try {
      refreshRateLimited();
    } catch (RuntimeException e) {
      // retried with the map we have
    }
  }

  /** The address a request for {@code key} goes to. */
  /**
   * For a follower read in client mode: a live replica of the key's shard at random (the leader
   * among them), or {@code null} to let the usual target take it (other modes, a table of one
   * replica, a map without the table yet).
   */
  private String replicaTarget(String table, Key key) {
    if (routing != Routing.CLIENT) {
      return null;
    }
    Table t = map.table(table).orElse(null);
    if (t == null || !t.replication().replicated()) {
      return null;
    }
    List<NodeId> replicas = t.shardFor(key.partitionKey()).replicas();
    NodeId pick = replicas.get(java.util.concurrent.ThreadLocalRandom.current().nextInt(replicas.size()));
    return addresses.get(pick); // null if not live: the leader is asked
  }

  private String target(String table, Key key) {
    if (routing != Routing.CLIENT || key == null) {
      return seeds.get(Math.floorMod(nextSeed, seeds.size()));
    }
    NodeId owner = knownTable(table).shardFor(key.partitionKey()).owner();
    String address = addresses.get(owner);
    if (address == null) {
      throw new ShardwiseException(Status.Code.UNAVAILABLE, "the owner " + owner + " of this key is not live");
    }
    return address;
  }

  private Map<String, List<Integer>> groupByTarget(String table, int count, Function<Integer, Key> keyAt) {
    Map<String, List<Integer>> groups = new LinkedHashMap<>();
    for (int i = 0; i < count; i++) {
      groups.computeIfAbsent(target(table, keyAt.apply(i)), a -> new ArrayList<>()).add(i);
    }
    return groups;
  }

  /** How long an admin call may take on one node. */
  private static final long ADMIN_DEADLINE_SECONDS = 60;

  /**
   * A call that changes the cluster (create, drop, undrop), to one seed: it is not re-sent to
   * another, since a call that failed may still have been applied.
   */
  private <R> R onSeed(Function<DataServiceGrpc.DataServiceBlockingStub, R> call) {
    try {
      return call.apply(DataServiceGrpc.newBlockingStub(channel(seeds.get(Math.floorMod(nextSeed, seeds.size()))))
          .withDeadlineAfter(ADMIN_DEADLINE_SECONDS, TimeUnit.SECONDS));
    } catch (StatusRuntimeException e) {
      throw new ShardwiseException(e);
    }
  }

  /** A read-only admin call: to each seed in turn while they are unavailable (a node just killed, say). */
  private <R> R onAnySeed(Function<DataServiceGrpc.DataServiceBlockingStub, R> call) {
    return onAnySeedAt(seed -> call.apply(DataServiceGrpc.newBlockingStub(channel(seed))
        .withDeadlineAfter(ADMIN_DEADLINE_SECONDS, TimeUnit.SECONDS)));
  }

  /** {@link #onAnySeed} for a call given the seed's address. */
  private <R> R onAnySeedAt(Function<String, R> call) {
    StatusRuntimeException last = null;
    for (int i = 0; i < seeds.size(); i++) {
      int index = Math.floorMod(nextSeed + i, seeds.size());
      try {
        R r = call.apply(seeds.get(index));
        nextSeed = index;
        return r;
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
          throw new ShardwiseException(e);
        }
        last = e;
      }
    }
    throw new ShardwiseException(last);
  }

  private ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address, a -> Channels.openDirect(a, maxMessageBytes));
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ShardwiseException(Status.Code.CANCELLED, "interrupted");
    }
  }

  @Override
  public void close() {
    if (refresher != null) {
      refresher.shutdownNow();
    }
    asyncRetries.shutdownNow();
    Channels.closeAll(channels.values());
  }
}
