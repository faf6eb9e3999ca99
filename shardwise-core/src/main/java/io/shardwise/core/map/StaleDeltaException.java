package io.shardwise.core.map;

/** A delta computed against one map epoch was applied to another: re-read the map and re-plan. */
public final class StaleDeltaException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final long deltaEpoch;
  private final long mapEpoch;

  public StaleDeltaException(long deltaEpoch, long mapEpoch) {
    super("delta was computed against map epoch " + deltaEpoch + " but the map is at epoch " + mapEpoch);
    this.deltaEpoch = deltaEpoch;
    this.mapEpoch = mapEpoch;
  }

  public long deltaEpoch() {
    return deltaEpoch;
  }

  public long mapEpoch() {
    return mapEpoch;
  }
}
