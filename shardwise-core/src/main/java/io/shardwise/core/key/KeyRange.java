package io.shardwise.core.key;

import java.util.Arrays;

/**
 * A half-open range {@code [start, end)} of partition keys in unsigned byte order. An empty start
 * is the smallest key; a {@code null} end means "to the end of the key space".
 *
 * <p>Immutable.
 */
public final class KeyRange {

  private static final KeyRange ALL = new KeyRange(new byte[0], null);

  private final byte[] start;
  private final byte[] end;

  private KeyRange(byte[] start, byte[] end) {
    this.start = start;
    this.end = end;
  }

  /** Every key. */
  public static KeyRange all() {
    return ALL;
  }

  /**
   * {@code [start, end)}; {@code end == null} means unbounded.
   *
   * @throws IllegalArgumentException if {@code end} is not above {@code start}
   */
  public static KeyRange of(byte[] start, byte[] end) {
    if (end != null && Arrays.compareUnsigned(start, end) >= 0) {
      throw new IllegalArgumentException(
          "range end " + ByteStrings.toDisplay(end) + " must be above its start " + ByteStrings.toDisplay(start));
    }
    return new KeyRange(start.clone(), end == null ? null : end.clone());
  }

  public byte[] start() {
    return start.clone();
  }

  /** The exclusive end, or {@code null} for unbounded. */
  public byte[] end() {
    return end == null ? null : end.clone();
  }

  public boolean contains(byte[] key) {
    return Arrays.compareUnsigned(key, start) >= 0 && (end == null || Arrays.compareUnsigned(key, end) < 0);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof KeyRange
        && Arrays.equals(start, ((KeyRange) o).start)
        && Arrays.equals(end, ((KeyRange) o).end);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(start) + Arrays.hashCode(end);
  }

  @Override
  public String toString() {
    return "[" + ByteStrings.toDisplay(start) + ", " + (end == null ? "∞" : ByteStrings.toDisplay(end)) + ")";
  }
}
