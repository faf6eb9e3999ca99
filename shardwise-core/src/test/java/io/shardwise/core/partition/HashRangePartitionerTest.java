package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HashRangePartitionerTest {

  @Property(tries = 300, seed = "20261129")
  void splitsAndMergesKeepExactCoverage(@ForAll @Size(max = 60) List<Long> operations, @ForAll boolean narrow) {
    HashFunction hash = narrow ? HashFunctions.murmur3_32() : HashFunctions.murmur3_128();
    HashRangePartitioner p = HashRangePartitioner.evenly(hash, 3, 3);
    for (long op : operations) {
      int shard = (int) Long.remainderUnsigned(op, p.shardCount());
      if ((op & 1) == 0 && p.shardCount() > 1 && shard < p.shardCount() - 1) {
        p = p.merge(shard);
      } else if (p.first(shard) != p.last(shard)) {
        long width = p.last(shard) - p.first(shard); // unsigned, at least 1
        long at = p.first(shard) + 1 + Long.remainderUnsigned(op >>> 1, width);
        p = p.split(shard, at, (int) Long.remainderUnsigned(op, 3));
      }
      assertExactCoverage(p);
    }
  }

  private static void assertExactCoverage(HashRangePartitioner p) {
    assertThat(p.first(0)).isZero();
    assertThat(p.last(p.shardCount() - 1)).isEqualTo(p.hashFunction().maxValue());
    for (int s = 0; s < p.shardCount(); s++) {
      assertThat(Long.compareUnsigned(p.first(s), p.last(s))).isLessThanOrEqualTo(0);
      if (s > 0) {
        assertThat(p.first(s)).isEqualTo(p.last(s - 1) + 1);
      }
      assertThat(p.shardForHash(p.first(s))).isEqualTo(s);
      assertThat(p.shardForHash(p.last(s))).isEqualTo(s);
    }
  }

  @Test
  void evenRangesSplitTheWholeSpace() {
    HashRangePartitioner p = HashRangePartitioner.evenly(HashFunctions.murmur3_128(), 4, 2);
    assertThat(p.first(1)).isEqualTo(1L << 62);
    assertThat(p.first(2)).isEqualTo(Long.MIN_VALUE);
    assertThat(p.last(3)).isEqualTo(-1L);
    assertThat(p.nodeOfShard(1)).isZero();
    assertThat(p.nodeOfShard(2)).isEqualTo(1);
    HashRangePartitioner narrow = HashRangePartitioner.evenly(HashFunctions.fnv1a32(), 2, 2);
    assertThat(narrow.first(1)).isEqualTo(1L << 31);
    assertThat(narrow.last(1)).isEqualTo(0xffffffffL);
  }

  @Test
  void aSplitOutsideTheShardIsRejected() {
    HashRangePartitioner p = HashRangePartitioner.evenly(HashFunctions.murmur3_128(), 2, 2);
    assertThatThrownBy(() -> p.split(0, 0, 1)).hasMessageContaining("is not inside shard 0");
    assertThatThrownBy(() -> p.split(0, Long.MIN_VALUE + 1, 1)).hasMessageContaining("is not inside shard 0");
    assertThatThrownBy(() -> p.merge(1)).isInstanceOf(IndexOutOfBoundsException.class);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"murmur3-128", "fnv1a-32"})
  void growingSplitsTheShardWithTheMostSampledKeys(String hashName) {
    HashFunction hash = HashFunctions.byName(hashName);
    KeySample.Builder b = KeySample.builder(100, 1, hash);
    HashRangePartitioner p = HashRangePartitioner.evenly(hash, 4, 4);
    // Sample keys whose hashes fall in shard 2 only.
    int added = 0;
    for (int i = 0; added < 20; i++) {
      byte[] key = ("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
      if (p.shardForHash(hash.hash(key)) == 2) {
        b.add(key);
        added++;
      }
    }
    HashRangePartitioner grown = p.withNodeCount(5, b.build());
    assertThat(grown.shardCount()).isEqualTo(5);
    assertThat(grown.nodeOfShard(3)).isEqualTo(4);
    assertThat(grown.first(2)).isEqualTo(p.first(2));
    assertThat(grown.last(3)).isEqualTo(p.last(2));
  }
}
