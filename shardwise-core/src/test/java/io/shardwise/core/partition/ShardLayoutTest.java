package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

class ShardLayoutTest {

  private static final HashFunction HASH = HashFunctions.murmur3_128();
  private static final List<byte[]> KEYS = TestKeys.users(5_000);
  private static final KeySample SAMPLE = TestKeys.sampleOf(KEYS, HASH);

  /**
   * A cluster table starts exactly where the lab says: for every key, the owner of its layout shard
   * is the node the simulator's partitioner picks. The layout is rebuilt from its stored values
   * first, as a node reading the map would.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(Strategy.class)
  void aNewTablePlacesKeysWhereTheSimulatorDoes(Strategy strategy) {
    int nodes = 4;
    PartitionerSpec spec = PartitionerSpec.builder(strategy).hash(HASH).vnodes(16).slots(64).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, nodes, nodes, SAMPLE);
    ShardLayout stored = initial.layout();
    ShardLayout reread = stored.ringMembers().isEmpty()
        ? ShardLayout.of(stored.strategy(), stored.hashFunction(), stored.shardCount(), stored.splitPoints(), stored.hashValues())
        : ShardLayout.ringRanges(stored.strategy(), stored.hashFunction(), stored.hashValues(), stored.ringMembers());
    Partitioner lab = spec.create(nodes, SAMPLE);
    for (byte[] key : KEYS) {
      assertThat(initial.owners()[reread.shardFor(key)]).isEqualTo(lab.nodeFor(key));
    }
  }

  @Test
  void storedValuesAreValidated() {
    assertThatThrownBy(() -> ShardLayout.of(Strategy.RANGE, HASH, 3, List.of(ByteStrings.utf8("m")), new long[0]))
        .hasMessage("range layout with 3 shards cannot have 1 split points");
    assertThatThrownBy(() -> ShardLayout.of(Strategy.HASHRANGE, HASH, 2, List.of(), new long[] {5, 9}))
        .hasMessage("the first hash range must start at 0");
    assertThatThrownBy(() -> ShardLayout.of(Strategy.RING, HASH, 2, List.of(), new long[] {9, 5}))
        .hasMessageContaining("strictly ascending");
    assertThatThrownBy(() -> ShardLayout.of(Strategy.RING, HashFunctions.fnv1a32(), 1, List.of(), new long[] {1L << 40}))
        .hasMessageContaining("outside fnv1a-32");
    assertThatThrownBy(() -> ShardLayout.of(Strategy.MOD, HASH, 0, List.of(), new long[0])).hasMessageContaining("at least 1 shard");
  }
}
