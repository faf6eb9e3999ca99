package io.shardwise.core.doc;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Indexed values as bytes whose unsigned order is the values' order, kind by kind, so that an
 * index's entries {@code [value][row key]} lie in value order and one seek finds a value:
 *
 * <pre>
 *   null     0x01
 *   false    0x02
 *   true     0x03
 *   number   0x04 [8 bytes: the double, sign-flipped]   (numbers compare by value: 1 = 1.0)
 *   string   0x05 [UTF-8, 0x00 as 0x00 0xff] 0x00 0x01
 * </pre>
 *
 * Every encoding is self-delimiting (none is a prefix of another), so an entry's row key starts
 * where its value ends. Numbers are kept as doubles: two numbers closer than a double tells apart
 * share an entry value, so an index finds a superset of the matching rows and a query checks each
 * row against its condition before it answers (it always does).
 */
public final class IndexValues {

  private IndexValues() {}

  static final byte NULL = 0x01;
  static final byte FALSE = 0x02;
  static final byte TRUE = 0x03;
  static final byte NUMBER = 0x04;
  static final byte STRING = 0x05;

  /** A literal as {@link Where} holds it: a String, a BigDecimal, a Boolean or {@link Where#NULL}. */
  public static byte[] encode(Object literal) {
    if (literal == Where.NULL) {
      return new byte[] {NULL};
    }
    if (literal instanceof Boolean b) {
      return new byte[] {b ? TRUE : FALSE};
    }
    if (literal instanceof BigDecimal n) {
      return number(n.doubleValue());
    }
    if (literal instanceof String s) {
      return string(s);
    }
    throw new IllegalArgumentException("an indexed value is a string, a number, a boolean or null, not " + literal);
  }

  /** A number's encoding. */
  public static byte[] number(double d) {
    if (Double.isNaN(d)) {
      throw new IllegalArgumentException("NaN is not a document's number");
    }
    long bits = Double.doubleToLongBits(d == 0.0 ? 0.0 : d); // -0.0 is 0
    bits = bits < 0 ? ~bits : bits ^ Long.MIN_VALUE;
    byte[] out = new byte[9];
    out[0] = NUMBER;
    for (int i = 0; i < 8; i++) {
      out[1 + i] = (byte) (bits >>> (56 - 8 * i));
    }
    return out;
  }

  /** A string's encoding. */
  public static byte[] string(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    int zeros = 0;
    for (byte b : utf8) {
      zeros += b == 0 ? 1 : 0;
    }
    byte[] out = new byte[utf8.length + zeros + 3];
    int n = 0;
    out[n++] = STRING;
    for (byte b : utf8) {
      out[n++] = b;
      if (b == 0) {
        out[n++] = (byte) 0xff;
      }
    }
    out[n++] = 0;
    out[n] = 1;
    return out;
  }

  /**
   * Where the encoded value that starts at {@code from} in {@code key} ends (exclusive), or -1 if
   * the bytes there are not one.
   */
  public static int end(byte[] key, int from) {
    if (from >= key.length) {
      return -1;
    }
    switch (key[from]) {
      case NULL:
      case FALSE:
      case TRUE:
        return from + 1;
      case NUMBER:
        return from + 9 <= key.length ? from + 9 : -1;
      case STRING:
        for (int i = from + 1; i + 1 < key.length; i++) {
          if (key[i] == 0) {
            if (key[i + 1] == 1) {
              return i + 2;
            }
            i++; // 0x00 0xff: an escaped zero
          }
        }
        return -1;
      default:
        return -1;
    }
  }

  /**
   * The encoded values a comparison {@code op literal} may hold for, as an inclusive range {@code
   * [low, high]} of encodings read as prefixes (a value v is in it when {@code low <= enc(v)} and
   * {@code enc(v) <= high} or starts with it): like with like, so {@code < 10} spans the numbers
   * below 10, never strings. Null for {@code !=}, which no index range serves (it holds for missing
   * fields too). Bounds are inclusive even for {@code <} and {@code >}: numbers are doubles here.
   */
  public static Range range(Where.Op op, Object literal) {
    byte[] v = encode(literal);
    boolean bool = v[0] == FALSE || v[0] == TRUE; // one kind, two tags: false < true
    byte[] kindStart = {bool ? FALSE : v[0]};
    byte[] kindEnd = {(byte) ((bool ? TRUE : v[0]) + 1)};
    switch (op) {
      case EQ:
        return new Range(v, v, true);
      case LT:
      case LE:
        return new Range(kindStart, v, true);
      case GT:
      case GE:
        return new Range(v, kindEnd, false);
      default:
        return null;
    }
  }

  /**
   * Encoded values from {@code low} on, up to {@code high}: with {@code highInclusive} every
   * encoding that is at most {@code high} or starts with it, else those below {@code high}.
   */
  public record Range(byte[] low, byte[] high, boolean highInclusive) {

    /** The range within both: values in this one and in {@code other}. */
    public Range intersect(Range other) {
      byte[] lo = Arrays.compareUnsigned(low, other.low) >= 0 ? low : other.low;
      int c = Arrays.compareUnsigned(high, other.high);
      if (c == 0) {
        return new Range(lo, high, highInclusive && other.highInclusive);
      }
      return c < 0 ? new Range(lo, high, highInclusive) : new Range(lo, other.high, other.highInclusive);
    }

    /** The first key past the range, in a keyspace of {@code prefix + encoding + anything}. */
    public byte[] endKey(byte[] prefix) {
      byte[] h = concat(prefix, high);
      return highInclusive ? successor(h) : h;
    }

    public byte[] startKey(byte[] prefix) {
      return concat(prefix, low);
    }
  }

  /** The first byte string after every string that starts with {@code prefix}. */
  public static byte[] successor(byte[] prefix) {
    byte[] out = prefix.clone();
    for (int i = out.length - 1; i >= 0; i--) {
      if (out[i] != (byte) 0xff) {
        out[i]++;
        return Arrays.copyOf(out, i + 1);
      }
    }
    throw new IllegalArgumentException("no key follows a run of 0xff bytes");
  }

  public static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
