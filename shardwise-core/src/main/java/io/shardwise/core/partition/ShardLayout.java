package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.key.ByteStrings;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The key-to-shard function of a table in the cluster, built only from values that are stored in
 * the shard map, so every process that reads the map routes every key the same way.
 *
 * <p>Shards are numbered by position, {@code 0 .. shardCount()-1}. What a position means depends on
 * the strategy:
 *
 * <ul>
 *   <li>{@code range}: the ranges between {@link #splitPoints()};
 *   <li>{@code hashrange}: hash ranges starting at {@link #hashValues()};
 *   <li>{@code ring}, {@code tokens}: hash ranges starting at {@link #hashValues()}, cut at the
 *       points of the {@linkplain #ringMembers() ring's members} (one arc per point; the arc that
 *       wraps past the top is two ranges, the last and the first), so a member that joins adds its
 *       points by splitting ranges, and a range splits and merges as a {@code hashrange} one does
 *       ({@link #hashRanges()}). A table created before rings were stored this way keeps one arc
 *       per shard, ending at its point ({@link #hashValues()}), and hands whole arcs over;
 *   <li>{@code mod}, {@code slots}: {@code hash mod shardCount()};
 *   <li>{@code jump}, {@code rendezvous}: that function over {@code shardCount()} buckets.
 * </ul>
 *
 * <p>Which node owns which position is not part of the layout: it lives in the shard map, with an
 * epoch per shard. Immutable and thread-safe; lookups are allocation-free for a pre-hashed key.
 */
public final class ShardLayout {

  private final Strategy strategy;
  private final HashFunction hash;
  private final int shards;
  private final List<byte[]> splitPoints;
  private final long[] hashValues;
  private final Partitioner byKey;
  private final HashPartitioner byHash;
  private final HashPointIndex index;
  /** A ring or tokens layout of hash ranges: the members whose points cut them, in ring index order; empty otherwise. */
  private final List<String> ringMembers;

  private ShardLayout(Strategy strategy, HashFunction hash, int shards, List<byte[]> splitPoints, long[] hashValues, List<String> ringMembers) {
    this.strategy = strategy;
    this.hash = hash;
    this.shards = shards;
    this.splitPoints = splitPoints;
    this.hashValues = hashValues;
    this.ringMembers = ringMembers;
    switch (strategy) {
      case RANGE:
        this.byKey = RangePartitioner.of(splitPoints, 1);
        this.byHash = null;
        this.index = null;
        break;
      case MOD:
      case SLOTS:
        this.byHash = new ModPartitioner(hash, shards);
        this.byKey = byHash;
        this.index = null;
        break;
      case JUMP:
        this.byHash = new JumpPartitioner(hash, shards);
        this.byKey = byHash;
        this.index = null;
        break;
      case RENDEZVOUS:
        this.byHash = new RendezvousPartitioner(hash, shards);
        this.byKey = byHash;
        this.index = null;
        break;
      case HASHRANGE:
      case RING:
      case TOKENS:
        long[] flipped = new long[hashValues.length];
        for (int i = 0; i < flipped.length; i++) {
          flipped[i] = hashValues[i] ^ Long.MIN_VALUE;
        }
        this.index = new HashPointIndex(flipped, hash.bits());
        this.byKey = null;
        this.byHash = null;
        break;
      default:
        throw new AssertionError(strategy);
    }
  }

  /**
   * A layout from stored values.
   *
   * @param splitPoints for {@code range}: sorted, distinct, non-empty; {@code shards} is their count
   *     plus one. Empty for every other strategy.
   * @param hashValues for {@code hashrange}: ascending range starts, the first 0; for {@code ring}
   *     and {@code tokens}: ascending, distinct ring points. One per shard. Empty otherwise.
   * @throws IllegalArgumentException when the values do not describe {@code shards} shards
   */
  public static ShardLayout of(Strategy strategy, HashFunction hash, int shards, List<byte[]> splitPoints, long[] hashValues) {
    if (shards < 1) {
      throw new IllegalArgumentException("a table needs at least 1 shard, not " + shards);
    }
    boolean range = strategy == Strategy.RANGE;
    boolean points = strategy == Strategy.HASHRANGE || strategy == Strategy.RING || strategy == Strategy.TOKENS;
    if (range ? splitPoints.size() != shards - 1 : !splitPoints.isEmpty()) {
      throw new IllegalArgumentException(
          strategy + " layout with " + shards + " shards cannot have " + splitPoints.size() + " split points");
    }
    if (points ? hashValues.length != shards : hashValues.length != 0) {
      throw new IllegalArgumentException(
          strategy + " layout with " + shards + " shards cannot have " + hashValues.length + " hash values");
    }
    checkAscending(hash, hashValues);
    if (strategy == Strategy.HASHRANGE && hashValues[0] != 0) {
      throw new IllegalArgumentException("the first hash range must start at 0");
    }
    List<byte[]> copy = new ArrayList<>();
    splitPoints.forEach(p -> copy.add(p.clone()));
    return new ShardLayout(strategy, hash, shards, List.copyOf(copy), hashValues.clone(), List.of());
  }

  /**
   * A {@code ring} or {@code tokens} layout of hash ranges from stored values: the ranges start at
   * {@code starts} (ascending, distinct, the first 0), and the ring's points are those of {@code
   * members} (member i places the points of node i of {@link PartitionerSpec#create}).
   *
   * @throws IllegalArgumentException when the values do not describe such a layout
   */
  public static ShardLayout ringRanges(Strategy strategy, HashFunction hash, long[] starts, List<String> members) {
    if (strategy != Strategy.RING && strategy != Strategy.TOKENS) {
      throw new IllegalArgumentException("only ring and tokens layouts have ring members, not " + strategy);
    }
    if (members.isEmpty() || new java.util.HashSet<>(members).size() != members.size()) {
      throw new IllegalArgumentException("a ring needs distinct members, not " + members);
    }
    if (starts.length == 0 || starts[0] != 0) {
      throw new IllegalArgumentException("the first hash range of a ring must start at 0");
    }
    checkAscending(hash, starts);
    return new ShardLayout(strategy, hash, starts.length, List.of(), starts.clone(), List.copyOf(members));
  }

  private static void checkAscending(HashFunction hash, long[] values) {
    for (int i = 0; i < values.length; i++) {
      if (Long.compareUnsigned(values[i], hash.maxValue()) > 0) {
        throw new IllegalArgumentException("hash value " + Long.toUnsignedString(values[i]) + " is outside " + hash.name());
      }
      if (i > 0 && Long.compareUnsigned(values[i - 1], values[i]) >= 0) {
        throw new IllegalArgumentException("hash values must be strictly ascending at position " + i);
      }
    }
  }

  /**
   * The layout a new table starts with, and which of {@code nodes} nodes first owns each shard.
   *
   * <p>{@code shards} is the shard count for {@code mod}, {@code jump}, {@code rendezvous},
   * {@code hashrange} and {@code range} (pre-split from {@code sample} unless the spec has split
   * points); {@code slots} takes the spec's slot count, and {@code ring}/{@code tokens} one shard per
   * point (nodes × vnodes or tokens), each owned by the node whose point it is. Other shards go to
   * nodes in contiguous blocks.
   */
  public static Initial initial(PartitionerSpec spec, int shards, int nodes, KeySample sample) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < Validation.positiveNodes(nodes); i++) {
      names.add("n" + i);
    }
    return initial(spec, shards, names, sample);
  }

  /**
   * {@link #initial(PartitionerSpec, int, int, KeySample)} on the named nodes: a {@code ring} or
   * {@code tokens} table's members are {@code nodes}, in this order ({@link RingRanges#initial}).
   */
  public static Initial initial(PartitionerSpec spec, int shards, List<String> nodeNames, KeySample sample) {
    int nodes = Validation.positiveNodes(nodeNames.size());
    Partitioner placed;
    switch (spec.strategy()) {
      case SLOTS:
        placed = SlotPartitioner.evenly(spec.hash(), spec.slots(), nodes);
        break;
      case RING:
      case TOKENS:
        return RingRanges.initial(spec, nodeNames);
      case RANGE:
        placed = spec.needsSample() ? RangePartitioner.preSplit(sample, shards, nodes) : spec.create(nodes, sample);
        break;
      case HASHRANGE:
        placed = HashRangePartitioner.evenly(spec.hash(), shards, nodes);
        break;
      default:
        placed = null; // bucket strategies: the layout alone
    }
    int count = placed == null ? shards : placed.shardCount();
    int[] owners = new int[count];
    for (int i = 0; i < count; i++) {
      owners[i] = placed == null ? (int) ((long) i * nodes / count) : placed.nodeOfShard(i);
    }
    List<byte[]> splits = List.of();
    long[] values = new long[0];
    if (placed instanceof RangePartitioner) {
      splits = ((RangePartitioner) placed).splitPoints();
    } else if (placed instanceof HashRangePartitioner) {
      HashRangePartitioner h = (HashRangePartitioner) placed;
      values = new long[count];
      for (int i = 0; i < count; i++) {
        values[i] = h.first(i);
      }
    }
    return new Initial(of(spec.strategy(), spec.hash(), count, splits, values), owners);
  }

  // ------------------------------------------------------------------ splits and merges

  /** True if shards of this layout can split and merge: {@code range}, and every layout of {@link #hashRanges()}. */
  public boolean splittable() {
    return strategy == Strategy.RANGE || hashRanges();
  }

  /**
   * True if every shard is one range of hashes ({@link #hashRangeFirst} to {@link #hashRangeLast}):
   * {@code hashrange}, and {@code ring} or {@code tokens} stored as ranges ({@link #ringMembers()}).
   */
  public boolean hashRanges() {
    return strategy == Strategy.HASHRANGE || !ringMembers.isEmpty();
  }

  /**
   * The nodes whose points are on this {@code ring} or {@code tokens} layout of ranges, in ring index
   * order ({@link RingRanges}); empty for other layouts, and for a ring of whole arcs.
   */
  public List<String> ringMembers() {
    return ringMembers;
  }

  /** This ring layout of ranges with {@code member} joined: its ranges cut at {@code starts} ({@link RingRanges#startsAfterJoin}). */
  ShardLayout withMember(String member, long[] starts) {
    List<String> members = new ArrayList<>(ringMembers);
    members.add(member);
    return ringRanges(strategy, hash, starts, members);
  }

  /**
   * The layout with the {@code range} shard at {@code position} split at {@code partitionKey}: the
   * shard's keys below it stay at {@code position}, the others move to {@code position + 1}, and
   * every later shard moves one position up.
   *
   * @throws IllegalArgumentException unless the key lies strictly inside the shard (above its start)
   */
  public ShardLayout splitAt(int position, byte[] partitionKey) {
    requireStrategy(Strategy.RANGE, "split at a key");
    checkPosition(position);
    byte[] start = position == 0 ? new byte[0] : splitPoints.get(position - 1);
    byte[] end = position + 1 < shards ? splitPoints.get(position) : null;
    if (Arrays.compareUnsigned(partitionKey, start) <= 0 || (end != null && Arrays.compareUnsigned(partitionKey, end) >= 0)) {
      throw new IllegalArgumentException("cannot split shard " + position + " at '" + ByteStrings.toDisplay(partitionKey)
          + "': the key must lie inside the shard, above its start '" + ByteStrings.toDisplay(start) + "'"
          + (end == null ? "" : " and below its end '" + ByteStrings.toDisplay(end) + "'"));
    }
    List<byte[]> points = new ArrayList<>(splitPoints);
    points.add(position, partitionKey.clone());
    return of(strategy, hash, shards + 1, points, hashValues);
  }

  /**
   * The layout with the {@code hashrange} shard at {@code position} split at hash {@code at}: hashes
   * below it stay at {@code position}, {@code at} and above move to {@code position + 1}.
   *
   * @throws IllegalArgumentException unless {@code at} lies strictly inside the shard (above its first hash)
   */
  public ShardLayout splitAtHash(int position, long at) {
    requireHashRanges("split at a hash");
    checkPosition(position);
    long first = hashValues[position];
    long last = position + 1 < shards ? hashValues[position + 1] - 1 : hash.maxValue();
    if (Long.compareUnsigned(at, first) <= 0 || Long.compareUnsigned(at, last) > 0) {
      throw new IllegalArgumentException("cannot split shard " + position + " at hash " + Long.toUnsignedString(at)
          + ": it must lie in (" + Long.toUnsignedString(first) + ", " + Long.toUnsignedString(last) + "]");
    }
    long[] values = new long[shards + 1];
    System.arraycopy(hashValues, 0, values, 0, position + 1);
    values[position + 1] = at;
    System.arraycopy(hashValues, position + 1, values, position + 2, shards - position - 1);
    return withHashValues(values);
  }

  /** The first hash of the {@code hashrange} shard at {@code position}. */
  public long hashRangeFirst(int position) {
    requireHashRanges("take a hash range");
    checkPosition(position);
    return hashValues[position];
  }

  /** The last hash (inclusive) of the {@code hashrange} shard at {@code position}: the function's maximum for the last shard. */
  public long hashRangeLast(int position) {
    requireHashRanges("take a hash range");
    checkPosition(position);
    return position + 1 < shards ? hashValues[position + 1] - 1 : hash.maxValue();
  }

  /** The hash in the middle of the {@code hashrange} shard at {@code position}, or empty if it holds one hash. */
  public java.util.OptionalLong hashMidpoint(int position) {
    requireHashRanges("take a hash midpoint");
    checkPosition(position);
    long first = hashValues[position];
    long last = position + 1 < shards ? hashValues[position + 1] - 1 : hash.maxValue();
    if (first == last) {
      return java.util.OptionalLong.empty();
    }
    long mid = first + ((last - first) >>> 1) + 1; // unsigned: above first, at most last
    return java.util.OptionalLong.of(mid);
  }

  /**
   * The hashes that cut the {@code hashrange} shard at {@code position} into {@code parts} ranges of
   * equal width (each the first hash of a piece after the first), ascending and distinct; fewer
   * when the shard holds fewer than {@code parts} hashes.
   */
  public long[] hashCutPoints(int position, int parts) {
    requireHashRanges("cut a hash range");
    checkPosition(position);
    if (parts < 2) {
      throw new IllegalArgumentException("a hash range is cut into 2 or more parts, not " + parts);
    }
    java.math.BigInteger first = new java.math.BigInteger(Long.toUnsignedString(hashValues[position]));
    java.math.BigInteger last = new java.math.BigInteger(Long.toUnsignedString(hashRangeLast(position)));
    java.math.BigInteger width = last.subtract(first).add(java.math.BigInteger.ONE);
    long[] out = new long[parts - 1];
    int n = 0;
    for (int i = 1; i < parts; i++) {
      java.math.BigInteger at = first.add(width.multiply(java.math.BigInteger.valueOf(i)).divide(java.math.BigInteger.valueOf(parts)));
      if (at.compareTo(first) > 0 && (n == 0 || at.longValue() != out[n - 1])) {
        out[n++] = at.longValue();
      }
    }
    return java.util.Arrays.copyOf(out, n);
  }

  /**
   * The layout with the shards at {@code position} and {@code position + 1} merged into one at
   * {@code position}; every later shard moves one position down.
   *
   * @throws IllegalArgumentException if there is no shard at {@code position + 1}
   */
  public ShardLayout mergeWithNext(int position) {
    if (!splittable()) {
      throw new IllegalArgumentException(strategy + " shards cannot merge; " + SPLITTABLE);
    }
    checkPosition(position);
    if (position + 1 >= shards) {
      throw new IllegalArgumentException("shard " + position + " is the last one; it has no next shard to merge with");
    }
    if (strategy == Strategy.RANGE) {
      List<byte[]> points = new ArrayList<>(splitPoints);
      points.remove(position);
      return of(strategy, hash, shards - 1, points, hashValues);
    }
    long[] values = new long[shards - 1];
    System.arraycopy(hashValues, 0, values, 0, position + 1);
    System.arraycopy(hashValues, position + 2, values, position + 1, shards - position - 2);
    return withHashValues(values);
  }

  /** What can split and merge, for messages. */
  public static final String SPLITTABLE = "only range, hashrange, and ring and tokens tables created as hash ranges split and merge";

  private ShardLayout withHashValues(long[] values) {
    return ringMembers.isEmpty() ? of(strategy, hash, values.length, splitPoints, values) : ringRanges(strategy, hash, values, ringMembers);
  }

  private void requireStrategy(Strategy wanted, String what) {
    if (strategy != wanted) {
      throw new IllegalArgumentException("cannot " + what + " in a " + strategy + " layout"
          + (splittable() ? "" : "; " + SPLITTABLE));
    }
  }

  private void requireHashRanges(String what) {
    if (!hashRanges()) {
      throw new IllegalArgumentException("cannot " + what + " in a " + strategy + " layout"
          + (splittable() ? "" : "; " + SPLITTABLE));
    }
  }

  private void checkPosition(int position) {
    if (position < 0 || position >= shards) {
      throw new IllegalArgumentException("no shard at position " + position + " (the layout has " + shards + ")");
    }
  }

  /** A new table's layout and the node index that first owns each shard. */
  public record Initial(ShardLayout layout, int[] owners) {}

  public Strategy strategy() {
    return strategy;
  }

  public HashFunction hashFunction() {
    return hash;
  }

  public int shardCount() {
    return shards;
  }

  /** The split points of a {@code range} layout (copies); empty otherwise. */
  public List<byte[]> splitPoints() {
    List<byte[]> out = new ArrayList<>();
    splitPoints.forEach(p -> out.add(p.clone()));
    return out;
  }

  /** Range starts (every layout of {@link #hashRanges()}), or ring points (a ring of whole arcs); empty otherwise. */
  public long[] hashValues() {
    return hashValues.clone();
  }

  /** The shard of a partition key. */
  public int shardFor(byte[] partitionKey) {
    return strategy == Strategy.RANGE ? byKey.shardFor(partitionKey) : shardForHash(hash.hash(partitionKey));
  }

  /**
   * The shard of a partition key that hashes to {@code h}; allocation-free.
   *
   * @throws IllegalStateException for a {@code range} layout, which does not hash
   */
  public int shardForHash(long h) {
    switch (strategy) {
      case RANGE:
        throw new IllegalStateException("a range layout places raw keys, not hashes");
      case HASHRANGE:
      case RING:
      case TOKENS:
        if (hashRanges()) { // the range whose start is the last at or below h
          return h == hash.maxValue() ? shards - 1 : index.lowerBound(h + 1) - 1;
        }
        int at = index.lowerBound(h); // a ring of whole arcs: the first point at or above h
        return at == shards ? 0 : at;
      default:
        return byHash.shardForHash(h);
    }
  }

  /**
   * The partition keys of the shard at {@code position} of a {@code range} layout.
   *
   * @throws IllegalStateException for any other strategy
   */
  public io.shardwise.core.key.KeyRange keyRangeOf(int position) {
    if (strategy != Strategy.RANGE) {
      throw new IllegalStateException("only range layouts have key ranges; this one is " + strategy);
    }
    return ((RangePartitioner) byKey).rangeOf(position);
  }

  /** For a {@code range} layout, only the shards that overlap {@code range}, in key order. */
  public ShardSpan shardsFor(io.shardwise.core.key.KeyRange range) {
    if (strategy != Strategy.RANGE) {
      return new ShardSpan(0, shards - 1);
    }
    return ((RangePartitioner) byKey).shardsFor(range);
  }
}
