package io.shardwise.core.sim;

import io.shardwise.core.analysis.LoadStats;
import io.shardwise.core.partition.Strategy;
import java.util.List;

/**
 * What a simulation found: per strategy, how many keys moved going from {@code from} to {@code to}
 * nodes against the theoretical minimum, and how evenly keys were spread before and after.
 */
public record SimulationReport(
    String keySource, long keys, int from, int to, String hash, List<Result> results) {

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
      List<MovedKey> movedKeys) {

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

  /** A key that changed node, in input order. */
  public record MovedKey(byte[] key, int from, int to) {}
}
