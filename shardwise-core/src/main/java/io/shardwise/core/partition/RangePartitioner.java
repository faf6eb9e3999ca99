package io.shardwise.core.partition;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.KeyRange;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Key-range partitioning: sorted split points divide the partition keys into contiguous shards.
 * Shard 0 holds every key below the first split point; shard i holds {@code [split[i-1], split[i])};
 * the last shard holds everything from the last split point up. A split point is the inclusive
 * start of its shard. Keys compare as unsigned bytes.
 *
 * <p>Range scans touch only the shards they overlap ({@link #shardsFor(KeyRange)}); the price is
 * that monotonically increasing keys all land on the last shard. Split points can be given, or
 * computed from a key sample ({@link #preSplit}) so the shards start roughly equal. Resizing
 * follows {@link ContiguousLayout}: growing splits the shard holding the most sampled keys at its
 * median sampled key.
 *
 * <p>Immutable and thread-safe.
 */
public final class RangePartitioner implements Partitioner {

  private static final byte[] MIN = new byte[0];

  private final int nodes;
  private final byte[][] splits;
  private final int[] owners;

  private RangePartitioner(int nodes, byte[][] splits, int[] owners) {
    this.nodes = nodes;
    this.splits = splits;
    this.owners = owners;
  }

  /**
   * Shards bounded by {@code splitPoints}, assigned to {@code nodes} nodes in contiguous blocks.
   *
   * @throws IllegalArgumentException if the split points are not strictly ascending, or one is empty
   */
  public static RangePartitioner of(List<byte[]> splitPoints, int nodes) {
    Validation.positiveNodes(nodes);
    byte[][] splits = new byte[splitPoints.size()][];
    for (int i = 0; i < splits.length; i++) {
      splits[i] = splitPoints.get(i).clone();
      if (splits[i].length == 0) {
        throw new IllegalArgumentException("split point " + i + " is empty; the first shard already starts at the empty key");
      }
      if (i > 0) {
        int c = Arrays.compareUnsigned(splits[i - 1], splits[i]);
        if (c == 0) {
          throw new IllegalArgumentException("duplicate split point '" + ByteStrings.toDisplay(splits[i]) + "'");
        }
        if (c > 0) {
          throw new IllegalArgumentException(
              "split points are not sorted: '" + ByteStrings.toDisplay(splits[i - 1]) + "' comes before '"
                  + ByteStrings.toDisplay(splits[i]) + "'");
        }
      }
    }
    int[] owners = new int[splits.length + 1];
    for (int i = 0; i < owners.length; i++) {
      owners[i] = (int) ((long) i * nodes / owners.length);
    }
    return new RangePartitioner(nodes, splits, owners);
  }

  /**
   * {@code shards} shards holding roughly equal numbers of the sampled keys: split point i is the
   * sampled key at quantile i/shards (repeats skipped), assigned in contiguous blocks.
   *
   * @throws IllegalArgumentException if the sample has too few distinct keys for that many shards
   */
  public static RangePartitioner preSplit(KeySample sample, int shards, int nodes) {
    if (shards < 1) {
      throw new IllegalArgumentException("shard count must be at least 1, not " + shards);
    }
    byte[][] keys = sample.sortedKeys();
    List<byte[]> splits = new ArrayList<>();
    for (int i = 1; i < shards; i++) {
      int at = (int) ((long) i * keys.length / shards);
      // The first key at or after the quantile that is above the previous split point.
      while (at < keys.length
          && (keys[at].length == 0
              || (!splits.isEmpty() && Arrays.compareUnsigned(keys[at], splits.get(splits.size() - 1)) <= 0))) {
        at++;
      }
      if (at == keys.length) {
        throw new IllegalArgumentException(
            "cannot pre-split into " + shards + " range shards: the key sample has too few distinct keys");
      }
      splits.add(keys[at]);
    }
    return of(splits, nodes);
  }

  @Override
  public Strategy strategy() {
    return Strategy.RANGE;
  }

  @Override
  public int shardCount() {
    return owners.length;
  }

  @Override
  public int nodeCount() {
    return nodes;
  }

  /** The number of split points at or below {@code key}. */
  @Override
  public int shardFor(byte[] partitionKey) {
    return countSplits(partitionKey, true);
  }

  @Override
  public int nodeOfShard(int shard) {
    return owners[shard];
  }

  /** The split points, in order. */
  public List<byte[]> splitPoints() {
    List<byte[]> out = new ArrayList<>(splits.length);
    for (byte[] s : splits) {
      out.add(s.clone());
    }
    return out;
  }

  /** The partition keys of {@code shard}. */
  public KeyRange rangeOf(int shard) {
    Validation.checkIndex(shard, owners.length, "shard");
    return KeyRange.of(shard == 0 ? MIN : splits[shard - 1], shard < splits.length ? splits[shard] : null);
  }

  /** Only the shards that overlap {@code range}, in key order. */
  public ShardSpan shardsFor(KeyRange range) {
    int first = shardFor(range.start());
    byte[] end = range.end();
    int last = end == null ? owners.length - 1 : countSplits(end, false);
    return new ShardSpan(first, last);
  }

  /** Split points below {@code key}, or at or below it when {@code inclusive}. */
  private int countSplits(byte[] key, boolean inclusive) {
    int lo = 0;
    int hi = splits.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int c = Arrays.compareUnsigned(splits[mid], key);
      if (c < 0 || (inclusive && c == 0)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  @Override
  public RangePartitioner withNodeCount(int newNodes, KeySample sample) {
    Validation.positiveNodes(newNodes);
    List<byte[]> starts = new ArrayList<>();
    starts.add(MIN);
    starts.addAll(Arrays.asList(splits));
    ContiguousLayout<byte[]> layout =
        new ContiguousLayout<>(
            starts,
            owners,
            new ContiguousLayout.Measure<>() {
              @Override
              public double size(byte[] start, byte[] end) {
                return sample.countKeys(start, end);
              }

              @Override
              public byte[] splitPoint(byte[] start, byte[] end) {
                return sample.medianKey(start, end);
              }
            });
    layout.resize(nodes, newNodes);
    byte[][] next = new byte[layout.shards() - 1][];
    for (int i = 1; i < layout.shards(); i++) {
      next[i - 1] = layout.start(i);
    }
    return new RangePartitioner(newNodes, next, layout.ownerArray());
  }

  /** The ranges each node owns, ascending, adjacent ranges of one node coalesced. */
  public List<OwnedKeyRange> ownership() {
    List<OwnedKeyRange> out = new ArrayList<>();
    byte[] start = MIN;
    for (int shard = 0; shard < owners.length; shard++) {
      boolean lastOfRun = shard + 1 == owners.length || owners[shard + 1] != owners[shard];
      if (lastOfRun) {
        out.add(new OwnedKeyRange(KeyRange.of(start, shard < splits.length ? splits[shard] : null), owners[shard]));
        start = shard < splits.length ? splits[shard] : null;
      }
    }
    return out;
  }
}
