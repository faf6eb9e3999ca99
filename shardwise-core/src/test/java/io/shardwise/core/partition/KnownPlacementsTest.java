package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Known answers for every strategy: where key-01 … key-12 land on 4 nodes, as computed by an
 * independent Python implementation of each algorithm written from its paper or specification (the
 * jump values also agree with the paper's C code). A meta-test fails when a strategy has none.
 */
class KnownPlacementsTest {

  private static final int NODES = 4;

  private static final Map<Strategy, List<Integer>> EXPECTED = new EnumMap<>(Strategy.class);

  static {
    EXPECTED.put(Strategy.MOD, List.of(0, 0, 3, 0, 1, 1, 3, 3, 0, 0, 2, 2));
    EXPECTED.put(Strategy.RING, List.of(1, 2, 0, 0, 1, 0, 2, 1, 2, 1, 2, 3));
    EXPECTED.put(Strategy.SLOTS, List.of(0, 0, 2, 1, 1, 1, 0, 1, 3, 3, 0, 0));
    EXPECTED.put(Strategy.HASHRANGE, List.of(1, 2, 2, 0, 0, 0, 2, 1, 0, 1, 2, 0));
    EXPECTED.put(Strategy.TOKENS, List.of(1, 3, 2, 0, 1, 0, 3, 1, 2, 2, 3, 0));
    EXPECTED.put(Strategy.JUMP, List.of(2, 1, 2, 1, 0, 0, 0, 1, 0, 0, 3, 2));
    EXPECTED.put(Strategy.RENDEZVOUS, List.of(2, 1, 0, 2, 1, 0, 1, 3, 0, 0, 0, 3));
    EXPECTED.put(Strategy.RANGE, List.of(0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2));
  }

  /** The partitioners the reference computed, with the parameters it used. */
  private static Partitioner reference(Strategy strategy) {
    switch (strategy) {
      case MOD:
        return new ModPartitioner(HashFunctions.md5(), NODES);
      case RING:
        return RingPartitioner.virtualNodes(HashFunctions.blake2b(32), NODES, 8, "shard-{shard}-v{v}");
      case SLOTS:
        return SlotPartitioner.evenly(HashFunctions.blake2b(32), 16, NODES);
      case HASHRANGE:
        return HashRangePartitioner.evenly(HashFunctions.md5(), NODES, NODES);
      case TOKENS:
        return RingPartitioner.randomTokens(HashFunctions.md5(), NODES, 4, 42);
      case JUMP:
        return new JumpPartitioner(HashFunctions.md5(), NODES);
      case RENDEZVOUS:
        return new RendezvousPartitioner(HashFunctions.blake2b(32), NODES);
      case RANGE:
        return RangePartitioner.of(List.of(ByteStrings.utf8("key-04"), ByteStrings.utf8("key-08")), NODES);
      default:
        throw new AssertionError(strategy);
    }
  }

  @Test
  void everyStrategyHasKnownAnswers() {
    assertThat(EXPECTED.keySet()).containsExactlyInAnyOrder(Strategy.values());
  }

  @Test
  void everyStrategyPlacesKeysAsTheReferenceDoes() {
    EXPECTED.forEach(
        (strategy, expected) -> {
          Partitioner p = reference(strategy);
          List<Integer> actual = new ArrayList<>();
          for (int i = 1; i <= 12; i++) {
            actual.add(p.nodeFor(ByteStrings.utf8(String.format(Locale.ROOT, "key-%02d", i))));
          }
          assertThat(actual).as(strategy.id()).isEqualTo(expected);
        });
  }

  @Test
  void jumpMatchesThePapersReferenceCode() {
    int[] expected = {0, 549, 338, 961, 172, 231, 421, 97, 191, 254};
    for (int i = 0; i < expected.length; i++) {
      assertThat(JumpPartitioner.jump(i, 1000)).isEqualTo(expected[i]);
    }
    int[] high = {2, 3, 5, 2, 5};
    for (int i = 0; i < high.length; i++) {
      assertThat(JumpPartitioner.jump(-1L - i, 7)).as("jump(2^64-1-%d, 7)", i).isEqualTo(high[i]);
    }
  }

  @Test
  void jumpAgreesWithGuavasConsistentHash() {
    long x = 12345;
    for (int i = 0; i < 10_000; i++) {
      x = x * 6364136223846793005L + 1442695040888963407L;
      int buckets = 1 + (int) ((x >>> 40) % 5000);
      assertThat(JumpPartitioner.jump(x, buckets)).isEqualTo(com.google.common.hash.Hashing.consistentHash(x, buckets));
    }
  }
}
