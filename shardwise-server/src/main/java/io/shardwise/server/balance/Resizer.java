package io.shardwise.server.balance;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.shardwise.core.map.NodeId;
import io.shardwise.core.map.ShardAssignment;
import io.shardwise.core.map.ShardId;
import io.shardwise.core.map.ShardMap;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.Strategy;
import com.google.protobuf.ByteString;
import io.shardwise.core.key.Counters;
import io.shardwise.proto.v1.BalancerSettings;
import io.shardwise.proto.v1.HotKey;
import io.shardwise.proto.v1.SaltedKey;
import io.shardwise.server.hot.Salting;
import io.shardwise.proto.v1.MoveProgress;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import io.shardwise.proto.v1.ResizeRecord;
import io.shardwise.proto.v1.ShardInfo;
import io.shardwise.proto.v1.SplitShardRequest;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.NodeStatsPoll;
import io.shardwise.server.rpc.Peers;
import io.shardwise.server.rpc.ShardSplits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dynamic partitioning: which range and hashrange shards should split or merge now, and running
 * those splits and merges once a plan holds them. The balancer's leader asks every few seconds
 * ({@link #look}); it reads each owner's {@code NodeStats} (RocksDB's estimate of each shard's bytes,
 * its requests per second, and its load split point, all without a scan) and applies three policies
 * per table ({@link RebalanceRecords}):
 *
 * <ul>
 *   <li><b>by size</b>: a shard past the split size splits at the partition key with half its bytes
 *       below (the owner finds it when the split runs);
 *   <li><b>by load</b>: a shard whose requests stayed above the split rate in every second of the
 *       window splits at its load split point, the sampled key that divides its recent requests most
 *       evenly ({@link io.shardwise.server.hot.LoadSplitFinder}); a shard whose load is one hot key
 *       has no such point and is left to the hotspot tools;
 *   <li><b>merge</b>: two neighbours, both made by the balancer's own splits and merges
 *       ({@link RebalanceRecords#resized}), merge when their bytes together are under the merge
 *       fraction of the split size and their requests together stayed under that fraction of the
 *       split rate for the whole merge window. The fraction (0.25) is the hysteresis: a split leaves
 *       two halves of about half each, more than enough to stay apart. Neighbours on two nodes
 *       merge too: the smaller moves to the other's node first (never onto a draining node), then
 *       they merge there — the move planner spreads a table's shards, so most neighbours are on
 *       two nodes.
 * </ul>
 *
 * The plan then follows the table's mode like any plan: {@code manual} never resizes by itself,
 * {@code suggest} proposes, {@code auto} runs it. A split or a merge changes only the map; the new
 * shards stay on their node, and the move planner spreads them next.
 */
final class Resizer {

  private static final Logger LOG = LoggerFactory.getLogger(Resizer.class);
  private static final Duration STATS_DEADLINE = Duration.ofSeconds(2);

  /** A salted key's promotion or demotion still under way this long after it began is run to its end by the balancer's leader. */
  private static final long STALLED_SALTING_MILLIS = 30_000;

  /** The most splits and merges one plan holds. */
  static final int MAX_RESIZES_PER_PLAN = 8;

  private final RebalanceRecords records;
  private final Coordinator coordinator;
  private final ShardMoves moves;
  private final ShardSplits splits;
  private final Salting salting;
  private final Peers peers;
  private final long everyMillis;
  private final Counter splitCount;
  private final Counter mergeCount;
  private final Counter isolationCount;
  private final Counter saltCount;
  private final Counter unsaltCount;
  private final Set<ShardId> unsplittable = new HashSet<>();
  private final Map<ShardId, String> refusals = new HashMap<>();
  private long lastLookMillis;

  Resizer(Coordinator coordinator, Peers peers, Duration every, MeterRegistry metrics, ShardMoves moves) {
    this.records = new RebalanceRecords(coordinator);
    this.coordinator = coordinator;
    this.moves = moves;
    this.splits = new ShardSplits(coordinator, peers);
    this.salting = new Salting(coordinator, peers);
    this.peers = peers;
    this.everyMillis = every.toMillis();
    this.splitCount = Counter.builder("shardwise.balancer.splits").description("shards the balancer's plans split (by size or load)")
        .register(metrics);
    this.mergeCount = Counter.builder("shardwise.balancer.merges").description("pairs of shards the balancer's plans merged")
        .register(metrics);
    this.isolationCount = Counter.builder("shardwise.balancer.isolations").description("hot keys the balancer's plans isolated")
        .register(metrics);
    this.saltCount = Counter.builder("shardwise.balancer.salts").description("counters the balancer's plans salted").tag("change", "salt")
        .register(metrics);
    this.unsaltCount = Counter.builder("shardwise.balancer.salts").description("counters the balancer's plans salted").tag("change", "demote")
        .register(metrics);
  }

  /** The splits and merges the policies call for now, if it is time to look (else none). */
  List<ResizeRecord> look(BalancerSettings settings, ShardMap map, Map<NodeId, NodeInfo> live, long nowMillis) {
    if (nowMillis - lastLookMillis < everyMillis) {
      return List.of();
    }
    lastLookMillis = nowMillis;
    try {
      salting.resume(nowMillis, STALLED_SALTING_MILLIS);
    } catch (RuntimeException e) {
      LOG.info("balancer: a salted key's promotion or demotion left half done did not finish yet: {}", e.getMessage());
    }
    boolean any = map.tables().values().stream().anyMatch(t -> t.layout().splittable()
        && RebalanceRecords.modeOf(settings, t.name()) != BalancerSettings.Mode.MANUAL
        && (RebalanceRecords.splitBytesOf(settings, t.name()) > 0 || RebalanceRecords.splitRpsOf(settings, t.name()) > 0));
    if (!any) {
      return List.of();
    }
    unsplittable.removeIf(id -> map.table(id.table()).flatMap(t -> t.shard(id.number())).isEmpty());
    refusals.keySet().removeIf(id -> map.table(id.table()).flatMap(t -> t.shard(id.number())).isEmpty());
    int seconds = Math.max(RebalanceRecords.splitRpsSeconds(settings), RebalanceRecords.mergeSeconds(settings));
    List<SaltedKey> salted = Salting.list(coordinator, map, "");
    // A salted key's sub-keys are counted where they are among their shards' hot keys: ask for all of them then.
    NodeStatsRequest request = NodeStatsRequest.newBuilder().setSkipSizes(true).setHistorySeconds(seconds).setLoadSplits(true)
        .setHotKeys(salted.isEmpty() ? 1 : io.shardwise.server.hot.ShardHeat.KEYS_PER_SHARD).build();
    List<NodeStatsResponse> answers = NodeStatsPoll.ask(peers, live.values(), request, STATS_DEADLINE).answers();
    Map<Long, Set<Long>> resized = new HashMap<>();
    return propose(settings, map, answers, live, salted, tableId -> resized.computeIfAbsent(tableId, records::resized), unsplittable,
        records.drains(), this::refused, nowMillis);
  }

  private void refused(ShardId shard, String why) {
    String kind = why.replaceAll("[0-9]+", "#"); // the same reason with other figures is not logged again
    if (!kind.equals(refusals.put(shard, kind))) {
      LOG.info("balancer: shard {} is past its split rate but has no load split point: {}", shard, why);
    }
  }

  /** A split or an isolation the policies want, and how far past its limit the shard is. */
  private record Candidate(double urgency, ResizeRecord resize) {}

  /** Why a hot shard was not split by load (logged once per shard and reason). */
  interface Refusals {
    void refused(ShardId shard, String why);
  }

  /**
   * The policies, on stats already read: pure, so that tests can drive them with any stats.
   *
   * @param resized each table's shards made by the balancer's splits and merges (by table id)
   * @param unsplittable shards known to have no split by size (one partition key)
   * @param live the live nodes: where an isolated hot key may go
   * @param draining nodes being emptied: never the destination of a merge's or an isolation's move
   */
  static List<ResizeRecord> propose(BalancerSettings settings, ShardMap map, List<NodeStatsResponse> answers, Map<NodeId, NodeInfo> live,
      LongFunction<Set<Long>> resized, Set<ShardId> unsplittable, Set<NodeId> draining, Refusals refusals) {
    return propose(settings, map, answers, live, List.of(), resized, unsplittable, draining, refusals, System.currentTimeMillis());
  }

  /**
   * {@link #propose(BalancerSettings, ShardMap, List, Map, LongFunction, Set, Set, Refusals)}, with the
   * salted keys: a key salted for at least the merge window whose increments have fallen under the
   * merge fraction of the split rate is demoted.
   */
  static List<ResizeRecord> propose(BalancerSettings settings, ShardMap map, List<NodeStatsResponse> answers, Map<NodeId, NodeInfo> live,
      List<SaltedKey> salted, LongFunction<Set<Long>> resized, Set<ShardId> unsplittable, Set<NodeId> draining, Refusals refusals,
      long nowMillis) {
    Map<ShardId, ShardInfo> stats = new HashMap<>();
    for (NodeStatsResponse node : answers) {
      for (ShardInfo s : node.getShardsList()) {
        map.table(s.getTable()).flatMap(t -> t.shard(s.getNumber()))
            .filter(a -> a.owner().value().equals(node.getNode()))
            .ifPresent(a -> stats.put(a.id(), s));
      }
    }
    List<Candidate> splitsWanted = new ArrayList<>();
    List<ResizeRecord> mergesWanted = new ArrayList<>();
    int splitWindow = RebalanceRecords.splitRpsSeconds(settings);
    Isolation.Loads loads = Isolation.Loads.of(answers, splitWindow); // each planned move of a half updates it
    int mergeWindow = RebalanceRecords.mergeSeconds(settings);
    double fraction = RebalanceRecords.mergeFraction(settings);
    for (Table t : map.tables().values()) {
      if (!t.layout().splittable() || RebalanceRecords.modeOf(settings, t.name()) == BalancerSettings.Mode.MANUAL) {
        continue;
      }
      long bytesLimit = RebalanceRecords.splitBytesOf(settings, t.name());
      long rpsLimit = RebalanceRecords.splitRpsOf(settings, t.name());
      if (bytesLimit <= 0 && rpsLimit <= 0) {
        continue;
      }
      Set<ShardId> splitting = new HashSet<>();
      for (ShardAssignment a : t.shards()) {
        ShardInfo s = stats.get(a.id());
        if (s == null) {
          continue;
        }
        ResizeRecord.Builder split = ResizeRecord.newBuilder().setKind(ResizeRecord.Kind.SPLIT).setTable(t.name()).setTableId(t.id())
            .setNumber(a.id().number()).setOwner(a.owner().value()).setBytes(s.getApproximateBytes()).setState(ResizeRecord.State.WAITING);
        long slowest = lowestRate(s, splitWindow);
        split.setRequestsPerSecond(Math.max(slowest, 0));
        if (bytesLimit > 0 && s.getApproximateBytes() > bytesLimit && !unsplittable.contains(a.id())) {
          splitsWanted.add(new Candidate((double) s.getApproximateBytes() / bytesLimit, split.setBySize(true)
              .setWhy("size: about " + bytes(s.getApproximateBytes()) + ", past the split size of " + bytes(bytesLimit)).build()));
          splitting.add(a.id());
        } else if (rpsLimit > 0 && slowest >= rpsLimit) {
          if (!s.getHasLoadSplit()) {
            Candidate isolation = isolation(t, a, s, slowest, rpsLimit, splitWindow, map, answers, live, draining, refusals, salted);
            if (isolation != null) {
              splitsWanted.add(isolation);
              splitting.add(a.id());
            }
            continue;
          }
          if (t.layout().strategy() == Strategy.RANGE) {
            split.setAtPartitionKey(s.getLoadSplitKey());
          } else {
            split.setHasAtHash(true).setAtHash(s.getLoadSplitHash());
          }
          String why = String.format(Locale.ROOT, "load: at least %,d requests/s in each of the last %d s, past the split rate of %,d;"
              + " %.0f%% of %,d sampled requests fall below the point", slowest, splitWindow, rpsLimit, 100 * s.getLoadSplitLowerShare(),
              s.getLoadSplitCounted());
          splitsWanted.add(new Candidate((double) slowest / rpsLimit, split.setWhy(why + upperHalfTarget(t, a, s, split, loads, splitWindow,
              live, draining)).build()));
          splitting.add(a.id());
        }
      }
      if (fraction <= 0) {
        continue;
      }
      Set<Long> mine = resized.apply(t.id());
      for (int i = 0; i + 1 < t.shards().size(); i++) {
        ShardAssignment left = t.shards().get(i);
        ShardAssignment right = t.shards().get(i + 1);
        ShardInfo l = stats.get(left.id());
        ShardInfo r = stats.get(right.id());
        if (l == null || r == null || splitting.contains(left.id()) || splitting.contains(right.id())
            || !mine.contains(left.id().number()) || !mine.contains(right.id().number())) {
          continue;
        }
        if (t.replication().replicated() && left.replicas().size() != right.replicas().size()) {
          continue; // a change of the table's factor is under way: its replicas are added or removed first
        }
        Merge merge = Merge.of(t, left, right, l.getApproximateBytes(), r.getApproximateBytes(), draining);
        if (merge == null) {
          continue;
        }
        long bytes = l.getApproximateBytes() + r.getApproximateBytes();
        long busiest = highestRate(l, r, mergeWindow);
        boolean small = bytesLimit <= 0 || bytes < fraction * bytesLimit;
        boolean quiet = busiest >= 0 && (rpsLimit <= 0 || busiest < fraction * rpsLimit);
        if (small && quiet) {
          mergesWanted.add(merge.record().setRequestsPerSecond(busiest).setWhy(String.format(Locale.ROOT, "small and quiet: %s together%s,"
                  + " at most %,d requests/s in each of the last %d s%s%s", bytes(bytes), bytesLimit > 0 ? " (under "
                  + Math.round(100 * fraction) + "% of " + bytes(bytesLimit) + ")" : "", busiest, mergeWindow, rpsLimit > 0
                  ? String.format(Locale.ROOT, " (under %.0f%% of %,d)", 100 * fraction, rpsLimit) : "", merge.movesFirst()))
              .build());
          i++; // each shard in one merge at most
        }
      }
    }
    splitsWanted.addAll(demotions(settings, map, answers, salted, nowMillis));
    splitsWanted.sort(Comparator.comparingDouble(Candidate::urgency).reversed());
    List<ResizeRecord> out = new ArrayList<>();
    splitsWanted.stream().limit(MAX_RESIZES_PER_PLAN).forEach(c -> out.add(c.resize()));
    mergesWanted.stream().limit(MAX_RESIZES_PER_PLAN - out.size()).forEach(out::add);
    return out;
  }

  /**
   * Where the upper half of a shard split by load goes: the node with the fewest requests per second,
   * if that node with the half's requests stays below what the owner serves now (the half's requests
   * taken off) — else it stays, and the split alone keeps the shard under the split rate for the
   * next look. Sets the record's target and forecast, updates {@code loads} for the next split of
   * the plan, and returns what the reason adds. Replicated shards' halves stay (the move planner
   * places replicas).
   */
  private static String upperHalfTarget(Table t, ShardAssignment a, ShardInfo s, ResizeRecord.Builder split, Isolation.Loads loads,
      int window, Map<NodeId, NodeInfo> live, Set<NodeId> draining) {
    if (t.replication().replicated()) {
      return "";
    }
    double upperRate = (1 - s.getLoadSplitLowerShare()) * Isolation.rate(s, window);
    NodeId owner = a.owner();
    NodeId to = Isolation.leastLoaded(owner, upperRate, live, draining, loads, false);
    if (to == null) {
      return "; both halves stay on " + owner + " (no node would serve the upper half with less load than " + owner + " has)";
    }
    double fromBefore = loads.node(owner);
    double toBefore = loads.node(to);
    split.setUpperTo(to.value()).setKeyRequestsPerSecond(Math.round(upperRate)).setFromRequestsPerSecond(Math.round(fromBefore))
        .setToRequestsPerSecond(Math.round(toBefore));
    loads.nodes().put(owner, fromBefore - upperRate);
    loads.nodes().put(to, toBefore + upperRate);
    return String.format(Locale.ROOT, "; then the upper half (about %,.0f requests/s) moves from %s (about %,.0f -> %,.0f) to %s"
        + " (%,.0f -> %,.0f)", upperRate, owner, fromBefore, fromBefore - upperRate, to, toBefore, toBefore + upperRate);
  }

  /**
   * A shard past the split rate without a load split point: if one key takes at least {@link
   * Isolation#HOT_KEY_SHARE} of its sampled requests, the isolation of that key (null, with the
   * refusal recorded, if there is nothing to isolate or the key is alone on a node that suits it).
   */
  private static Candidate isolation(Table t, ShardAssignment a, ShardInfo s, long slowest, long rpsLimit, int window, ShardMap map,
      List<NodeStatsResponse> answers, Map<NodeId, NodeInfo> live, Set<NodeId> draining, Refusals refusals, List<SaltedKey> salted) {
    if (s.getHotKeysCount() == 0 || s.getHotSampled() == 0) {
      refusals.refused(a.id(), s.getLoadSplitRefusal());
      return null;
    }
    HotKey top = s.getHotKeys(0);
    byte[] key = top.getKey().toByteArray();
    double share = Isolation.keyShare(s, key);
    if (share < Isolation.HOT_KEY_SHARE) {
      refusals.refused(a.id(), s.getLoadSplitRefusal());
      return null;
    }
    if (Salting.saltable(t, top)) {
      if (salted.stream().anyMatch(k -> k.getTableId() == t.id() && java.util.Arrays.equals(k.getKey().getPartitionKey().toByteArray(), key)
          && k.getKey().getSortKey().isEmpty())) {
        refusals.refused(a.id(), "its hot key is salted already; what is left is writes from clients that have not refreshed yet");
        return null;
      }
      double keyRate = share * Isolation.rate(s, window);
      int fanout = Salting.fanoutFor(keyRate, rpsLimit, live.size());
      return new Candidate((double) slowest / rpsLimit, ResizeRecord.newBuilder().setKind(ResizeRecord.Kind.SALT).setTable(t.name())
          .setTableId(t.id()).setNumber(a.id().number()).setOwner(a.owner().value()).setHotKey(ByteString.copyFrom(key))
          .setSaltFanout(fanout).setRequestsPerSecond(slowest).setKeyRequestsPerSecond(Math.round(keyRate))
          .setState(ResizeRecord.State.WAITING).setWhy(String.format(Locale.ROOT, "load: at least %,d requests/s in each of the last %d s,"
              + " past the split rate of %,d; key '%s' takes at least %.0f%% of them (about %,.0f/s), nearly all increments or appends: salt it"
              + " into %d sub-keys (each about %,.0f/s; its reads read %d keys)", slowest, window, rpsLimit,
              io.shardwise.core.key.ByteStrings.toDisplay(key), 100 * share, keyRate, fanout, keyRate / fanout, fanout + 1))
          .build());
    }
    try {
      ResizeRecord r = Isolation.plan(map, t.name(), key, live, draining, answers, window, java.util.Optional.empty(),
          String.format(Locale.ROOT, "load: at least %,d requests/s in each of the last %d s, past the split rate of %,d, and one key",
              slowest, window, rpsLimit));
      return new Candidate((double) slowest / rpsLimit, r);
    } catch (IllegalArgumentException e) {
      refusals.refused(a.id(), e.getMessage());
      return null;
    }
  }

  /**
   * The salted keys of tables that are not manual, salted for at least the merge window, whose
   * increments (their sub-keys', where those are among their shards' hot keys) have fallen under
   * the merge fraction of the split rate: each demoted. A sub-key not among its shard's hot keys
   * counts nothing, and the estimate is the sampled count, not the guaranteed one, so a key stays
   * salted when in doubt.
   */
  private static List<Candidate> demotions(BalancerSettings settings, ShardMap map, List<NodeStatsResponse> answers, List<SaltedKey> salted,
      long nowMillis) {
    List<Candidate> out = new ArrayList<>();
    double fraction = RebalanceRecords.mergeFraction(settings);
    int window = RebalanceRecords.mergeSeconds(settings);
    for (SaltedKey k : salted) {
      Table t = map.table(k.getTable()).filter(x -> x.id() == k.getTableId()).orElse(null);
      long rpsLimit = t == null ? 0 : RebalanceRecords.splitRpsOf(settings, t.name());
      if (t == null || k.getState() != SaltedKey.State.SALTED || RebalanceRecords.modeOf(settings, t.name()) == BalancerSettings.Mode.MANUAL
          || rpsLimit <= 0 || fraction <= 0 || nowMillis - k.getSinceMillis() < window * 1000L) {
        continue;
      }
      io.shardwise.core.key.Key base = io.shardwise.core.key.Key.of(k.getKey().getPartitionKey().toByteArray(),
          k.getKey().getSortKey().toByteArray());
      Set<ByteString> subKeys = new java.util.HashSet<>();
      for (int i = 0; i < k.getFanout(); i++) {
        subKeys.add(ByteString.copyFrom(Counters.subKey(base, k.getGeneration(), i).partitionKey()));
      }
      double rate = 0;
      for (NodeStatsResponse n : answers) {
        for (ShardInfo s : n.getShardsList()) {
          if (!s.getTable().equals(t.name()) || s.getHotSampled() == 0) {
            continue;
          }
          for (HotKey h : s.getHotKeysList()) {
            if (subKeys.contains(h.getKey())) {
              rate += (double) h.getCount() / s.getHotSampled() * Isolation.rate(s, window);
            }
          }
        }
      }
      if (rate < fraction * rpsLimit) {
        out.add(new Candidate(0, ResizeRecord.newBuilder().setKind(ResizeRecord.Kind.UNSALT).setTable(t.name()).setTableId(t.id())
            .setHotKey(k.getKey().getPartitionKey()).setSaltFanout(k.getFanout()).setKeyRequestsPerSecond(Math.round(rate))
            .setState(ResizeRecord.State.WAITING).setWhy(String.format(Locale.ROOT, "cooled: salted counter '%s' takes about %,.0f"
                + " requests/s over its %d sub-keys, under %.0f%% of the split rate of %,d: fold them back into the key",
                io.shardwise.core.key.ByteStrings.toDisplay(k.getKey().getPartitionKey().toByteArray()), rate, k.getFanout(),
                100 * fraction, rpsLimit)).build()));
      }
    }
    return out;
  }

  /** The lowest requests per second (reads and writes) over the last {@code seconds} seconds, or -1 if fewer were recorded. */
  static long lowestRate(ShardInfo s, int seconds) {
    int n = s.getReadsHistoryCount();
    if (n < seconds) {
      return -1;
    }
    long lowest = Long.MAX_VALUE;
    for (int i = n - seconds; i < n; i++) {
      lowest = Math.min(lowest, (long) s.getReadsHistory(i) + s.getWritesHistory(i));
    }
    return lowest;
  }

  /** The highest requests per second of two shards together over the last {@code seconds} seconds, or -1 if fewer were recorded. */
  static long highestRate(ShardInfo a, ShardInfo b, int seconds) {
    int na = a.getReadsHistoryCount();
    int nb = b.getReadsHistoryCount();
    if (na < seconds || nb < seconds) {
      return -1; // one of them has not been on its node that long (just split, merged or moved): not yet
    }
    long highest = 0;
    for (int i = 0; i < seconds; i++) {
      int ia = na - seconds + i;
      int ib = nb - seconds + i;
      highest = Math.max(highest, (long) a.getReadsHistory(ia) + a.getWritesHistory(ia) + b.getReadsHistory(ib) + b.getWritesHistory(ib));
    }
    return highest;
  }

  /**
   * Runs one split or merge of a plan against {@code map}: one compare-and-set of the stored map.
   * Records the new shards as the balancer's ({@link RebalanceRecords#addResized}), so that they
   * may merge again later.
   *
   * @return the record as it ended: done with the new shards' numbers, skipped if its shard is no
   *     longer in the map, or failed with why
   */
  ResizeRecord run(ResizeRecord r, ShardMap map) {
    ResizeRecord.Builder b = r.toBuilder();
    if (r.getKind() == ResizeRecord.Kind.SALT || r.getKind() == ResizeRecord.Kind.UNSALT) {
      io.shardwise.core.key.Key key = io.shardwise.core.key.Key.of(r.getHotKey().toByteArray());
      try {
        if (r.getKind() == ResizeRecord.Kind.SALT) {
          salting.promote(r.getTable(), key, r.getSaltFanout(), r.getWhy());
          saltCount.increment();
        } else {
          salting.demote(r.getTable(), key, r.getWhy());
          unsaltCount.increment();
        }
        return b.setState(ResizeRecord.State.DONE).build();
      } catch (RuntimeException e) {
        LOG.info("balancer: key '{}' of {} was not {}: {}", io.shardwise.core.key.ByteStrings.toDisplay(r.getHotKey().toByteArray()),
            r.getTable(), r.getKind() == ResizeRecord.Kind.SALT ? "salted" : "demoted", e.getMessage());
        return b.setState(ResizeRecord.State.FAILED).setError(String.valueOf(e.getMessage())).build();
      }
    }
    Table before = map.table(r.getTable()).filter(t -> t.id() == r.getTableId()).orElse(null);
    boolean isolate = r.getKind() == ResizeRecord.Kind.ISOLATE;
    if (before == null || (!isolate && before.shard(r.getNumber()).isEmpty())
        || (r.getKind() == ResizeRecord.Kind.MERGE && before.shard(r.getRightNumber()).isEmpty())) {
      return b.setState(ResizeRecord.State.SKIPPED).setError("shard " + r.getTable() + "/" + r.getNumber()
          + (r.getKind() == ResizeRecord.Kind.MERGE ? " or " + r.getRightNumber() : "") + " is no longer in the map").build();
    }
    ShardId id = new ShardId(r.getTable(), r.getNumber());
    try {
      ShardMap after;
      if (isolate) {
        after = isolate(r, map, b);
      } else if (r.getKind() == ResizeRecord.Kind.SPLIT) {
        SplitShardRequest.Builder request = SplitShardRequest.newBuilder().setTable(r.getTable()).setShard(r.getNumber());
        if (!r.getBySize()) {
          request.setAtPartitionKey(r.getAtPartitionKey()).setHasAtHash(r.getHasAtHash()).setAtHash(r.getAtHash());
        }
        after = splits.split(request.build(), map);
        splitCount.increment();
      } else {
        coLocate(r, before, b);
        after = splits.merge(r.getTable(), r.getNumber(), r.getRightNumber());
        mergeCount.increment();
      }
      Table table = after.table(r.getTable()).orElseThrow();
      Set<Long> present = new TreeSet<>();
      table.shards().forEach(s -> present.add(s.id().number()));
      List<Long> made = new ArrayList<>();
      for (long n : present) {
        if (before.shard(n).isEmpty()) {
          made.add(n);
        }
      }
      records.addResized(table.id(), made, present);
      if (isolate) {
        isolationCount.increment();
        ShardAssignment alone = table.shardFor(r.getHotKey().toByteArray());
        LOG.info("balancer: isolated key '{}' of {} ({}): its shard {} is on {} (map epoch {})",
            io.shardwise.core.key.ByteStrings.toDisplay(r.getHotKey().toByteArray()), r.getTable(), r.getWhy(), alone.id(), alone.owner(),
            after.epoch());
        return b.setState(ResizeRecord.State.DONE).clearResultNumbers().addResultNumbers(alone.id().number()).build();
      }
      LOG.info("balancer: {} {} ({}): now shards {} (map epoch {}, {} shards in {})",
          r.getKind() == ResizeRecord.Kind.SPLIT ? "split" : "merged", id + (r.getKind() == ResizeRecord.Kind.MERGE ? " and "
              + r.getRightNumber() : ""), r.getWhy(), made, after.epoch(), table.shards().size(), table.name());
      b.setState(ResizeRecord.State.DONE).clearResultNumbers().addAllResultNumbers(made);
      if (r.getKind() == ResizeRecord.Kind.SPLIT && !r.getUpperTo().isEmpty() && !made.isEmpty()) {
        moveUpperHalf(r, table, made, b);
      }
      return b.build();
    } catch (MoveFailed e) {
      LOG.info("balancer: {}: {}", isolate ? "key of " + id + " not isolated" : "shards " + id + " and " + r.getRightNumber()
          + " were not merged", e.getMessage());
      return b.setState(ResizeRecord.State.FAILED).setError(e.getMessage()).build();
    } catch (StatusRuntimeException e) {
      if (r.getBySize() && e.getStatus().getCode() == Status.Code.FAILED_PRECONDITION) {
        unsplittable.add(id);
      }
      LOG.info("balancer: shard {} was not {}: {}", id, r.getKind() == ResizeRecord.Kind.SPLIT ? "split"
              : isolate ? "cut to isolate a key" : "merged",
          e.getStatus().getDescription());
      return b.setState(ResizeRecord.State.FAILED).setError(String.valueOf(e.getStatus().getDescription())).build();
    }
  }

  /**
   * Moves the upper half of a split by load to the record's {@code upper_to} ({@link
   * #upperHalfTarget} chose it). The split stands either way; a move that does not cut over is
   * recorded in the (done) record's error.
   */
  private void moveUpperHalf(ResizeRecord r, Table table, List<Long> made, ResizeRecord.Builder b) {
    ShardAssignment upper = made.stream().map(n -> table.shard(n).orElseThrow())
        .max(Comparator.comparingInt(sa -> table.positionOf(sa.id()))).orElseThrow();
    NodeId to = NodeId.of(r.getUpperTo());
    if (upper.owner().equals(to)) {
      return;
    }
    try {
      moveAndConfirm("split-" + r.getTableId() + "-" + upper.id().number(), table, upper, to, b, "the shard was split but ");
      LOG.info("balancer: the upper half of {} ({}) moved to {}", new ShardId(r.getTable(), r.getNumber()), upper.id(), to);
    } catch (MoveFailed e) {
      LOG.info("balancer: {}", e.getMessage());
      b.setError(e.getMessage());
    }
  }

  /**
   * Isolates the record's key: cuts the shard that holds it now (one cut at a time, each against the
   * map the one before left, so a record run again after a stop goes on from where the map is), then
   * moves the key's shard to {@code isolate_to} if it is elsewhere.
   */
  private ShardMap isolate(ResizeRecord r, ShardMap map, ResizeRecord.Builder b) {
    byte[] key = r.getHotKey().toByteArray();
    ShardMap current = map;
    for (int i = 0; i < 2; i++) {
      Table t = current.table(r.getTable()).orElseThrow();
      List<SplitShardRequest> cuts = Isolation.cuts(t, key);
      if (cuts.isEmpty()) {
        break;
      }
      SplitShardRequest cut = cuts.get(0).toBuilder().setTable(t.name()).setShard(t.shardFor(key).id().number()).build();
      current = splits.split(cut, current);
      splitCount.increment();
    }
    Table t = current.table(r.getTable()).orElseThrow();
    ShardAssignment alone = t.shardFor(key);
    if (r.getIsolateTo().isEmpty() || alone.owner().value().equals(r.getIsolateTo())) {
      return current;
    }
    return moveAndConfirm("isolate-" + r.getTableId() + "-" + alone.id().number(), t, alone, NodeId.of(r.getIsolateTo()), b,
        "its shard was cut but ");
  }

  /**
   * Runs the move of {@code shard} to {@code to} now and checks in the map that it cut over.
   *
   * @return the map after it
   * @throws MoveFailed if it did not ({@code context} begins the message)
   */
  private ShardMap moveAndConfirm(String moveId, Table table, ShardAssignment shard, NodeId to, ResizeRecord.Builder b, String context) {
    try {
      MoveProgress done = moves.move(moveId, table, shard, to);
      b.setMovedBytes(done.getTotalBytes());
    } catch (RuntimeException e) {
      String why = e instanceof StatusRuntimeException sre ? sre.getStatus().getDescription() : e.getMessage();
      throw new MoveFailed(context + "the move of shard " + shard.id() + " from " + shard.owner() + " to " + to + " did not finish: " + why, e);
    }
    ShardMap after = coordinator.readMapSynced().map();
    if (!after.shard(table.id(), shard.id().number()).map(s -> s.owner().equals(to)).orElse(false)) {
      throw new MoveFailed(context + "the move of shard " + shard.id() + " to " + to + " ended but the map does not give it to " + to, null);
    }
    return after;
  }

  /** Runs one move now and waits for its end: the balancer, over gRPC to the shard's owner, or by map changes for a replica. */
  interface ShardMoves {
    /**
     * Moves {@code shard} of {@code table} to {@code to} and returns its last progress report. For a
     * replicated table: the leader's replica, with the lead.
     *
     * @throws RuntimeException if the move did not run to its end
     */
    MoveProgress move(String moveId, Table table, ShardAssignment shard, NodeId to);

    /**
     * Moves the replica of {@code shard} (of a replicated table) on {@code from} to {@code to} ({@link
     * ReplicaMoves}: {@code to} built and in sync, the lead passed if {@code from} led, {@code from}
     * removed), or with {@code leadOnly} passes the lead from {@code from} to its in-sync follower
     * {@code to}; returns once the map shows it.
     *
     * @throws RuntimeException if the move did not run to its end
     */
    MoveProgress moveReplica(Table table, ShardAssignment shard, NodeId from, NodeId to, boolean leadOnly);
  }

  /** A merge's or an isolation's move did not cut over: the merge does not run; the isolation ends with its key's shard where it was. */
  private static final class MoveFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MoveFailed(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Before a merge of neighbours on two nodes: moves the one the plan named to the other's node (as
   * the map has it now; nothing if they are on one node already, after a leader that stopped
   * mid-plan, say), and checks in the map that it cut over.
   */
  private void coLocate(ResizeRecord r, Table table, ResizeRecord.Builder b) {
    if (table.replication().replicated()) {
      coLocateReplicas(r, table.id());
      return;
    }
    ShardAssignment left = table.shard(r.getNumber()).orElseThrow();
    ShardAssignment right = table.shard(r.getRightNumber()).orElseThrow();
    if (left.owner().equals(right.owner())) {
      return;
    }
    ShardAssignment moving = r.getMovesFirst() && r.getMovingNumber() == right.id().number() ? right : left;
    NodeId to = (moving == left ? right : left).owner();
    moveAndConfirm("merge-" + r.getTableId() + "-" + r.getNumber() + "-" + r.getRightNumber(), table, moving, to, b, "first, ");
    LOG.info("balancer: shard {} moved from {} to {} to merge with its neighbour", moving.id(), moving.owner(), to);
  }

  /**
   * Before a merge of replicated neighbours on other replicas or under other leaders: moves the
   * replicas of the one the plan named, one at a time, until it has the other's and the other's
   * leader ({@link ShardMoves#moveReplica}: a follower is built and in sync before the one it
   * replaces goes, so the shard never has fewer replicas than its factor). Followers it does not
   * keep move first; then the lead passes to the other's leader if that is a replica already, else
   * the leader's replica moves there with the lead — so the lead moves once. Each step starts from
   * the map as it is now, so a plan run again (or by the next controller) goes on from there.
   */
  private void coLocateReplicas(ResizeRecord r, long tableId) {
    for (int step = 0; ; step++) {
      Table table = coordinator.readMapSynced().map().tableById(tableId)
          .orElseThrow(() -> new MoveFailed("table " + r.getTable() + " is gone", null));
      ShardAssignment left = table.shard(r.getNumber()).orElseThrow(() -> new MoveFailed("shard " + r.getNumber() + " is gone", null));
      ShardAssignment right = table.shard(r.getRightNumber())
          .orElseThrow(() -> new MoveFailed("shard " + r.getRightNumber() + " is gone", null));
      if (left.sameReplicas(right)) {
        return;
      }
      ShardAssignment moving = r.getMovesFirst() && r.getMovingNumber() == right.id().number() ? right : left;
      ShardAssignment staying = moving == left ? right : left;
      String context = "first, shard " + moving.id() + "'s replicas " + moving.replicas() + " were to match shard " + staying.id() + "'s "
          + staying.replicas();
      if (moving.replicas().size() != staying.replicas().size() || step > staying.replicas().size() + 1) {
        throw new MoveFailed(context + ", and do not", null);
      }
      List<NodeId> missing = staying.replicas().stream().filter(n -> !moving.isReplica(n)).toList();
      NodeId leavingFollower = moving.followers().stream().filter(n -> !staying.isReplica(n)).findFirst().orElse(null);
      try {
        if (leavingFollower != null) {
          moves.moveReplica(table, moving, leavingFollower, missing.get(0), false);
          LOG.info("balancer: the replica of shard {} on {} moved to {} to merge with its neighbour", moving.id(), leavingFollower,
              missing.get(0));
        } else {
          boolean leadOnly = moving.isReplica(staying.owner());
          moves.moveReplica(table, moving, moving.owner(), staying.owner(), leadOnly);
          LOG.info("balancer: {} of shard {} moved from {} to {} to merge with its neighbour", leadOnly ? "the lead" : "the leader's replica",
              moving.id(), moving.owner(), staying.owner());
        }
      } catch (RuntimeException e) {
        throw new MoveFailed(context + ", and a step did not finish: " + e.getMessage(), e);
      }
    }
  }

  /**
   * A merge of two neighbours as a plan's record (waiting), and what its reason says of a move
   * first ("" if none). Apart — on two nodes; replicated: on other replicas or under another
   * leader — the smaller by bytes moves to the larger's node(s) first ({@link #coLocate} runs it),
   * never onto a draining node. The balancer's merge policy and an operator's {@code table merge}
   * make their records here.
   */
  record Merge(ResizeRecord.Builder record, String movesFirst) {

    /**
     * @param right the shard after {@code left} in order
     * @return null if they are apart and both are on draining nodes (no move may go there)
     */
    static Merge of(Table t, ShardAssignment left, ShardAssignment right, long leftBytes, long rightBytes, Set<NodeId> draining) {
      boolean replicated = t.replication().replicated();
      ShardAssignment staying = leftBytes >= rightBytes ? left : right;
      ShardAssignment moving = staying == left ? right : left;
      if (onDraining(staying, replicated, draining)) {
        ShardAssignment swap = staying;
        staying = moving;
        moving = swap;
      }
      boolean apart = replicated ? !left.sameReplicas(right) : !left.owner().equals(right.owner());
      if (apart && onDraining(staying, replicated, draining)) {
        return null;
      }
      ResizeRecord.Builder merge = ResizeRecord.newBuilder().setKind(ResizeRecord.Kind.MERGE).setTable(t.name()).setTableId(t.id())
          .setNumber(left.id().number()).setRightNumber(right.id().number()).setOwner(staying.owner().value())
          .setBytes(leftBytes + rightBytes).setState(ResizeRecord.State.WAITING);
      if (!apart) {
        return new Merge(merge, "");
      }
      long movingBytes = moving == left ? leftBytes : rightBytes;
      merge.setMovesFirst(true).setMovingNumber(moving.id().number()).setMovingFrom(moving.owner().value());
      if (!replicated) {
        return new Merge(merge, "; shard " + moving.id().number() + " moves from " + moving.owner() + " to " + staying.owner()
            + " first (about " + bytes(movingBytes) + ")");
      }
      if (Set.copyOf(moving.replicas()).equals(Set.copyOf(staying.replicas()))) {
        return new Merge(merge, "; the lead of shard " + moving.id().number() + " moves from " + moving.owner() + " to "
            + staying.owner() + " first (no data moves)");
      }
      return new Merge(merge, "; shard " + moving.id().number() + "'s replicas move from " + moving.replicas() + " to "
          + staying.replicas() + " first, led from " + staying.owner() + " (about " + bytes(movingBytes) + " each)");
    }
  }

  /** Whether {@code s} is on a draining node (replicated: any of its replicas). */
  private static boolean onDraining(ShardAssignment s, boolean replicated, Set<NodeId> draining) {
    return replicated ? s.replicas().stream().anyMatch(draining::contains) : draining.contains(s.owner());
  }

  private static String bytes(long n) {
    return io.shardwise.core.util.Bytes.human(n);
  }
}
