package io.shardwise.core.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class KeyTest {

  @Provide
  Arbitrary<byte[]> bytes() {
    // Small alphabets that include 0x00, 0x01 and 0xff make escapes and prefixes common.
    return Arbitraries.of((byte) 0x00, (byte) 0x01, (byte) 0x02, (byte) 0x7f, (byte) 0x80, (byte) 0xff)
        .array(byte[].class)
        .ofMaxSize(6);
  }

  @Property(tries = 2000, seed = "20261129")
  void encodingPreservesOrder(
      @ForAll("bytes") byte[] p1, @ForAll("bytes") byte[] s1, @ForAll("bytes") byte[] p2, @ForAll("bytes") byte[] s2) {
    Key a = Key.of(p1, s1);
    Key b = Key.of(p2, s2);
    assertThat(Integer.signum(Arrays.compareUnsigned(a.encode(), b.encode())))
        .isEqualTo(Integer.signum(a.compareTo(b)));
  }

  @Property(tries = 1000, seed = "20261129")
  void decodeInvertsEncode(@ForAll("bytes") byte[] p, @ForAll("bytes") byte[] s) {
    Key key = Key.of(p, s);
    assertThat(Key.decode(key.encode())).isEqualTo(key);
  }

  @Property(tries = 1000, seed = "20261129")
  void aPartitionIsContiguous(
      @ForAll("bytes") byte[] partition, @ForAll("bytes") byte[] s1, @ForAll("bytes") byte[] s2,
      @ForAll("bytes") byte[] otherPartition, @ForAll("bytes") byte[] otherSort) {
    // Any key of another partition sorts outside [min(s1,s2), max(s1,s2)] of this partition.
    byte[] lo = Key.of(partition, s1).encode();
    byte[] hi = Key.of(partition, s2).encode();
    if (Arrays.compareUnsigned(lo, hi) > 0) {
      byte[] t = lo;
      lo = hi;
      hi = t;
    }
    if (Arrays.equals(partition, otherPartition)) {
      return;
    }
    byte[] other = Key.of(otherPartition, otherSort).encode();
    boolean inside = Arrays.compareUnsigned(other, lo) >= 0 && Arrays.compareUnsigned(other, hi) <= 0;
    assertThat(inside).isFalse();
  }

  @Property(tries = 2000, seed = "20261129")
  void partitionBoundsSeparatePartitionsExactly(
      @ForAll("bytes") byte[] bound, @ForAll("bytes") byte[] partition, @ForAll("bytes") byte[] sort) {
    byte[] encoded = Key.of(partition, sort).encode();
    boolean below = Arrays.compareUnsigned(partition, bound) < 0;
    assertThat(Arrays.compareUnsigned(encoded, Key.encodedLowerBound(bound)) < 0).isEqualTo(below);
    boolean samePartition = Arrays.equals(partition, bound);
    boolean insideEnd = Arrays.compareUnsigned(encoded, Key.encodedPartitionEnd(bound)) < 0;
    assertThat(insideEnd).isEqualTo(below || samePartition);
  }

  @Test
  void orderedLongsSortNumerically() {
    long[] values = {Long.MIN_VALUE, -1_000_000, -1, 0, 1, 255, 256, Long.MAX_VALUE};
    for (int i = 1; i < values.length; i++) {
      assertThat(Arrays.compareUnsigned(Key.orderedLong(values[i - 1]), Key.orderedLong(values[i]))).isNegative();
    }
    for (long v : values) {
      assertThat(Key.decodeOrderedLong(Key.orderedLong(v))).isEqualTo(v);
    }
    assertThat(Key.of("user", 5).compareTo(Key.of("user", -5))).isPositive();
  }

  @Test
  void emptySortKeyMeansNoSortKeyAndSortsFirst() {
    assertThat(Key.of("a").hasSortKey()).isFalse();
    assertThat(Key.of("a").compareTo(Key.of("a", "x"))).isNegative();
    assertThat(Key.of("a", "x").compareTo(Key.of("ab"))).isNegative();
  }

  @Test
  void malformedEncodingsAreRejected() {
    assertThatThrownBy(() -> Key.decode(new byte[] {'a'})).hasMessageContaining("no partition-key terminator");
    assertThatThrownBy(() -> Key.decode(new byte[] {'a', 0})).hasMessageContaining("ends inside an escape");
    assertThatThrownBy(() -> Key.decode(new byte[] {'a', 0, 5})).hasMessageContaining("invalid escape");
  }

  @Test
  void keysAreCopiedInAndOut() {
    byte[] p = {1, 2};
    Key key = Key.of(p);
    p[0] = 9;
    key.partitionKey()[1] = 9;
    assertThat(key.partitionKey()).containsExactly(1, 2);
  }

  @Test
  void keyRangesAreHalfOpen() {
    KeyRange r = KeyRange.of(ByteStrings.utf8("b"), ByteStrings.utf8("d"));
    assertThat(r.contains(ByteStrings.utf8("b"))).isTrue();
    assertThat(r.contains(ByteStrings.utf8("c\u00ff"))).isTrue();
    assertThat(r.contains(ByteStrings.utf8("d"))).isFalse();
    assertThat(r.contains(ByteStrings.utf8("a"))).isFalse();
    assertThat(KeyRange.all().contains(new byte[0])).isTrue();
    assertThatThrownBy(() -> KeyRange.of(ByteStrings.utf8("d"), ByteStrings.utf8("b")))
        .hasMessageContaining("must be above its start");
  }
}
