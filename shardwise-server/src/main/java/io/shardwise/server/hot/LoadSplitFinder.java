package io.shardwise.server.hot;

import java.util.Arrays;
import java.util.function.LongUnaryOperator;

/**
 * Where to split a shard so that its two halves get about the same number of requests: the
 * load-based split finder of CockroachDB ({@code pkg/kv/kvserver/split/finder.go}), for point
 * requests. It keeps a reservoir of {@link #CANDIDATES} placement keys sampled from the requests
 * (Vitter's algorithm R: every request has the same chance to be a candidate), and every request
 * that does not become a candidate counts, for each candidate, whether it lies below the candidate
 * (it would go to the lower half of a split there) or not.
 *
 * <p>The best candidate is the one whose two counts are most even, among those that have counted
 * at least {@link #MIN_COUNTED} requests and split them no worse than {@link #MAX_IMBALANCE}
 * ({@code |below − from| / (below + from)}: 0.25 is 37.5% against 62.5%). A shard whose requests
 * all go to one key has no such candidate: every candidate then sees all requests on one side.
 *
 * <p>{@link #decay} halves every count (and the reservoir's count, so new keys keep entering), so
 * that the answer follows the requests of the last tens of seconds. Placement keys compare as
 * unsigned bytes: the partition key of a {@code range} table, the 8-byte big-endian hash of a
 * {@code hashrange} table. Not thread-safe: the caller serialises access.
 */
public final class LoadSplitFinder {

  /** Candidates kept (CockroachDB keeps 20). */
  public static final int CANDIDATES = 20;

  /** Requests a candidate must have counted before it may be chosen. */
  public static final int MIN_COUNTED = 100;

  /** The most uneven split chosen: {@code |below − from| / (below + from)}. */
  public static final double MAX_IMBALANCE = 0.25;

  private final byte[][] keys = new byte[CANDIDATES][];
  private final long[] below = new long[CANDIDATES];
  private final long[] from = new long[CANDIDATES];
  private long seen;

  /** The best split point and what it rests on. */
  public record Point(byte[] key, long below, long from) {
    /** The share of the counted requests below the point. */
    public double lowerShare() {
      return (double) below / (below + from);
    }
  }

  /**
   * Counts one request for {@code placementKey}.
   *
   * @param random {@code n -> } a uniform integer in {@code [0, n)}
   */
  public void record(byte[] placementKey, LongUnaryOperator random) {
    long n = seen++;
    int slot;
    if (n < CANDIDATES) {
      slot = (int) n;
    } else {
      long pick = random.applyAsLong(n + 1);
      if (pick >= CANDIDATES) {
        for (int i = 0; i < CANDIDATES; i++) {
          if (Arrays.compareUnsigned(placementKey, keys[i]) < 0) {
            below[i]++;
          } else {
            from[i]++;
          }
        }
        return;
      }
      slot = (int) pick;
    }
    keys[slot] = placementKey.clone();
    below[slot] = 0;
    from[slot] = 0;
  }

  /** Halves every count. */
  public void decay() {
    seen = Math.max(Math.min(seen, CANDIDATES), seen / 2);
    for (int i = 0; i < CANDIDATES; i++) {
      below[i] /= 2;
      from[i] /= 2;
    }
  }

  /** The most even candidate, or {@code null} if none has counted enough requests or splits them evenly enough. */
  public Point best() {
    Point best = null;
    double bestScore = Double.MAX_VALUE;
    for (int i = 0; i < CANDIDATES && keys[i] != null; i++) {
      long counted = below[i] + from[i];
      if (counted < MIN_COUNTED) {
        continue;
      }
      double score = Math.abs(below[i] - from[i]) / (double) counted;
      if (score < MAX_IMBALANCE && (score < bestScore
          || (score == bestScore && Arrays.compareUnsigned(keys[i], best.key()) < 0))) {
        best = new Point(keys[i].clone(), below[i], from[i]);
        bestScore = score;
      }
    }
    return best;
  }

  /** The most requests any candidate has counted (to tell "too few requests" from "none balanced"). */
  public long mostCounted() {
    long most = 0;
    for (int i = 0; i < CANDIDATES && keys[i] != null; i++) {
      most = Math.max(most, below[i] + from[i]);
    }
    return most;
  }
}
