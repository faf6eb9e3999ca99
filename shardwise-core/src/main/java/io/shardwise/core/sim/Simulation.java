package io.shardwise.core.sim;

import io.shardwise.core.analysis.KeyMoves;
import io.shardwise.core.analysis.PlacementDiff;
import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.partition.HashPartitioner;
import io.shardwise.core.partition.HashSpaceOwnership;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.Partitioner;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.RangePartitioner;
import io.shardwise.core.partition.SlotPartitioner;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Places every key of a {@link KeySource} with each strategy at {@code from} nodes and again at
 * {@code to} nodes (grown or shrunk the way the cluster would, see
 * {@link Partitioner#withNodeCount}), and reports what moved.
 *
 * <p>Streams the keys: one pass to sample when a range strategy needs one, one pass to place. Each
 * key is hashed once per distinct hash function, and only moved keys are kept, and only when asked
 * for. Deterministic: no clock, no unseeded randomness, no iteration over hash-ordered collections.
 */
public final class Simulation {

  /** Keys kept in the sample that range strategies split by. */
  public static final int SAMPLE_CAPACITY = 1 << 16;

  /** Keys a simulation keeps per-key placements for, at most (a grid to show, not a dataset). */
  public static final int MAX_PLACED_KEYS = 10_000;

  /** How much per-key detail a report keeps besides the counts. */
  public enum Detail {
    /** Counts, balance and structure only. */
    SUMMARY,
    /** Also the moved keys, in input order. */
    MOVED_KEYS,
    /** Also every key's node before and after (at most {@link #MAX_PLACED_KEYS} keys). */
    PLACEMENTS
  }

  private Simulation() {}

  /** {@link #run(KeySource, int, int, List, Detail)} with moved keys listed or not. */
  public static SimulationReport run(
      KeySource keys, int from, int to, List<PartitionerSpec> specs, boolean listMoved) {
    return run(keys, from, to, specs, listMoved ? Detail.MOVED_KEYS : Detail.SUMMARY);
  }

  /**
   * Runs the simulation.
   *
   * @param specs one per strategy, reported in this order
   * @param detail what to keep per key besides the counts
   * @throws IllegalArgumentException if a node count is below 1, a strategy cannot place onto
   *     that many nodes, or placements are asked for more than {@link #MAX_PLACED_KEYS} keys
   */
  public static SimulationReport run(
      KeySource keys, int from, int to, List<PartitionerSpec> specs, Detail detail) {
    boolean listMoved = detail != Detail.SUMMARY;
    boolean place = detail == Detail.PLACEMENTS;
    if (from < 1 || to < 1) {
      throw new IllegalArgumentException("node counts must be at least 1: --from " + from + ", --to " + to);
    }
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("no strategy to simulate");
    }
    KeySample sample = needsSample(specs) ? sample(keys, specs.get(0)) : KeySample.empty();

    int n = specs.size();
    Partitioner[] before = new Partitioner[n];
    Partitioner[] after = new Partitioner[n];
    int[] hashSlot = new int[n]; // index into distinct hash functions, -1 for range
    List<HashFunction> hashes = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      PartitionerSpec spec = specs.get(i);
      try {
        before[i] = spec.create(from, sample);
        after[i] = before[i].withNodeCount(to, sample);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(spec.strategy() + ": " + e.getMessage(), e);
      }
      hashSlot[i] = -1;
      if (before[i] instanceof HashPartitioner) {
        HashFunction h = ((HashPartitioner) before[i]).hashFunction();
        int at = hashes.indexOf(h);
        if (at < 0) {
          hashes.add(h);
          at = hashes.size() - 1;
        }
        hashSlot[i] = at;
      }
    }

    KeyMoves[] moves = new KeyMoves[n];
    List<List<SimulationReport.MovedKey>> moved = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      moves[i] = new KeyMoves(from, to);
      moved.add(listMoved ? new ArrayList<>() : null);
    }
    long[] hashed = new long[hashes.size()];
    long count = 0;
    List<byte[]> placedKeys = place ? new ArrayList<>() : null;
    // Bounded by MAX_PLACED_KEYS, so allocated whole; trimmed to the key count at the end.
    int[][] placedBefore = place ? new int[n][MAX_PLACED_KEYS] : null;
    int[][] placedAfter = place ? new int[n][MAX_PLACED_KEYS] : null;
    for (byte[] key : keys) {
      if (place) {
        if (count == MAX_PLACED_KEYS) {
          throw new IllegalArgumentException(
              "per-key placements are kept for at most " + MAX_PLACED_KEYS + " keys; the source has more");
        }
        placedKeys.add(key);
      }
      for (int h = 0; h < hashed.length; h++) {
        hashed[h] = hashes.get(h).hash(key);
      }
      for (int i = 0; i < n; i++) {
        int a;
        int b;
        if (hashSlot[i] >= 0) {
          a = ((HashPartitioner) before[i]).nodeForHash(hashed[hashSlot[i]]);
          b = ((HashPartitioner) after[i]).nodeForHash(hashed[hashSlot[i]]);
        } else {
          a = before[i].nodeFor(key);
          b = after[i].nodeFor(key);
        }
        if (moves[i].record(a, b) && listMoved) {
          moved.get(i).add(new SimulationReport.MovedKey(key, a, b));
        }
        if (place) {
          placedBefore[i][(int) count] = a;
          placedAfter[i][(int) count] = b;
        }
      }
      count++;
    }

    double minimum = KeyMoves.theoreticalMinimum(from, to);
    List<SimulationReport.Result> results = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      results.add(
          new SimulationReport.Result(
              specs.get(i).strategy(),
              moves[i].moved(),
              moves[i].movedFraction(),
              minimum,
              moves[i].beforeStats(),
              moves[i].afterStats(),
              before[i].shardCount(),
              after[i].shardCount(),
              structure(before[i], after[i]),
              listMoved ? List.copyOf(moved.get(i)) : null,
              boxed(moves[i].beforeLoad()),
              boxed(moves[i].afterLoad()),
              place
                  ? new SimulationReport.Placement(
                      Arrays.copyOf(placedBefore[i], (int) count), Arrays.copyOf(placedAfter[i], (int) count))
                  : null));
    }
    return new SimulationReport(
        keys.description(), count, from, to, specs.get(0).hash().name(), results, place ? List.copyOf(placedKeys) : null);
  }

  private static List<Long> boxed(long[] values) {
    return Arrays.stream(values).boxed().toList();
  }

  private static boolean needsSample(List<PartitionerSpec> specs) {
    return specs.stream().anyMatch(s -> s.strategy() == Strategy.RANGE || s.strategy() == Strategy.HASHRANGE);
  }

  private static KeySample sample(KeySource keys, PartitionerSpec spec) {
    KeySample.Builder builder = KeySample.builder(SAMPLE_CAPACITY, spec.seed(), spec.hash());
    for (byte[] key : keys) {
      builder.add(key);
    }
    return builder.build();
  }

  private static SimulationReport.Structure structure(Partitioner before, Partitioner after) {
    if (before instanceof SlotPartitioner) {
      long movedSlots = PlacementDiff.slots((SlotPartitioner) before, (SlotPartitioner) after).size();
      return new SimulationReport.Structure("slots", movedSlots, before.shardCount(), null);
    }
    if (before instanceof HashSpaceOwnership) {
      HashSpaceOwnership a = (HashSpaceOwnership) before;
      List<PlacementDiff.HashRangeMove> ranges = PlacementDiff.hashRanges(a, (HashSpaceOwnership) after);
      return new SimulationReport.Structure(
          "hash ranges", ranges.size(), a.ownership().size(), PlacementDiff.hashSpaceFraction(ranges, a));
    }
    if (before instanceof RangePartitioner) {
      RangePartitioner a = (RangePartitioner) before;
      long movedRanges = PlacementDiff.keyRanges(a, (RangePartitioner) after).size();
      return new SimulationReport.Structure("key ranges", movedRanges, a.ownership().size(), null);
    }
    return null;
  }
}
