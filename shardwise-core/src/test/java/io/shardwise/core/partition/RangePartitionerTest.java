package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.key.KeyRange;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class RangePartitionerTest {

  private static final List<byte[]> SPLITS = List.of(utf8("f"), utf8("m"), utf8("m\u0000"), utf8("t"));

  @Test
  void lookupsAreRightAtJustBelowAndJustAboveEveryBoundary() {
    RangePartitioner p = RangePartitioner.of(SPLITS, 5);
    for (int i = 0; i < SPLITS.size(); i++) {
      byte[] split = SPLITS.get(i);
      assertThat(p.shardFor(split)).as("at split %d", i).isEqualTo(i + 1);
      byte[] above = append(split, (byte) 0x00);
      // "m" and "m\0" are adjacent split points: the key just above "m" starts the next shard.
      boolean aboveIsNextSplit = i + 1 < SPLITS.size() && Arrays.equals(above, SPLITS.get(i + 1));
      assertThat(p.shardFor(above)).as("just above split %d", i).isEqualTo(aboveIsNextSplit ? i + 2 : i + 1);
      assertThat(p.shardFor(justBelow(split))).as("just below split %d", i).isEqualTo(i);
    }
    assertThat(p.shardFor(new byte[0])).isZero();
    assertThat(p.shardFor(new byte[] {(byte) 0xff, (byte) 0xff})).isEqualTo(4);
  }

  /** The greatest key below {@code key} that is at most {@code key.length + 3} bytes long. */
  private static byte[] justBelow(byte[] key) {
    byte last = key[key.length - 1];
    if (last == 0) {
      return Arrays.copyOf(key, key.length - 1); // "m\0" -> "m": nothing lies between them
    }
    byte[] below = Arrays.copyOf(key, key.length + 3);
    below[key.length - 1] = (byte) (last - 1);
    Arrays.fill(below, key.length, below.length, (byte) 0xff);
    return below;
  }

  @Provide
  Arbitrary<byte[]> keys() {
    return Arbitraries.bytes().between((byte) 0x00, (byte) 0x03).array(byte[].class).ofMaxSize(4);
  }

  @Property(tries = 500, seed = "20261129")
  void lookupEqualsCountingSplitPointsAtOrBelow(@ForAll List<@net.jqwik.api.constraints.Size(min = 1, max = 4) byte[]> raw, @ForAll("keys") byte[] probe) {
    TreeSet<byte[]> sorted = new TreeSet<>(Arrays::compareUnsigned);
    sorted.addAll(raw);
    List<byte[]> splits = new ArrayList<>(sorted);
    RangePartitioner p = RangePartitioner.of(splits, 3);
    long atOrBelow = splits.stream().filter(s -> Arrays.compareUnsigned(s, probe) <= 0).count();
    assertThat(p.shardFor(probe)).isEqualTo((int) atOrBelow);
    assertThat(p.rangeOf(p.shardFor(probe)).contains(probe)).isTrue();
  }

  @Property(tries = 500, seed = "20261129")
  void shardsForTouchesExactlyTheOverlappingShards(@ForAll("keys") byte[] a, @ForAll("keys") byte[] b, @ForAll boolean unbounded) {
    RangePartitioner p = RangePartitioner.of(List.of(new byte[] {1}, new byte[] {1, 2}, new byte[] {2}, new byte[] {3, 0}), 2);
    if (!unbounded && Arrays.compareUnsigned(a, b) >= 0) {
      return;
    }
    KeyRange range = KeyRange.of(a, unbounded ? null : b);
    ShardSpan span = p.shardsFor(range);
    for (int s = 0; s < p.shardCount(); s++) {
      KeyRange shard = p.rangeOf(s);
      boolean overlaps =
          (shard.end() == null || Arrays.compareUnsigned(a, shard.end()) < 0)
              && (range.end() == null || Arrays.compareUnsigned(shard.start(), range.end()) < 0);
      assertThat(s >= span.first() && s <= span.last()).as("shard %d of %s", s, range).isEqualTo(overlaps);
    }
  }

  @Test
  void badSplitPointsAreRejectedByName() {
    assertThatThrownBy(() -> RangePartitioner.of(List.of(utf8("m"), utf8("f")), 2))
        .hasMessage("split points are not sorted: 'm' comes before 'f'");
    assertThatThrownBy(() -> RangePartitioner.of(List.of(utf8("f"), utf8("f")), 2))
        .hasMessage("duplicate split point 'f'");
    assertThatThrownBy(() -> RangePartitioner.of(List.of(new byte[0]), 2)).hasMessageContaining("is empty");
  }

  @Test
  void preSplittingFromASampleMakesRoughlyEqualShards() {
    List<byte[]> keys = TestKeys.users(10_000);
    RangePartitioner p = RangePartitioner.preSplit(TestKeys.sampleOf(keys, HashFunctions.murmur3_128()), 8, 8);
    int[] perShard = new int[8];
    keys.forEach(k -> perShard[p.shardFor(k)]++);
    for (int count : perShard) {
      assertThat(count).isBetween(1_200, 1_300);
    }
  }

  @Test
  void preSplittingNeedsEnoughDistinctKeys() {
    KeySample.Builder b = KeySample.builder(10, 1, HashFunctions.murmur3_128());
    for (int i = 0; i < 10; i++) {
      b.add(utf8("same"));
    }
    assertThatThrownBy(() -> RangePartitioner.preSplit(b.build(), 3, 3)).hasMessageContaining("too few distinct keys");
  }

  @Test
  void growingSplitsTheBiggestShardAtItsMedianKey() {
    List<byte[]> keys = TestKeys.users(1_000);
    KeySample sample = TestKeys.sampleOf(keys, HashFunctions.murmur3_128());
    RangePartitioner p = RangePartitioner.of(List.of(utf8("user-000100")), 2); // shard 1 holds 900 keys
    RangePartitioner grown = p.withNodeCount(3, sample);
    assertThat(grown.splitPoints()).extracting(ByteStrings::toDisplay).containsExactly("user-000100", "user-000550");
    assertThat(grown.nodeOfShard(2)).isEqualTo(2);
    RangePartitioner shrunk = grown.withNodeCount(2, sample);
    assertThat(shrunk.splitPoints()).extracting(ByteStrings::toDisplay).containsExactly("user-000100");
  }

  private static byte[] utf8(String s) {
    return ByteStrings.utf8(s);
  }

  private static byte[] append(byte[] key, byte b) {
    byte[] out = Arrays.copyOf(key, key.length + 1);
    out[key.length] = b;
    return out;
  }
}
