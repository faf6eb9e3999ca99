package io.shardwise.core.analysis;

/**
 * Tallies keys placed before and after a placement change: how many moved, between which nodes,
 * and the load per node on each side. Counts occurrences, so a key that appears twice in a
 * workload counts twice. Not thread-safe.
 */
public final class KeyMoves {

  private final long[] before;
  private final long[] after;
  private final long[][] flows;
  private long keys;
  private long moved;

  public KeyMoves(int nodesBefore, int nodesAfter) {
    this.before = new long[nodesBefore];
    this.after = new long[nodesAfter];
    this.flows = new long[nodesBefore][nodesAfter];
  }

  /** Records one key owned by {@code from} before and {@code to} after; true if it moved. */
  public boolean record(int from, int to) {
    before[from]++;
    after[to]++;
    flows[from][to]++;
    keys++;
    if (from != to) {
      moved++;
      return true;
    }
    return false;
  }

  public long keys() {
    return keys;
  }

  public long moved() {
    return moved;
  }

  /** Moved keys over all keys; 0 for no keys. */
  public double movedFraction() {
    return keys == 0 ? 0.0 : (double) moved / keys;
  }

  /** Keys that were on {@code from} before and are on {@code to} after. */
  public long flow(int from, int to) {
    return flows[from][to];
  }

  public LoadStats beforeStats() {
    return LoadStats.of(before);
  }

  public LoadStats afterStats() {
    return LoadStats.of(after);
  }

  /** Keys per node before the change. */
  public long[] beforeLoad() {
    return before.clone();
  }

  /** Keys per node after the change. */
  public long[] afterLoad() {
    return after.clone();
  }

  /**
   * The least fraction of keys any placement must move to stay balanced when going from
   * {@code from} to {@code to} equal nodes: {@code |to - from| / max(from, to)} (adding one node to
   * N: 1/(N+1); removing one of N: 1/N).
   */
  public static double theoreticalMinimum(int from, int to) {
    if (from < 1 || to < 1) {
      throw new IllegalArgumentException("node counts must be at least 1, not " + from + " and " + to);
    }
    return (double) Math.abs(to - from) / Math.max(from, to);
  }
}
