package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What growing and shrinking a cluster does to placement, for every strategy: which keys may move,
 * where to, and how many.
 */
class GrowthPropertiesTest {

  private static final HashFunction HASH = HashFunctions.murmur3_128();
  private static final List<byte[]> KEYS_2K = TestKeys.users(2_000);
  private static final List<byte[]> KEYS_100K = TestKeys.users(100_000);
  private static final KeySample SAMPLE_2K = TestKeys.sampleOf(KEYS_2K, HASH);
  private static final KeySample SAMPLE_100K = TestKeys.sampleOf(KEYS_100K, HASH);

  @Property(tries = 60, seed = "20261129")
  void growingMovesKeysOnlyToNewNodes(
      @ForAll Strategy strategy, @ForAll @IntRange(min = 1, max = 30) int from, @ForAll @IntRange(min = 1, max = 3) int added) {
    if (strategy == Strategy.MOD) {
      return; // the baseline moves keys between old nodes too; see modMovesAlmostEverything
    }
    int to = from + added;
    Partitioner before = TestKeys.spec(strategy, HASH).create(from, SAMPLE_2K);
    Partitioner after = before.withNodeCount(to, SAMPLE_2K);
    assertThat(after.nodeCount()).isEqualTo(to);
    for (byte[] key : KEYS_2K) {
      int a = before.nodeFor(key);
      int b = after.nodeFor(key);
      if (a != b) {
        assertThat(b).as("%s %d->%d: a key moved between old nodes", strategy, from, to).isGreaterThanOrEqualTo(from);
      }
    }
  }

  @Property(tries = 60, seed = "20261129")
  void shrinkingMovesOnlyKeysOfRemovedNodes(
      @ForAll Strategy strategy, @ForAll @IntRange(min = 2, max = 30) int from, @ForAll @IntRange(min = 1, max = 3) int removed) {
    if (strategy == Strategy.MOD || removed >= from) {
      return;
    }
    int to = from - removed;
    Partitioner before = TestKeys.spec(strategy, HASH).create(from, SAMPLE_2K);
    Partitioner after = before.withNodeCount(to, SAMPLE_2K);
    for (byte[] key : KEYS_2K) {
      int a = before.nodeFor(key);
      int b = after.nodeFor(key);
      assertThat(b).isLessThan(to);
      if (a != b) {
        assertThat(a).as("%s %d->%d: a key left a staying node", strategy, from, to).isGreaterThanOrEqualTo(to);
      }
    }
  }

  @Property(tries = 40, seed = "20261129")
  void placementIsDeterministic(@ForAll Strategy strategy, @ForAll @IntRange(min = 1, max = 50) int nodes) {
    Partitioner a = TestKeys.spec(strategy, HASH).create(nodes, SAMPLE_2K);
    Partitioner b = TestKeys.spec(strategy, HASH).create(nodes, SAMPLE_2K);
    for (byte[] key : KEYS_2K) {
      assertThat(a.nodeFor(key)).isEqualTo(b.nodeFor(key));
      assertThat(a.nodeFor(key)).isBetween(0, nodes - 1);
    }
  }

  /** Consistent strategies move close to the minimum, 1/(N+1), on 100k keys. */
  @ParameterizedTest(name = "{0}")
  @EnumSource(value = Strategy.class, names = {"RING", "SLOTS", "JUMP", "RENDEZVOUS"})
  void consistentStrategiesMoveAboutOneOverNPlusOne(Strategy strategy) {
    for (int n : new int[] {1, 3, 10, 31}) {
      double moved = movedFraction(PartitionerSpec.builder(strategy).hash(HASH).build(), n, n + 1);
      double minimum = 1.0 / (n + 1);
      assertThat(moved).as("%s %d->%d", strategy, n, n + 1).isBetween(minimum * 0.8, minimum * 1.2);
    }
  }

  @ParameterizedTest(name = "{0} nodes")
  @ValueSource(ints = {1, 4, 10, 50})
  void modMovesAlmostEverything(int n) {
    double moved = movedFraction(PartitionerSpec.builder(Strategy.MOD).hash(HASH).build(), n, n + 1);
    assertThat(moved).isCloseTo((double) n / (n + 1), org.assertj.core.data.Offset.offset(0.01));
  }

  private static double movedFraction(PartitionerSpec spec, int from, int to) {
    Partitioner before = spec.create(from, SAMPLE_100K);
    Partitioner after = before.withNodeCount(to, SAMPLE_100K);
    int moved = 0;
    for (byte[] key : KEYS_100K) {
      if (before.nodeFor(key) != after.nodeFor(key)) {
        moved++;
      }
    }
    return (double) moved / KEYS_100K.size();
  }
}
