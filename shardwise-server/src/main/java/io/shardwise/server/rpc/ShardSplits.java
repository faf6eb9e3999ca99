package io.shardwise.server.rpc;

import io.grpc.Status;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.ShardMapDelta;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.Strategy;
import io.shardwise.proto.Errors;
import io.shardwise.proto.v1.MoveServiceGrpc;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.SizeSplitPointRequest;
import io.shardwise.proto.v1.SizeSplitPointResponse;
import io.shardwise.proto.v1.QuiesceRequest;
import io.shardwise.proto.v1.QuiescedShard;
import io.shardwise.proto.v1.ReplicationServiceGrpc;
import io.shardwise.proto.v1.SplitShardRequest;
import io.shardwise.server.coordination.Coordinator;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Splitting a range or hashrange shard: at a given key or hash, or by size (the owner finds the
 * point, {@code SizeSplitPoint}), then one compare-and-set of the map and nothing else, since the
 * keys of both halves already lie where they will stay. The owner gives each half the shard's
 * version floor before it serves them and keeps the keys where they are (the old shard's span is
 * the halves'). Merges are the same: one compare-and-set. A replicated shard is first quiesced by
 * its leader, so every replica is cut at the same log position ({@link #cutReplicated}). The one
 * definition used by {@code table split}, {@code table merge} and the balancer's policies.
 */
public final class ShardSplits {

  /** The most shards one table may have. */
  public static final int MAX_SHARDS = TableAdmin.MAX_SHARDS;

  private final Coordinator coordinator;
  private final Peers peers;

  public ShardSplits(Coordinator coordinator, Peers peers) {
    this.coordinator = coordinator;
    this.peers = peers;
  }

  /**
   * Splits the shard {@code request} names, at its key or hash or, without one, by size.
   *
   * @param current the map to find the shard's owner in (the split itself is made against the stored map)
   * @return the stored map with the split
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for no such table or shard, INVALID_ARGUMENT for
   *     a point outside the shard or a strategy that does not split, FAILED_PRECONDITION when there
   *     is no split by size (an empty range shard, a single partition key)
   */
  public ShardMap split(SplitShardRequest asked, ShardMap current) {
    SplitShardRequest request = asked.getAtPartitionKey().isEmpty() && !asked.getHasAtHash() ? bySize(asked, current) : asked;
    Table before = current.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), current.epoch()));
    if (!before.replication().replicated()) {
      return coordinator.updateMap(map -> Optional.of(splitDelta(map, request, Map.of())));
    }
    ShardAssignment s = shardOf(before, request.getShard(), current.epoch());
    splitDelta(current, request, null); // a request that cannot be made is refused before any write is held
    return cutReplicated(before, List.of(s.id().number()), (map, quiesced) -> splitDelta(map, request, quiesced));
  }

  /**
   * The split {@code request} asks for, as a delta on {@code map}; for a replicated table, checked
   * against what its leader quiesced ({@code null}: the request is only checked).
   */
  private static ShardMapDelta splitDelta(ShardMap map, SplitShardRequest request, Map<Long, QuiescedShard> quiesced) {
    Table t = map.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), map.epoch()));
    ShardAssignment s = shardOf(t, request.getShard(), map.epoch());
    if (!t.layout().splittable()) {
      throw Errors.invalid("table " + t.name() + " is " + t.layout().strategy() + "; " + io.shardwise.core.partition.ShardLayout.SPLITTABLE);
    }
    ShardMapDelta.Builder delta = ShardMapDelta.on(map);
    if (t.replication().replicated() && quiesced != null) {
      dropUnconfirmed(delta, List.of(s), quiesced);
    }
    if (t.shards().size() >= MAX_SHARDS) {
      throw Errors.limit("table " + t.name() + " has " + t.shards().size() + " shards, the most a table may have");
    }
    ShardMapDelta.SplitShard split;
    if (t.layout().strategy() == Strategy.RANGE) {
      if (request.getAtPartitionKey().isEmpty() || request.getHasAtHash()) {
        throw Errors.invalid("a range shard splits at a partition key (--at KEY, which becomes the first key of the upper half),"
            + " or by size when it holds keys");
      }
      split = ShardMapDelta.SplitShard.atKey(s.id(), request.getAtPartitionKey().toByteArray());
    } else {
      if (!request.getAtPartitionKey().isEmpty()) {
        throw Errors.invalid("a " + t.layout().strategy().id() + " shard splits at a hash (--at-hash H), or by size; not at a key");
      }
      int position = t.positionOf(s.id());
      long at = request.getHasAtHash() ? request.getAtHash() : t.layout().hashMidpoint(position)
          .orElseThrow(() -> Errors.invalid("shard " + s.id() + " holds a single hash value; it cannot split"));
      split = ShardMapDelta.SplitShard.atHash(s.id(), at);
    }
    return delta.splitShard(split).build();
  }

  /**
   * Passes the lead of a replicated shard from its leader {@code from} to its in-sync follower
   * {@code to} at one log position, as a planned handover: the leader quiesces the shard (writes
   * held until everything accepted is committed and applied on every in-sync replica), then one
   * compare-and-set makes {@code to} the leader and keeps {@code from} in the in-sync set — both hold
   * the same log, so neither has to catch up. Without the quiesce the old leader leaves the in-sync
   * set until it has caught up with the new one, and a shard with no other in-sync follower (two
   * replicas, min in-sync two) refuses writes meanwhile. Refused (ABORTED, tried again within the
   * budget) if the shard changed while its leader quiesced it.
   *
   * @return the stored map
   * @throws io.grpc.StatusRuntimeException FAILED_PRECONDITION if {@code from} does not lead the
   *     shard or {@code to} is not an in-sync follower that holds everything, NOT_FOUND for no such
   *     table or shard, UNAVAILABLE if the leader could not quiesce it within the budget
   */
  public ShardMap handOver(long tableId, long number, NodeId from, NodeId to) {
    ShardMap current = coordinator.readMapSynced().map();
    Table t = current.tableById(tableId).orElseThrow(() -> Errors.noSuchTable("id " + tableId, current.epoch()));
    return cutReplicated(t, List.of(number), (map, quiesced) -> {
      Table now = map.tableById(tableId).orElseThrow(() -> Errors.noSuchTable(t.name(), map.epoch()));
      ShardAssignment s = shardOf(now, number, map.epoch());
      if (!s.owner().equals(from)) {
        throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + " is led by " + s.owner() + ", not " + from).asRuntimeException();
      }
      QuiescedShard q = unchangedSinceQuiesced(s, quiesced);
      if (!s.inSync().contains(to) || !q.getInSyncList().contains(to.value())) {
        throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + ": " + to + " is not an in-sync follower holding its whole log")
            .asRuntimeException();
      }
      return ShardMapDelta.on(map).add(new ShardMapDelta.ChangeLeader(s.id(), from, to, true)).build();
    });
  }

  /** How long a leader refuses writes to shards it quiesced for a split or merge, at most: the cut is one compare-and-set after it. */
  private static final Duration HOLD = Duration.ofSeconds(10);

  /** How long a split or merge of replicated shards keeps trying through map changes made meanwhile (an in-sync change, say). */
  private static final Duration CUT_BUDGET = Duration.ofSeconds(30);

  /**
   * Splits or merges shards of a replicated table at one log position on every replica: their
   * leader quiesces them ({@code Quiesce}: writes held, everything accepted committed and applied on
   * every in-sync replica), then {@code cut} makes the change as one compare-and-set, which is
   * refused if any of the shards changed since the leader looked (its leader, replicas or in-sync
   * set; then everything is tried again, within {@link #CUT_BUDGET}). Followers that are not in sync
   * leave the shards in the same change (their copy may lack writes, and the new shards' logs start
   * empty: they could never catch up by the log), and replica repair rebuilds them. The halves or
   * the merged shard start logs of their own on every replica, over the same data.
   */
  private ShardMap cutReplicated(Table t, List<Long> numbers,
      java.util.function.BiFunction<ShardMap, Map<Long, QuiescedShard>, ShardMapDelta> cut) {
    return Retries.withBackoff(CUT_BUDGET, e -> e instanceof io.grpc.StatusRuntimeException sre
        && (sre.getStatus().getCode() == Status.Code.ABORTED || sre.getStatus().getCode() == Status.Code.UNAVAILABLE), attempt -> {
      ShardMap now = coordinator.readMapSynced().map();
      Table table = now.tableById(t.id()).orElseThrow(() -> Errors.noSuchTable(t.name(), now.epoch()));
      ShardAssignment first = shardOf(table, numbers.get(0), now.epoch());
      NodeInfo node = coordinator.liveNodesNow().get(first.owner());
      if (node == null) {
        throw Status.UNAVAILABLE.withDescription("shard " + first.id() + " is led by " + first.owner() + ", which is not live; it must"
            + " quiesce the shard before it splits or merges").asRuntimeException();
      }
      QuiesceRequest.Builder ask = QuiesceRequest.newBuilder().setTableId(t.id()).addAllNumbers(numbers);
      ReplicationServiceGrpc.ReplicationServiceBlockingStub leaderStub = ReplicationServiceGrpc.newBlockingStub(peers.channel(node.getAddress()));
      Map<Long, QuiescedShard> quiesced = new HashMap<>();
      leaderStub.withDeadlineAfter(HOLD.toMillis(), TimeUnit.MILLISECONDS).quiesce(ask.setHoldMillis(HOLD.toMillis()).build())
          .getShardsList().forEach(q -> quiesced.put(q.getNumber(), q));
      try {
        return coordinator.updateMap(map -> Optional.of(cut.apply(map, quiesced)));
      } catch (RuntimeException e) {
        try { // the cut did not happen (or its answer was lost): writes need not wait out the hold
          leaderStub.withDeadlineAfter(2, TimeUnit.SECONDS).quiesce(ask.setHoldMillis(0).build());
        } catch (RuntimeException ignored) {
          // the hold ends by itself
        }
        throw e;
      }
    });
  }

  /** What the leader reported quiescing {@code s} at; ABORTED if it did not, or the shard changed since (its epoch rose). */
  private static QuiescedShard unchangedSinceQuiesced(ShardAssignment s, Map<Long, QuiescedShard> quiesced) {
    QuiescedShard q = quiesced.get(s.id().number());
    if (q == null || q.getShardEpoch() != s.epoch()) {
      throw Status.ABORTED.withDescription("shard " + s.id() + " changed while its leader quiesced it (epoch " + s.epoch()
          + (q == null ? "" : ", quiesced at " + q.getShardEpoch()) + ")").asRuntimeException();
    }
    return q;
  }

  /**
   * For shards their leader quiesced: refuses (ABORTED) if any changed since ({@code quiesced}
   * names the epoch it saw), and adds to {@code delta} the removal of every follower that is not
   * in sync on all of them.
   */
  private static void dropUnconfirmed(ShardMapDelta.Builder delta, List<ShardAssignment> shards, Map<Long, QuiescedShard> quiesced) {
    java.util.Set<String> confirmed = null;
    for (ShardAssignment s : shards) {
      QuiescedShard q = unchangedSinceQuiesced(s, quiesced);
      java.util.Set<String> inSync = new java.util.HashSet<>(q.getInSyncList());
      if (confirmed == null) {
        confirmed = inSync;
      } else {
        confirmed.retainAll(inSync);
      }
    }
    for (ShardAssignment s : shards) {
      for (NodeId f : s.followers()) {
        if (!confirmed.contains(f.value())) {
          delta.add(new ShardMapDelta.RemoveFollower(s.id(), f));
        }
      }
    }
  }

  /**
   * Merges shard {@code number} of {@code table} with the next shard in order: one
   * compare-and-set of the map. Both must have one owner (the keys are then already together).
   *
   * @param expectedRight the number the next shard must have (the balancer planned with it), or -1: any
   * @return the stored map with the merge
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for no such table or shard, INVALID_ARGUMENT
   *     for a strategy that does not merge or the last shard, FAILED_PRECONDITION for two owners or
   *     a next shard other than {@code expectedRight}
   */
  public ShardMap merge(String table, long number, long expectedRight) {
    ShardMap current = coordinator.readMapSynced().map();
    Table before = current.table(table).orElseThrow(() -> Errors.noSuchTable(table, current.epoch()));
    if (!before.replication().replicated()) {
      return coordinator.updateMap(map -> Optional.of(mergeDelta(map, table, number, expectedRight, Map.of())));
    }
    long right = nextInOrder(before, number, current.epoch()).id().number();
    mergeDelta(current, table, number, right, null); // a merge that cannot be made is refused before any write is held
    return cutReplicated(before, List.of(number, right), (map, quiesced) -> mergeDelta(map, table, number, right, quiesced));
  }

  /** The merge of shard {@code number} with the next, as a delta on {@code map}; for a replicated table, checked against what its leader quiesced. */
  private static ShardMapDelta mergeDelta(ShardMap map, String table, long number, long expectedRight, Map<Long, QuiescedShard> quiesced) {
    Table t = map.table(table).orElseThrow(() -> Errors.noSuchTable(table, map.epoch()));
    ShardAssignment left = shardOf(t, number, map.epoch());
    ShardAssignment right = nextInOrder(t, number, map.epoch());
    if (expectedRight >= 0 && right.id().number() != expectedRight) {
      throw Status.FAILED_PRECONDITION.withDescription("the shard after " + left.id() + " is now " + right.id() + ", not shard "
          + expectedRight).asRuntimeException();
    }
    if (!left.owner().equals(right.owner())) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + left.id() + " is " + (t.replication().replicated() ? "led from " : "on ")
          + left.owner() + " and the next one, " + right.id() + ", " + (t.replication().replicated() ? "from " : "on ") + right.owner()
          + "; only shards " + (t.replication().replicated() ? "with one leader" : "on one node") + " merge: move one to the other's node"
          + " first").asRuntimeException();
    }
    if (!left.sameReplicas(right)) {
      throw Status.FAILED_PRECONDITION.withDescription("shard " + left.id() + " has its replicas on " + left.replicas() + " and the next"
          + " one, " + right.id() + ", on " + right.replicas() + "; only shards with the same replicas merge").asRuntimeException();
    }
    ShardMapDelta.Builder delta = ShardMapDelta.on(map);
    if (t.replication().replicated() && quiesced != null) {
      dropUnconfirmed(delta, List.of(left, right), quiesced);
    }
    return delta.mergeShards(left.id(), right.id()).build();
  }

  /**
   * Splits a range or hashrange table into {@code shards} shards in all, from a sample of its live
   * keys: each shard gets a share of the new shards in proportion to its bytes (RocksDB's estimate),
   * and its owner finds the points that cut it into pieces of equal live bytes ({@code
   * SizeSplitPoint} with parts), never inside a partition key. A hashrange shard without keys splits
   * into equal hash ranges. The splits are one compare-and-set of the map each, highest point first,
   * so that a stop in between leaves a consistent, partly split table. A shard whose keys are too
   * few to cut into its share gets fewer pieces: the answer has the shards the table ended with.
   *
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for no such table, INVALID_ARGUMENT for a
   *     strategy that does not split or a count outside [its shards + 1, {@link #MAX_SHARDS}],
   *     FAILED_PRECONDITION for a range table without keys to sample, UNAVAILABLE for an owner that
   *     is not live
   */
  public ShardMap presplit(String table, int shards) {
    ShardMap map = coordinator.readMap().map();
    Table t = map.table(table).orElseThrow(() -> Errors.noSuchTable(table, map.epoch()));
    if (!t.layout().splittable()) {
      throw Errors.invalid("table " + t.name() + " is " + t.layout().strategy() + "; " + io.shardwise.core.partition.ShardLayout.SPLITTABLE);
    }
    if (shards <= t.shards().size() || shards > MAX_SHARDS) {
      throw Errors.invalid("table " + t.name() + " has " + t.shards().size() + " shards: --shards must be more than that and at most "
          + MAX_SHARDS + ", not " + shards);
    }
    java.util.Map<NodeId, NodeInfo> live = coordinator.liveNodes();
    java.util.Map<Long, Long> bytes = new java.util.HashMap<>();
    for (ShardAssignment s : t.shards()) {
      if (!live.containsKey(s.owner())) {
        throw Status.UNAVAILABLE.withDescription("shard " + s.id() + " belongs to " + s.owner() + ", which is not live: it reads its keys"
            + " for the split points").asRuntimeException();
      }
    }
    for (io.shardwise.proto.v1.NodeStatsResponse node : NodeStatsPoll.ask(peers, live.values(), false, java.time.Duration.ofSeconds(5))
        .answers()) {
      node.getShardsList().stream().filter(s -> s.getTable().equals(t.name())).forEach(s -> bytes.put(s.getNumber(), s.getApproximateBytes()));
    }
    long total = bytes.values().stream().mapToLong(Long::longValue).sum();
    int[] parts = shares(t, bytes, total, shards);
    ShardMap current = map;
    for (int position = t.shards().size() - 1; position >= 0; position--) { // from the end: positions below stay put
      ShardAssignment s = t.shards().get(position);
      if (parts[position] < 2) {
        continue;
      }
      List<SplitShardRequest> points = points(t, s, position, parts[position], live.get(s.owner()));
      for (int i = points.size() - 1; i >= 0; i--) { // highest first: the lower part keeps the position
        Table now = current.table(table).filter(x -> x.id() == t.id())
            .orElseThrow(() -> Status.ABORTED.withDescription("table " + table + " was dropped during the presplit").asRuntimeException());
        long number = now.shards().get(position).id().number();
        current = split(points.get(i).toBuilder().setTable(table).setShard(number).build(), current);
      }
    }
    if (current.table(table).map(x -> x.shards().size()).orElse(0) == t.shards().size()) {
      throw Status.FAILED_PRECONDITION.withDescription("table " + t.name() + " has no keys to split at" + (t.layout().strategy() == Strategy.RANGE
          ? ": a range table is presplit from a sample of its live keys; split it at chosen keys with 'table split --at KEY'" : ""))
          .asRuntimeException();
    }
    return current;
  }

  /** How many pieces each shard (by position) becomes: at least one, in proportion to bytes (equally when none are known). */
  private static int[] shares(Table t, java.util.Map<Long, Long> bytes, long total, int shards) {
    int n = t.shards().size();
    int[] parts = new int[n];
    double[] exact = new double[n];
    int given = 0;
    for (int i = 0; i < n; i++) {
      long b = bytes.getOrDefault(t.shards().get(i).id().number(), 0L);
      exact[i] = total > 0 ? (double) b / total * shards : (double) shards / n;
      parts[i] = Math.max(1, (int) Math.floor(exact[i]));
      given += parts[i];
    }
    while (given < shards) { // the largest remainders first
      int best = 0;
      for (int i = 1; i < n; i++) {
        if (exact[i] - parts[i] > exact[best] - parts[best]) {
          best = i;
        }
      }
      parts[best]++;
      given++;
    }
    while (given > shards) { // the floors of 1 took too many: take back from the largest
      int best = 0;
      for (int i = 1; i < n; i++) {
        if (parts[i] > parts[best]) {
          best = i;
        }
      }
      parts[best]--;
      given--;
    }
    return parts;
  }

  /** The points that cut shard {@code s} into {@code parts} pieces, lowest first, as split requests. */
  private List<SplitShardRequest> points(Table t, ShardAssignment s, int position, int parts, NodeInfo owner) {
    // Two pieces: the median, as a split by size finds it; more: one read for all the points.
    SizeSplitPointResponse answer = MoveServiceGrpc.newBlockingStub(peers.channel(owner.getAddress()))
        .withDeadlineAfter(5, TimeUnit.MINUTES) // it reads the shard: seconds for hundreds of MiB
        .sizeSplitPoint(SizeSplitPointRequest.newBuilder().setTableId(t.id()).setNumber(s.id().number()).setParts(parts > 2 ? parts : 0).build());
    List<SplitShardRequest> out = new java.util.ArrayList<>();
    boolean range = t.layout().strategy() == Strategy.RANGE;
    if (parts == 2 && answer.getFound()) {
      out.add(range ? SplitShardRequest.newBuilder().setAtPartitionKey(answer.getPartitionKey()).build()
          : SplitShardRequest.newBuilder().setHasAtHash(true).setAtHash(answer.getHash()).build());
    }
    for (io.shardwise.proto.v1.SplitPointAt p : answer.getPointsList()) {
      out.add(range ? SplitShardRequest.newBuilder().setAtPartitionKey(p.getPartitionKey()).build()
          : SplitShardRequest.newBuilder().setHasAtHash(true).setAtHash(p.getHash()).build());
    }
    if (out.isEmpty() && !range) { // no keys to cut by (or one hash): equal hash ranges
      for (long at : t.layout().hashCutPoints(position, parts)) {
        out.add(SplitShardRequest.newBuilder().setHasAtHash(true).setAtHash(at).build());
      }
    }
    return out;
  }

  /**
   * The request with the point at which the shard's owner would split it by size ({@code
   * SizeSplitPoint}: half the live bytes on each side, never inside a partition key). An empty
   * hashrange shard splits at the middle of its hashes; an empty range shard, or one that is a
   * single partition key, cannot split by size.
   */
  private SplitShardRequest bySize(SplitShardRequest request, ShardMap map) {
    Table t = map.table(request.getTable()).orElseThrow(() -> Errors.noSuchTable(request.getTable(), map.epoch()));
    ShardAssignment s = shardOf(t, request.getShard(), map.epoch());
    if (!t.layout().splittable()) {
      return request; // refused with the reason by split
    }
    String alternative = "give --at KEY" + (t.layout().hashRanges() ? " or --at-hash H" : "");
    NodeInfo owner = coordinator.liveNodes().get(s.owner());
    if (owner == null) {
      throw Status.UNAVAILABLE.withDescription("shard " + s.id() + " belongs to " + s.owner() + ", which is not live: it finds the split"
          + " point by size; " + alternative).asRuntimeException();
    }
    SizeSplitPointResponse point = MoveServiceGrpc.newBlockingStub(peers.channel(owner.getAddress()))
        .withDeadlineAfter(5, TimeUnit.MINUTES) // it reads the shard: seconds for hundreds of MiB
        .sizeSplitPoint(SizeSplitPointRequest.newBuilder().setTableId(t.id()).setNumber(s.id().number()).build());
    if (point.getFound()) {
      return t.layout().strategy() == Strategy.RANGE
          ? request.toBuilder().setAtPartitionKey(point.getPartitionKey()).build()
          : request.toBuilder().setHasAtHash(true).setAtHash(point.getHash()).build();
    }
    if (t.layout().hashRanges() && point.getKeys() == 0) {
      return request; // empty: the middle of its hashes
    }
    throw Status.FAILED_PRECONDITION.withDescription("shard " + s.id() + (point.getKeys() == 0 ? " is empty"
        : " holds a single partition key" + (t.layout().hashRanges() ? " hash" : "") + " (" + point.getKeys() + " keys, "
            + point.getBytes() + " bytes)") + ": there is no split by size; " + alternative
        + (point.getKeys() == 0 ? "" : " (a single hot or large partition is a hotspot to isolate, not a split)")).asRuntimeException();
  }

  /**
   * The shard that shard {@code number} of {@code t} would merge with: the next one in order.
   *
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for no such shard, INVALID_ARGUMENT for a
   *     strategy that does not merge or the last shard
   */
  public static ShardAssignment nextInOrder(Table t, long number, long epoch) {
    ShardAssignment left = shardOf(t, number, epoch);
    if (!t.layout().splittable()) {
      throw Errors.invalid("table " + t.name() + " is " + t.layout().strategy() + "; " + io.shardwise.core.partition.ShardLayout.SPLITTABLE);
    }
    int position = t.positionOf(left.id());
    if (position + 1 >= t.shards().size()) {
      throw Errors.invalid("shard " + left.id() + " is the last in order; merge the shard before it instead");
    }
    return t.shards().get(position + 1);
  }

  static ShardAssignment shardOf(Table t, long number, long epoch) {
    return t.shard(number).orElseThrow(() -> Status.NOT_FOUND.withDescription("table " + t.name() + " has no shard " + number
        + " at map epoch " + epoch + " (a split or a merge replaces a shard with new ones)").asRuntimeException());
  }
}
