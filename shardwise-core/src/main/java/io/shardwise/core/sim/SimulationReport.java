package io.shardwise.core.sim;

import io.shardwise.core.analysis.LoadStats;
import io.shardwise.core.partition.Strategy;
import java.util.Arrays;
import java.util.List;

/**
 * What a simulation found: per strategy, how many keys moved going from {@code from} to {@code to}
 * nodes against the theoretical minimum, and how evenly keys were spread before and after.
 *
 * @param placedKeys every key in input order when placements were asked for ({@link
 *     Simulation.Detail#PLACEMENTS}), else {@code null}; {@link Result#placement()} indexes into it
 */
public record SimulationReport(
    String keySource, long keys, int from, int to, String hash, List<Result> results, List<byte[]> placedKeys) {

  /** One strategy's outcome. */
  public record Result(
      Strategy strategy,
      long moved,
      double movedFraction,
      double theoreticalFraction,
      LoadStats before,
      LoadStats after,
      int shardsBefore,
      int shardsAfter,
      Structure structure,
      List<MovedKey> movedKeys,
      List<Long> loadBefore,
      List<Long> loadAfter,
      Placement placement) {

    /** Moved keys over the theoretical minimum; 1.0 is optimal. NaN when nothing had to move. */
    public double movedOverMinimum() {
      return theoreticalFraction == 0 ? Double.NaN : movedFraction / theoreticalFraction;
    }
  }

  /**
   * The exact structural change, from the placements alone (no keys): how many slots, hash ranges
   * or key ranges changed owner, out of how many, and for hash ranges the fraction of the hash
   * space they cover (the expected moved fraction). {@code null} for strategies without structure
   * to compare (mod, jump, rendezvous).
   */
  public record Structure(String unit, long moved, long total, Double spaceFraction) {}

  /**
   * The node of every key before and after, in the order of {@link SimulationReport#placedKeys()}.
   */
  public record Placement(int[] before, int[] after) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Placement p && Arrays.equals(before, p.before) && Arrays.equals(after, p.after);
    }

    @Override
    public int hashCode() {
      return 31 * Arrays.hashCode(before) + Arrays.hashCode(after);
    }

    @Override
    public String toString() {
      return "Placement[" + before.length + " keys]";
    }
  }

  /** A key that changed node, in input order. */
  public record MovedKey(byte[] key, int from, int to) {}
}
