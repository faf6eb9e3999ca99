package io.shardwise.core.util;

import java.util.Locale;

/** Byte counts as people read them: {@code 512 B}, {@code 70.3 MiB}. The one such formatter. */
public final class Bytes {

  private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB"};

  private Bytes() {}

  /** {@code value} bytes in the largest binary unit that keeps it at 1 or more, to one decimal. */
  public static String human(double value) {
    int i = 0;
    double v = value;
    while (Math.abs(v) >= 1024 && i < UNITS.length - 1) {
      v /= 1024;
      i++;
    }
    return i == 0 ? String.format(Locale.ROOT, "%,.0f B", v) : String.format(Locale.ROOT, "%.1f %s", v, UNITS[i]);
  }
}
