package io.shardwise.core.sim;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.util.SplitMix64;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.IllegalFormatException;
import java.util.Iterator;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.function.LongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Deterministic key generators for simulations: a printf-style pattern, and three realistic shapes
 * ({@code uuid}, {@code timestamp}, {@code zipf}). The same arguments give the same keys on every
 * machine; every random choice comes from a SplitMix64 stream seeded by the caller.
 */
public final class KeyGenerators {

  /** The built-in shapes, by the names users type. */
  public static final String BUILT_INS = "uuid, timestamp, zipf";

  /** 2026-01-01T00:00:00Z, where {@code timestamp} keys start. */
  private static final long TIMESTAMP_BASE_MILLIS = 1_767_225_600_000L;

  private static final DateTimeFormatter TIMESTAMP =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);

  private KeyGenerators() {}

  /**
   * Keys from a built-in shape name or, failing that, a printf pattern with one integer
   * conversion.
   *
   * @throws IllegalArgumentException for a pattern that does not format one integer, or a
   *     negative count
   */
  public static KeySource byName(String format, long count, long start, long seed) {
    // if/else rather than a switch: a switch on a String calls hashCode(), which the core forbids.
    if (format.equals("uuid")) {
      return uuid(count, seed);
    }
    if (format.equals("timestamp")) {
      return timestamp(count, seed);
    }
    if (format.equals("zipf")) {
      return zipf(count, 0.99, seed);
    }
    return pattern(format, count, start);
  }

  /**
   * {@code String.format(Locale.ROOT, pattern, n)} for {@code n = start .. start+count-1}: {@code
   * user-%06d} gives user-000000, user-000001, …
   */
  public static KeySource pattern(String pattern, long count, long start) {
    checkCount(count);
    try {
      String.format(Locale.ROOT, pattern, start);
    } catch (IllegalFormatException e) {
      throw new IllegalArgumentException(
          "key pattern '" + pattern + "' must format one integer, like 'user-%06d' (" + e.getMessage()
              + "), or be one of: " + BUILT_INS);
    }
    if (!pattern.contains("%")) {
      throw new IllegalArgumentException(
          "key pattern '" + pattern + "' has no conversion, so every key would be the same; use one like 'user-%06d', or one of: " + BUILT_INS);
    }
    LongFunction<String> format = integerFormat(pattern);
    return generated(pattern + " from " + start, count, i -> format.apply(start + i));
  }

  private static final Pattern SIMPLE_INTEGER = Pattern.compile("([^%]*)%(0?)([1-9][0-9]?)?d([^%]*)");

  /**
   * {@code n -> String.format(Locale.ROOT, pattern, n)}, with a fast path for the common shape
   * {@code prefix%[0][width]d suffix} and a non-negative n (a million keys format in a fraction of
   * the time); anything else goes through {@code String.format}.
   */
  static LongFunction<String> integerFormat(String pattern) {
    Matcher m = SIMPLE_INTEGER.matcher(pattern);
    if (!m.matches()) {
      return n -> String.format(Locale.ROOT, pattern, n);
    }
    String prefix = m.group(1);
    char pad = m.group(2).isEmpty() ? ' ' : '0';
    int width = m.group(3) == null ? 0 : Integer.parseInt(m.group(3));
    String suffix = m.group(4);
    return n -> {
      if (n < 0) {
        return String.format(Locale.ROOT, pattern, n);
      }
      String digits = Long.toString(n);
      StringBuilder out = new StringBuilder(prefix.length() + Math.max(width, digits.length()) + suffix.length());
      out.append(prefix);
      for (int i = digits.length(); i < width; i++) {
        out.append(pad);
      }
      return out.append(digits).append(suffix).toString();
    };
  }

  /** Random version-4 UUIDs in canonical lowercase text. */
  public static KeySource uuid(long count, long seed) {
    checkCount(count);
    return new KeySource() {
      @Override
      public Iterator<byte[]> iterator() {
        SplitMix64 random = new SplitMix64(seed);
        return limited(count, i -> {
          long hi = (random.nextLong() & ~0xf000L) | 0x4000L; // version 4
          long lo = (random.nextLong() & 0x3fffffffffffffffL) | 0x8000000000000000L; // IETF variant
          return new java.util.UUID(hi, lo).toString();
        });
      }

      @Override
      public String description() {
        return "uuid (seed " + seed + ")";
      }
    };
  }

  /**
   * Monotonically increasing timestamps from 2026-01-01T00:00:00.000Z, 1 to 1000 ms apart, as
   * {@code uuuu-MM-dd'T'HH:mm:ss.SSS'Z'} text: the shape that makes a range table's last shard hot.
   */
  public static KeySource timestamp(long count, long seed) {
    checkCount(count);
    return new KeySource() {
      @Override
      public Iterator<byte[]> iterator() {
        SplitMix64 random = new SplitMix64(seed);
        long[] now = {TIMESTAMP_BASE_MILLIS};
        return limited(count, i -> {
          now[0] += 1 + random.nextInt(1000);
          return TIMESTAMP.format(Instant.ofEpochMilli(now[0]));
        });
      }

      @Override
      public String description() {
        return "timestamp (seed " + seed + ")";
      }
    };
  }

  /**
   * {@code count} draws of {@code item-%08d} from a Zipfian distribution over {@code count} items
   * with constant {@code theta} (YCSB uses 0.99): item 0 is the most popular, and keys repeat, so
   * the load per node shows what hot keys do. The sampler is Gray et al., "Quickly Generating
   * Billion-Record Synthetic Databases" (SIGMOD 1994), as in YCSB's ZipfianGenerator.
   */
  public static KeySource zipf(long count, double theta, long seed) {
    checkCount(count);
    if (!(theta > 0 && theta < 1)) {
      throw new IllegalArgumentException("zipf constant must be in (0, 1), not " + theta);
    }
    long items = Math.max(count, 2);
    double zetan = 0;
    for (long i = 1; i <= items; i++) {
      zetan += 1 / Math.pow(i, theta);
    }
    double zeta2 = 1 + 1 / Math.pow(2, theta);
    double alpha = 1 / (1 - theta);
    double eta = (1 - Math.pow(2.0 / items, 1 - theta)) / (1 - zeta2 / zetan);
    double half = 1 + Math.pow(0.5, theta);
    double zn = zetan;
    return new KeySource() {
      @Override
      public Iterator<byte[]> iterator() {
        SplitMix64 random = new SplitMix64(seed);
        return limited(count, i -> {
          double u = (random.nextLong() >>> 11) * 0x1.0p-53;
          double uz = u * zn;
          long item;
          if (uz < 1) {
            item = 0;
          } else if (uz < half) {
            item = 1;
          } else {
            item = Math.min(items - 1, (long) (items * Math.pow(eta * u - eta + 1, alpha)));
          }
          return String.format(Locale.ROOT, "item-%08d", item);
        });
      }

      @Override
      public String description() {
        return "zipf " + theta + " over " + items + " items (seed " + seed + ")";
      }
    };
  }

  private static void checkCount(long count) {
    if (count < 0) {
      throw new IllegalArgumentException("key count must not be negative, not " + count);
    }
  }

  private static KeySource generated(String description, long count, LongFunction<String> key) {
    return new KeySource() {
      @Override
      public Iterator<byte[]> iterator() {
        return limited(count, key);
      }

      @Override
      public String description() {
        return description;
      }
    };
  }

  private static Iterator<byte[]> limited(long count, LongFunction<String> key) {
    return new Iterator<>() {
      private long next;

      @Override
      public boolean hasNext() {
        return next < count;
      }

      @Override
      public byte[] next() {
        if (next >= count) {
          throw new NoSuchElementException();
        }
        return ByteStrings.utf8(key.apply(next++));
      }
    };
  }
}
