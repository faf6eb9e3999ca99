package io.shardwise.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Durations on the command line: {@code 500ms}, {@code 30s}, {@code 10m}, {@code 2h}. */
final class Durations {

  private static final Pattern FORM = Pattern.compile("([0-9]{1,9})(ms|s|m|h)");

  private Durations() {}

  /** @throws IllegalArgumentException naming the option and the accepted forms */
  static Duration parse(String option, String text) {
    Matcher m = FORM.matcher(text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException(option + " must look like 500ms, 30s, 10m or 2h, not '" + text + "'");
    }
    long n = Long.parseLong(m.group(1));
    switch (m.group(2)) {
      case "ms":
        return Duration.ofMillis(n);
      case "s":
        return Duration.ofSeconds(n);
      case "m":
        return Duration.ofMinutes(n);
      default:
        return Duration.ofHours(n);
    }
  }

  /** {@link #parse}, and within {@code [min, max]}, else a usage error naming the option and the limits. */
  static Duration parseWithin(String option, String text, Duration min, Duration max) {
    Duration d = parse(option, text);
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw new IllegalArgumentException(option + " must be between " + format(min) + " and " + format(max) + ", not " + text);
    }
    return d;
  }

  /** The shortest of the forms above that states {@code d} exactly. */
  static String format(Duration d) {
    long ms = d.toMillis();
    if (ms % 3_600_000 == 0 && ms > 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0 && ms > 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1_000 == 0) {
      return ms / 1_000 + "s";
    }
    return ms + "ms";
  }
}
