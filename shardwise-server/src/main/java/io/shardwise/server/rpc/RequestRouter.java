package io.shardwise.server.rpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.Route;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.DataServiceGrpc;
import io.shardwise.proto.v1.ErrorInfo;
import io.shardwise.proto.v1.RequestHeader;
import io.shardwise.server.shard.ShardFencedException;
import io.shardwise.server.storage.ShardRef;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a data request goes: every request is routed by {@link ShardMap#route} — served from this
 * node's store when it owns the key's shard (the caller's {@code Local}); otherwise forwarded to the
 * owner (one hop, the caller's {@code Remote}) when the request allows it or this is a router, else
 * refused with WRONG_SHARD. A forward that meets a newer map downstream waits for this process's
 * map to catch up and routes again, at most {@value #ATTEMPTS} times; a shard paused by a move's
 * cutover is waited for, then routed again. A batch goes to each owner at once. The data service
 * says what a request does; this class, where it does it.
 */
final class RequestRouter {

  static final int ATTEMPTS = 3;
  static final Duration CATCH_UP = Duration.ofSeconds(2);
  /** How long a request waits for a shard paused by a move's cutover before routing again. */
  private static final Duration PAUSE_WAIT = Duration.ofSeconds(2);

  private final ClusterContext ctx;
  /** What a request does when it meets a transaction's intent. */
  private final MeetingIntents intents;

  RequestRouter(ClusterContext ctx, MeetingIntents intents) {
    this.ctx = ctx;
    this.intents = intents;
  }

  /** Serves a request for one key here, or forwards it to the owner. */
  interface Local<R> {
    R serve(ShardMap map, ShardRef shard);
  }

  interface Remote<R> {
    R call(DataServiceGrpc.DataServiceBlockingStub owner, RequestHeader header);
  }

  <R> R keyed(RequestHeader h, String tableName, Key key, boolean write, Local<R> local, Remote<R> remote) {
    return keyed(h, tableName, key, write, false, local, remote);
  }

  /** A single-key request ({@code merge}: a write that merges, an increment or an append, as hot-key sampling tells them apart). */
  <R> R keyed(RequestHeader h, String tableName, Key key, boolean write, boolean merge, Local<R> local, Remote<R> remote) {
    ShardMap map = mapFor(h);
    StatusRuntimeException last = null;
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      Route route = route(map, tableName, key.partitionKey(), h.getMapEpoch());
      if (route instanceof Route.Serve) {
        if (write && !ctx.writable().getAsBoolean()) {
          throw Errors.notServing(ctx.self().value(), map.epoch());
        }
        Table table = map.table(tableName).orElseThrow();
        if (table.replication().replicated() && (write || ctx.shards().leaderReadsWait())) {
          Inline.mayBlock(); // it waits for the log's followers (a read, only without a read lease)
        }
        ShardRef shard = ShardRef.of(table, ((Route.Serve) route).shard().id().number());
        ctx.hooks().routedHere(shard, write);
        try {
          ShardMap served0 = map;
          R served = intents.served(tableName, () -> local.serve(served0, shard));
          if (write) {
            ctx.hooks().written(shard);
          }
          if (ctx.heat() != null) {
            ctx.heat().sample(shard, key.partitionKey(), write, merge);
          }
          return served;
        } catch (ShardFencedException e) {
          Inline.mayBlock(); // nothing was written: the local shard refuses before the store is touched
          last = DataServiceImpl.moving(e);
          e.awaitOpen(PAUSE_WAIT);
          map = ctx.map().current(); // the shard may belong to another node now
          continue;
        }
      }
      if (route instanceof Route.NoSuchTable) {
        throw Errors.noSuchTable(tableName, map.epoch());
      }
      if (route instanceof Route.MapBehind) {
        throw Errors.mapBehind(map.epoch(), h.getMapEpoch());
      }
      Route.WrongShard wrong = (Route.WrongShard) route;
      String address = java.util.Objects.toString(ctx.addressOf(wrong.ownerHint()), "");
      if (!mayForward(h)) {
        throw Errors.wrongShard(map.epoch(), wrong.shard().toString(), wrong.ownerHint().value(), address);
      }
      Inline.mayBlock();
      try {
        return remote.call(ctx.peers().data(liveAddress(wrong.ownerHint())),
            forwardHeader(map).toBuilder().setRequestId(h.getRequestId()).build()); // the owner dedups the retry too
      } catch (StatusRuntimeException e) {
        last = e;
        map = catchUpAfter(e, map);
      }
    }
    throw last;
  }

  interface LocalBatch {
    void serve(ShardMap map, Table table, List<Integer> indexes);
  }

  interface RemoteBatch {
    void call(DataServiceGrpc.DataServiceBlockingStub owner, RequestHeader header, List<Integer> indexes);
  }

  /** Groups keys by owner, serves this node's group atomically, forwards the rest; returns shards touched. */
  int batch(RequestHeader h, String tableName, byte[][] partitionKeys, boolean write, LocalBatch local, RemoteBatch remote) {
    ShardMap map = mapFor(h);
    List<Integer> pending = new ArrayList<>();
    for (int i = 0; i < partitionKeys.length; i++) {
      pending.add(i);
    }
    java.util.Set<Long> shards = new java.util.TreeSet<>();
    StatusRuntimeException last = null;
    for (int attempt = 0; attempt < ATTEMPTS && !pending.isEmpty(); attempt++) {
      ShardMap current = map;
      Table table = current.table(tableName).orElseThrow(() -> Errors.noSuchTable(tableName, current.epoch()));
      Map<NodeId, List<Integer>> byOwner = new LinkedHashMap<>();
      for (int i : pending) {
        ShardAssignment shard = table.shardFor(partitionKeys[i]);
        shards.add(shard.id().number());
        byOwner.computeIfAbsent(shard.owner(), o -> new ArrayList<>()).add(i);
      }
      for (NodeId owner : byOwner.keySet()) {
        if (!owner.equals(ctx.self()) && !mayForward(h)) {
          ShardAssignment shard = table.shardFor(partitionKeys[byOwner.get(owner).get(0)]);
          throw Errors.wrongShard(current.epoch(), shard.id().toString(), owner.value(), java.util.Objects.toString(ctx.addressOf(owner), ""));
        }
      }
      List<Integer> mine = ctx.isRouter() ? null : byOwner.remove(ctx.self());
      if (!byOwner.isEmpty() || (mine != null && table.replication().replicated() && (write || ctx.shards().leaderReadsWait()))) {
        // before serving this node's group, so a second run writes nothing twice; a replicated
        // table's writes wait for the log's followers, and so do its reads without a read lease
        // (with one, a read that finds its lease run out leaves the network thread in NodeReplication)
        Inline.mayBlock();
      }
      List<Integer> retry = new ArrayList<>();
      // Other owners' groups go out at once, each on a thread of its own, and are awaited after this
      // node's group is served: a batch (or a transaction's round) over several owners takes about
      // as long as its slowest owner, not the sum of them. The groups touch disjoint indexes.
      Map<NodeId, java.util.concurrent.Future<?>> sent = new LinkedHashMap<>();
      if (byOwner.size() > 1 || (mine != null && !byOwner.isEmpty())) {
        for (Map.Entry<NodeId, List<Integer>> group : byOwner.entrySet()) {
          sent.put(group.getKey(), Inline.BLOCKING.submit(() -> {
            remote.call(ctx.peers().data(liveAddress(group.getKey())), forwardHeader(current), group.getValue());
            return null;
          }));
        }
      }
      if (mine != null) {
        try {
          if (write && !ctx.writable().getAsBoolean()) {
            throw Errors.notServing(ctx.self().value(), current.epoch());
          }
          if (ctx.hooks() != RequestHooks.NONE) {
            mine.stream().map(i -> ShardRef.of(table, table.shardFor(partitionKeys[i]).id().number())).distinct().forEach(s -> ctx.hooks().routedHere(s, write));
          }
          try {
            intents.served(tableName, () -> {
              local.serve(current, table, mine);
              return null;
            });
            if (write && ctx.hooks() != RequestHooks.NONE) {
              mine.stream().map(i -> ShardRef.of(table, table.shardFor(partitionKeys[i]).id().number())).distinct().forEach(ctx.hooks()::written);
            }
          } catch (ShardFencedException e) {
            Inline.mayBlock(); // the batch is all or nothing: nothing was written
            last = DataServiceImpl.moving(e);
            e.awaitOpen(PAUSE_WAIT);
            map = ctx.map().current();
            retry.addAll(mine);
          }
        } catch (RuntimeException failed) {
          awaitQuietly(sent.values()); // nothing of this request still runs when it fails
          throw failed;
        }
      }
      for (Map.Entry<NodeId, List<Integer>> group : byOwner.entrySet()) {
        try {
          java.util.concurrent.Future<?> f = sent.get(group.getKey());
          if (f == null) {
            remote.call(ctx.peers().data(liveAddress(group.getKey())), forwardHeader(current), group.getValue());
          } else {
            awaitSent(f);
          }
        } catch (StatusRuntimeException e) {
          last = e;
          try {
            map = catchUpAfter(e, map);
          } catch (StatusRuntimeException failed) {
            awaitQuietly(sent.values()); // nothing of this request still runs when it fails
            throw failed;
          }
          retry.addAll(group.getValue());
        }
      }
      pending = retry;
    }
    if (!pending.isEmpty()) {
      throw last;
    }
    return shards.size();
  }

  /** A forwarded group's call, awaited: its failure as it was thrown (a StatusRuntimeException, or another runtime exception). */
  private static void awaitSent(java.util.concurrent.Future<?> f) {
    try {
      f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted while forwarding").asRuntimeException();
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private static void awaitQuietly(java.util.Collection<java.util.concurrent.Future<?>> sent) {
    for (java.util.concurrent.Future<?> f : sent) {
      try {
        awaitSent(f);
      } catch (RuntimeException ignored) {
        // the request fails for another reason
      }
    }
  }

  private Route route(ShardMap map, String table, byte[] partitionKey, long requestEpoch) {
    if (!ctx.isRouter()) {
      return map.route(ctx.self(), table, partitionKey, requestEpoch);
    }
    Table t = map.table(table).orElse(null);
    if (t == null) {
      return new Route.NoSuchTable(map.epoch(), table);
    }
    ShardAssignment shard = t.shardFor(partitionKey);
    return new Route.WrongShard(map.epoch(), shard.id(), shard.owner());
  }

  private boolean mayForward(RequestHeader h) {
    return ctx.isRouter() || h.getForward();
  }

  /** This process's map, after waiting briefly for it to reach the caller's epoch. */
  ShardMap mapFor(RequestHeader h) {
    ShardMap map = ctx.map().current();
    if (h.getMapEpoch() > map.epoch()) {
      Inline.mayBlock();
      return ctx.map().await(h.getMapEpoch(), CATCH_UP);
    }
    return map;
  }

  /** After a forward was refused: wait for a newer map if the refusal says one exists, else rethrow. */
  private ShardMap catchUpAfter(StatusRuntimeException e, ShardMap map) {
    ErrorInfo.Code code = Errors.code(e);
    if (code != ErrorInfo.Code.WRONG_SHARD && code != ErrorInfo.Code.MAP_BEHIND) {
      throw e;
    }
    long seen = Errors.info(e).map(ErrorInfo::getMapEpoch).orElse(0L);
    return ctx.map().await(Math.max(map.epoch() + 1, seen), CATCH_UP);
  }

  String liveAddress(NodeId node) {
    String address = ctx.addressOf(node);
    if (address == null) {
      throw Status.UNAVAILABLE.withDescription("the owner " + node + " is not live").asRuntimeException();
    }
    return address;
  }

  static RequestHeader forwardHeader(ShardMap map) {
    return RequestHeader.newBuilder().setMapEpoch(map.epoch()).setForward(false).build();
  }
}
