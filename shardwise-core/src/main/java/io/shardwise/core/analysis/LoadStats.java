package io.shardwise.core.analysis;

/**
 * How evenly load (keys, bytes or requests) is spread over nodes: min, max, mean, population
 * standard deviation and peak-to-average ratio ({@code max / mean}; 1.0 is perfect balance).
 */
public record LoadStats(long min, long max, double mean, double stddev, double peakToAverage) {

  /**
   * Statistics of {@code perNode}, one entry per node.
   *
   * @throws IllegalArgumentException for no nodes
   */
  public static LoadStats of(long[] perNode) {
    if (perNode.length == 0) {
      throw new IllegalArgumentException("load statistics need at least one node");
    }
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    double sum = 0;
    for (long v : perNode) {
      min = Math.min(min, v);
      max = Math.max(max, v);
      sum += v;
    }
    double mean = sum / perNode.length;
    double squares = 0;
    for (long v : perNode) {
      squares += (v - mean) * (v - mean);
    }
    double stddev = Math.sqrt(squares / perNode.length);
    return new LoadStats(min, max, mean, stddev, mean == 0 ? 1.0 : max / mean);
  }
}
