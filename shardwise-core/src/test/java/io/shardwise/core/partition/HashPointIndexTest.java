package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** The prefix index answers exactly what a plain binary search answers, for any values. */
class HashPointIndexTest {

  @Property(tries = 500, seed = "20261129")
  void lowerBoundEqualsALinearScan(
      @ForAll @Size(max = 300) List<Long> raw, @ForAll @Size(min = 1, max = 50) List<Long> probes, @ForAll @IntRange(min = 1, max = 64) int bits) {
    long mask = bits == 64 ? -1L : (1L << bits) - 1;
    long[] flipped = raw.stream().mapToLong(v -> (v & mask) ^ Long.MIN_VALUE).sorted().toArray();
    HashPointIndex index = new HashPointIndex(flipped, bits);
    for (long probe : probes) {
      for (long key : new long[] {probe & mask, 0, mask}) {
        int expected = 0;
        while (expected < flipped.length && Long.compareUnsigned(flipped[expected] ^ Long.MIN_VALUE, key) < 0) {
          expected++;
        }
        assertThat(index.lowerBound(key)).as("key %s in %s", Long.toUnsignedString(key), Arrays.toString(flipped)).isEqualTo(expected);
      }
    }
  }

  @Property(tries = 200, seed = "20261129")
  void crowdedBucketsStillAnswerExactly(@ForAll @IntRange(min = 1, max = 2000) int count, @ForAll long probe) {
    // Many values sharing one prefix: the binary-search fallback inside a bucket.
    long[] flipped = new long[count];
    for (int i = 0; i < count; i++) {
      flipped[i] = (0x7000_0000_0000_0000L + i * 3L) ^ Long.MIN_VALUE;
    }
    HashPointIndex index = new HashPointIndex(flipped, 64);
    long key = 0x7000_0000_0000_0000L + Long.remainderUnsigned(probe, 3L * count + 5);
    int expected = 0;
    while (expected < count && (flipped[expected] ^ Long.MIN_VALUE) < key) {
      expected++;
    }
    assertThat(index.lowerBound(key)).isEqualTo(expected);
  }
}
