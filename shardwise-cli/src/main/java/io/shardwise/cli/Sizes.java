package io.shardwise.cli;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Byte sizes as options take them: {@code 512MiB}, {@code 64KiB}, {@code 2GiB}, {@code 1048576} (bytes). */
final class Sizes {

  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(B|KiB|MiB|GiB|TiB)?");

  private Sizes() {}

  /**
   * The bytes {@code text} names.
   *
   * @throws IllegalArgumentException naming {@code option} and the accepted forms
   */
  static long parse(String option, String text) {
    Matcher m = SIZE.matcher(text.strip());
    if (!m.matches()) {
      throw new IllegalArgumentException(option + " takes a size such as 512MiB, 64KiB, 2GiB or a number of bytes, not '" + text + "'");
    }
    int shift = switch (m.group(2) == null ? "B" : m.group(2)) {
      case "KiB" -> 10;
      case "MiB" -> 20;
      case "GiB" -> 30;
      case "TiB" -> 40;
      default -> 0;
    };
    try {
      long n = Long.parseLong(m.group(1));
      if (n > (Long.MAX_VALUE >> shift)) {
        throw new NumberFormatException();
      }
      return n << shift;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " is too large: '" + text + "'");
    }
  }

  /** {@code bytes} for reading: 512 MiB, 64 KiB, 1,000 B. */
  static String format(long bytes) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    long n = bytes;
    while (unit < units.length - 1 && n >= 1024 && n % 1024 == 0) {
      n /= 1024;
      unit++;
    }
    return String.format(Locale.ROOT, "%,d %s", n, units[unit]);
  }
}
