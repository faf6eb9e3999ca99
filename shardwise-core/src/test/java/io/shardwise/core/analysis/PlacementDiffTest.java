package io.shardwise.core.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.partition.HashPartitioner;
import io.shardwise.core.partition.HashSpaceOwnership;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.Partitioner;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.RangePartitioner;
import io.shardwise.core.partition.SlotPartitioner;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The structural diff is exact: a key changes node if and only if it lies in a moved slot or range,
 * and then it moves exactly as that slot or range says.
 */
class PlacementDiffTest {

  private static final HashFunction HASH = HashFunctions.murmur3_128();
  private static final List<byte[]> KEYS = keys(20_000);

  private static List<byte[]> keys(int n) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(ByteStrings.utf8(String.format(Locale.ROOT, "order-%07d", i)));
    }
    return out;
  }

  private static KeySample sample() {
    KeySample.Builder b = KeySample.builder(1 << 16, 3, HASH);
    KEYS.forEach(b::add);
    return b.build();
  }

  @ParameterizedTest(name = "{0} {1}->{2}")
  @CsvSource({"RING,5,6", "RING,6,4", "TOKENS,3,4", "TOKENS,4,3", "HASHRANGE,4,7", "HASHRANGE,7,2"})
  void hashRangeMovesAreExactlyTheMovedKeys(Strategy strategy, int from, int to) {
    KeySample sample = sample();
    Partitioner before = PartitionerSpec.builder(strategy).hash(HASH).vnodes(32).build().create(from, sample);
    Partitioner after = before.withNodeCount(to, sample);
    List<PlacementDiff.HashRangeMove> moves = PlacementDiff.hashRanges((HashSpaceOwnership) before, (HashSpaceOwnership) after);
    assertThat(moves).isNotEmpty();
    long moved = 0;
    for (byte[] key : KEYS) {
      long h = HASH.hash(key);
      int a = ((HashPartitioner) before).nodeForHash(h);
      int b = ((HashPartitioner) after).nodeForHash(h);
      PlacementDiff.HashRangeMove in = moves.stream()
          .filter(m -> Long.compareUnsigned(m.first(), h) <= 0 && Long.compareUnsigned(h, m.last()) <= 0)
          .findFirst()
          .orElse(null);
      if (a == b) {
        assertThat(in).as("unmoved key inside a moved range").isNull();
      } else {
        moved++;
        assertThat(in).as("moved key outside every moved range").isNotNull();
        assertThat(in.from()).isEqualTo(a);
        assertThat(in.to()).isEqualTo(b);
      }
    }
    double expected = PlacementDiff.hashSpaceFraction(moves, (HashSpaceOwnership) before);
    assertThat((double) moved / KEYS.size()).isCloseTo(expected, org.assertj.core.data.Offset.offset(0.02));
  }

  @ParameterizedTest(name = "slots {0}->{1}")
  @CsvSource({"3,4", "4,3", "1,9"})
  void slotMovesAreExactlyTheMovedKeys(int from, int to) {
    SlotPartitioner before = SlotPartitioner.evenly(HASH, 1024, from);
    SlotPartitioner after = before.withNodeCount(to, KeySample.empty());
    List<PlacementDiff.SlotMove> moves = PlacementDiff.slots(before, after);
    for (byte[] key : KEYS) {
      int slot = before.shardFor(key);
      PlacementDiff.SlotMove move = moves.stream().filter(m -> m.slot() == slot).findFirst().orElse(null);
      if (before.nodeFor(key) == after.nodeFor(key)) {
        assertThat(move).isNull();
      } else {
        assertThat(move).isEqualTo(new PlacementDiff.SlotMove(slot, before.nodeFor(key), after.nodeFor(key)));
      }
    }
  }

  @ParameterizedTest(name = "range {0}->{1}")
  @CsvSource({"3,5", "5,2"})
  void keyRangeMovesAreExactlyTheMovedKeys(int from, int to) {
    KeySample sample = sample();
    RangePartitioner before = RangePartitioner.preSplit(sample, from, from);
    RangePartitioner after = before.withNodeCount(to, sample);
    List<PlacementDiff.KeyRangeMove> moves = PlacementDiff.keyRanges(before, after);
    for (byte[] key : KEYS) {
      PlacementDiff.KeyRangeMove move = moves.stream().filter(m -> m.range().contains(key)).findFirst().orElse(null);
      if (before.nodeFor(key) == after.nodeFor(key)) {
        assertThat(move).isNull();
      } else {
        assertThat(move).isNotNull();
        assertThat(move.from()).isEqualTo(before.nodeFor(key));
        assertThat(move.to()).isEqualTo(after.nodeFor(key));
      }
    }
  }
}
