package io.shardwise.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import site.ycsb.Utils;
import site.ycsb.generator.AcknowledgedCounterGenerator;
import site.ycsb.generator.NumberGenerator;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.generator.SkewedLatestGenerator;
import site.ycsb.generator.UniformLongGenerator;

/**
 * The records of a run and how operations choose among them, exactly as YCSB's CoreWorkload does
 * (its own generators): key number n is named {@code user} + FNV-64(n) as 19 zero-padded digits
 * (YCSB's {@code zeropadding=19}), so names are spread evenly over the key space and sort as
 * numbers; inserts take the next numbers after the loaded records, and a key is only chosen once
 * its insert has been acknowledged.
 */
public final class KeySpace {

  /** Digits of a key's number: FNV-64 made non-negative is below 2^63, at most 19 digits. */
  public static final int DIGITS = 19;
  public static final String PREFIX = "user";

  private final long records;
  private final NumberGenerator chooser;
  private final AcknowledgedCounterGenerator inserts;

  /**
   * @param records keys loaded before the run (numbers 0…records-1)
   * @param expectedInserts inserts the run may make (sizes the zipfian's range, as YCSB does)
   */
  public KeySpace(long records, long expectedInserts, Workload.Distribution distribution) {
    if (records < 1) {
      throw new IllegalArgumentException("records must be at least 1, not " + records);
    }
    this.records = records;
    this.inserts = new AcknowledgedCounterGenerator(records);
    switch (distribution) {
      case UNIFORM:
        this.chooser = new UniformLongGenerator(0, records - 1);
        break;
      case LATEST:
        this.chooser = new SkewedLatestGenerator(inserts);
        break;
      case HOTKEY:
        this.chooser = new OneHotKey(new ScrambledZipfianGenerator(0, records + Math.max(0, expectedInserts) * 2 - 1));
        break;
      default:
        this.chooser = new ScrambledZipfianGenerator(0, records + Math.max(0, expectedInserts) * 2 - 1);
    }
  }

  /** Key number 0 for half of the choices, {@code others} for the rest: the "one key takes half the traffic". */
  private static final class OneHotKey extends NumberGenerator {
    private final NumberGenerator others;

    OneHotKey(NumberGenerator others) {
      this.others = others;
    }

    @Override
    public Number nextValue() {
      Number n = java.util.concurrent.ThreadLocalRandom.current().nextBoolean() ? Long.valueOf(0) : others.nextValue();
      setLastValue(n);
      return n;
    }

    @Override
    public double mean() {
      return others.mean() / 2;
    }
  }

  public long records() {
    return records;
  }

  /** The name of key number {@code n}. */
  public static String keyName(long n) {
    return keyName(n, false);
  }

  /**
   * The name of key number {@code n}: {@code ordered} (YCSB's {@code insertorder=ordered}) names it
   * by the number itself, so each insert's key is above every one before (a monotonic key, as a
   * timestamp or an auto-increment id is); otherwise by FNV-64 of the number ({@code hashed}).
   */
  public static String keyName(long n, boolean ordered) {
    return PREFIX + String.format(Locale.ROOT, "%0" + DIGITS + "d", ordered ? n : Utils.hash(n));
  }

  /** Split points dividing the key space into {@code shards} equal ranges. */
  public static List<String> splitPoints(int shards) {
    List<String> out = new ArrayList<>();
    for (int i = 1; i < shards; i++) {
      long bound = (long) (Long.MAX_VALUE / (double) shards * i);
      out.add(PREFIX + String.format(Locale.ROOT, "%0" + DIGITS + "d", bound));
    }
    return out;
  }

  /** A key number for a read, update or scan: one already inserted. */
  public long choose() {
    long n;
    do {
      n = chooser.nextValue().longValue();
    } while (n > inserts.lastValue());
    return n;
  }

  /** The next key number to insert; call {@link #acknowledge} once it is written. */
  public long nextInsert() {
    return inserts.nextValue();
  }

  public void acknowledge(long n) {
    inserts.acknowledge(n);
  }
}
