package io.shardwise.core.key;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A row key: a partition key plus an optional sort key, both byte strings.
 *
 * <p>Only the partition key decides the shard: it is what hash strategies hash and what range
 * strategies compare. Rows that share a partition key are ordered by sort key, so a sort-key range
 * within one partition is one contiguous run of the {@linkplain #encode() encoded} keys, on one
 * shard (DynamoDB's partition key + sort key).
 *
 * <p>Byte strings compare as unsigned bytes, lexicographically. An empty sort key means "no sort
 * key" and sorts before every other sort key of the same partition.
 *
 * <p>Immutable and thread-safe; the arrays are copied in and out.
 */
public final class Key implements Comparable<Key> {

  /** Escape byte inside an encoded partition key. */
  private static final byte ESCAPE = 0x00;
  /** Follows {@link #ESCAPE} for a literal 0x00 byte of the partition key. */
  private static final byte ESCAPED_ZERO = (byte) 0xff;
  /** Follows {@link #ESCAPE} to end the partition key. Sorts below {@link #ESCAPED_ZERO}. */
  private static final byte TERMINATOR = 0x01;

  private static final byte[] EMPTY = new byte[0];

  private final byte[] partitionKey;
  private final byte[] sortKey;

  private Key(byte[] partitionKey, byte[] sortKey) {
    this.partitionKey = partitionKey;
    this.sortKey = sortKey;
  }

  /** A key with no sort key. */
  public static Key of(byte[] partitionKey) {
    return of(partitionKey, EMPTY);
  }

  /** A key of a partition key and a sort key (empty for none). */
  public static Key of(byte[] partitionKey, byte[] sortKey) {
    return new Key(partitionKey.clone(), sortKey.clone());
  }

  /** A key whose partition key is the UTF-8 encoding of {@code partitionKey}. */
  public static Key of(String partitionKey) {
    return new Key(utf8(partitionKey), EMPTY);
  }

  /** A key of two UTF-8 strings. */
  public static Key of(String partitionKey, String sortKey) {
    return new Key(utf8(partitionKey), utf8(sortKey));
  }

  /** A key of a UTF-8 partition key and a numeric sort key that sorts in numeric order. */
  public static Key of(String partitionKey, long sortKey) {
    return new Key(utf8(partitionKey), orderedLong(sortKey));
  }

  /**
   * The 8-byte encoding of {@code value} whose unsigned byte order is the signed numeric order:
   * big-endian with the sign bit flipped.
   */
  public static byte[] orderedLong(long value) {
    long flipped = value ^ Long.MIN_VALUE;
    byte[] out = new byte[8];
    for (int i = 7; i >= 0; i--) {
      out[i] = (byte) flipped;
      flipped >>>= 8;
    }
    return out;
  }

  /** The inverse of {@link #orderedLong(long)}. */
  public static long decodeOrderedLong(byte[] bytes) {
    if (bytes.length != 8) {
      throw new IllegalArgumentException("an ordered long is 8 bytes, not " + bytes.length);
    }
    long value = 0;
    for (byte b : bytes) {
      value = (value << 8) | (b & 0xff);
    }
    return value ^ Long.MIN_VALUE;
  }

  public byte[] partitionKey() {
    return partitionKey.clone();
  }

  public byte[] sortKey() {
    return sortKey.clone();
  }

  public boolean hasSortKey() {
    return sortKey.length > 0;
  }

  /**
   * The order-preserving encoding: the partition key with every 0x00 written as 0x00 0xFF, then the
   * terminator 0x00 0x01, then the sort key as is.
   *
   * <p>For any keys a and b, {@code compareUnsigned(a.encode(), b.encode())} has the sign of
   * {@code a.compareTo(b)}, and all keys of one partition key are contiguous, so a sort-key range
   * of one partition is a single contiguous range of encoded keys.
   */
  public byte[] encode() {
    int zeros = 0;
    for (byte b : partitionKey) {
      if (b == ESCAPE) {
        zeros++;
      }
    }
    byte[] out = new byte[partitionKey.length + zeros + 2 + sortKey.length];
    int at = 0;
    for (byte b : partitionKey) {
      out[at++] = b;
      if (b == ESCAPE) {
        out[at++] = ESCAPED_ZERO;
      }
    }
    out[at++] = ESCAPE;
    out[at++] = TERMINATOR;
    System.arraycopy(sortKey, 0, out, at, sortKey.length);
    return out;
  }

  /**
   * The smallest encoded key of any partition key at or above {@code partitionKey}: every key whose
   * partition key is below it encodes below this, every other key at or above. Scan bound for
   * partition-key ranges.
   */
  public static byte[] encodedLowerBound(byte[] partitionKey) {
    byte[] full = Key.of(partitionKey).encode();
    return Arrays.copyOf(full, full.length - 2); // the escaped partition key, without its terminator
  }

  /** Just above every encoded key of {@code partitionKey}, below every key of a later partition. */
  public static byte[] encodedPartitionEnd(byte[] partitionKey) {
    byte[] full = Key.of(partitionKey).encode();
    full[full.length - 1] = TERMINATOR + 1;
    return full;
  }

  /**
   * Decodes {@link #encode()}'s output.
   *
   * @throws IllegalArgumentException if {@code encoded} is not such an encoding
   */
  public static Key decode(byte[] encoded) {
    byte[] partition = new byte[encoded.length];
    int length = 0;
    for (int i = 0; i < encoded.length; i++) {
      byte b = encoded[i];
      if (b != ESCAPE) {
        partition[length++] = b;
        continue;
      }
      if (i + 1 >= encoded.length) {
        throw new IllegalArgumentException("encoded key ends inside an escape at byte " + i);
      }
      byte next = encoded[++i];
      if (next == ESCAPED_ZERO) {
        partition[length++] = ESCAPE;
      } else if (next == TERMINATOR) {
        return new Key(
            Arrays.copyOf(partition, length), Arrays.copyOfRange(encoded, i + 1, encoded.length));
      } else {
        throw new IllegalArgumentException(
            "encoded key has an invalid escape 0x00 0x"
                + Integer.toHexString(next & 0xff)
                + " at byte "
                + (i - 1));
      }
    }
    throw new IllegalArgumentException("encoded key has no partition-key terminator");
  }

  /** Partition key first, then sort key; unsigned lexicographic byte order. */
  @Override
  public int compareTo(Key other) {
    int c = Arrays.compareUnsigned(partitionKey, other.partitionKey);
    return c != 0 ? c : Arrays.compareUnsigned(sortKey, other.sortKey);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Key
        && Arrays.equals(partitionKey, ((Key) o).partitionKey)
        && Arrays.equals(sortKey, ((Key) o).sortKey);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(partitionKey) + Arrays.hashCode(sortKey);
  }

  @Override
  public String toString() {
    return hasSortKey()
        ? ByteStrings.toDisplay(partitionKey) + "/" + ByteStrings.toDisplay(sortKey)
        : ByteStrings.toDisplay(partitionKey);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
