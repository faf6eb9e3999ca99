package io.shardwise.bench;

import java.util.Locale;

/**
 * One of YCSB's core workloads: the mix of operations and the default request distribution, as in
 * YCSB's {@code workloads/workloada}…{@code workloadf} files.
 *
 * @param name a to f
 * @param read fraction of reads
 * @param update fraction of updates (a whole value written over an existing key)
 * @param insert fraction of inserts (new keys, after the loaded ones)
 * @param scan fraction of short scans (a start key and 1…{@link #MAX_SCAN_LENGTH} rows in key order)
 * @param readModifyWrite fraction of read-then-update of one key
 * @param increment fraction of increments of a counter (the rest of workload k reads counters)
 */
public record Workload(String name, double read, double update, double insert, double scan, double readModifyWrite,
    double increment, Distribution defaultDistribution, String description) {

  /** Rows of a scan, at most (YCSB's {@code maxscanlength}); the length is uniform in 1…this. */
  public static final int MAX_SCAN_LENGTH = 100;

  public static final Workload A = new Workload("a", 0.5, 0.5, 0, 0, 0, 0, Distribution.ZIPFIAN, "update heavy: 50% read, 50% update");
  public static final Workload B = new Workload("b", 0.95, 0.05, 0, 0, 0, 0, Distribution.ZIPFIAN, "read mostly: 95% read, 5% update");
  public static final Workload C = new Workload("c", 1.0, 0, 0, 0, 0, 0, Distribution.ZIPFIAN, "read only");
  public static final Workload D = new Workload("d", 0.95, 0, 0.05, 0, 0, 0, Distribution.LATEST, "read latest: 95% read, 5% insert");
  public static final Workload E = new Workload("e", 0, 0, 0.05, 0.95, 0, 0, Distribution.ZIPFIAN, "short scans: 95% scan, 5% insert");
  public static final Workload F = new Workload("f", 0.5, 0, 0, 0, 0.5, 0, Distribution.ZIPFIAN, "read-modify-write: 50% read, 50% RMW");
  /**
   * Not one of YCSB's: counters. Each loaded key has a counter beside it ({@link Target#increment});
   * 90% of operations add to one, 10% read one ({@link OpType#COUNTER_READ}).
   */
  public static final Workload K = new Workload("k", 0, 0, 0, 0, 0, 0.9, Distribution.ZIPFIAN,
      "counters: 90% increment, 10% counter read (not YCSB's)");

  /** How keys are chosen for reads, updates and scans. */
  public enum Distribution {
    /** YCSB's scrambled zipfian, constant 0.99: a few hot keys, spread over the key space. */
    ZIPFIAN,
    UNIFORM,
    /** Recently inserted keys are the most popular (YCSB's skewed latest). */
    LATEST,
    /** One celebrity key (key number 0) takes half of the operations; the other half is zipfian. */
    HOTKEY;

    public static Distribution byName(String name) {
      for (Distribution d : values()) {
        if (d.name().equalsIgnoreCase(name)) {
          return d;
        }
      }
      throw new IllegalArgumentException("unknown distribution '" + name + "'; valid: zipfian, uniform, latest, hotkey");
    }

    public String id() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public static Workload byName(String name) {
    switch (name.toLowerCase(Locale.ROOT)) {
      case "a": return A;
      case "b": return B;
      case "c": return C;
      case "d": return D;
      case "e": return E;
      case "f": return F;
      case "k": return K;
      default: throw new IllegalArgumentException("unknown workload '" + name + "'; valid: a, b, c, d, e, f, k");
    }
  }

  /** The operation a uniform draw {@code u} in [0, 1) picks. */
  OpType pick(double u) {
    double at = read;
    if (u < at) {
      return OpType.READ;
    }
    at += update;
    if (u < at) {
      return OpType.UPDATE;
    }
    at += insert;
    if (u < at) {
      return OpType.INSERT;
    }
    at += scan;
    if (u < at) {
      return OpType.SCAN;
    }
    at += increment;
    if (u < at) {
      return OpType.INCREMENT;
    }
    return counters() ? OpType.COUNTER_READ : OpType.READ_MODIFY_WRITE;
  }

  /** Whether this workload works on counters (and a target must have them). */
  public boolean counters() {
    return increment > 0;
  }
}
