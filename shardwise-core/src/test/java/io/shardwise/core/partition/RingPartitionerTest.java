package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import java.util.List;
import org.junit.jupiter.api.Test;

class RingPartitionerTest {

  @Test
  void aKeyBelongsToTheFirstPointAtOrAboveItsHashWrappingAround() {
    RingPartitioner ring = RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), 3, 4, RingPartitioner.DEFAULT_TEMPLATE);
    for (int i = 0; i < ring.shardCount(); i++) {
      long point = ring.point(i);
      assertThat(ring.shardForHash(point)).isEqualTo(i);
      if (i > 0 && ring.point(i - 1) != point - 1) {
        assertThat(ring.shardForHash(point - 1)).isEqualTo(i);
      }
      if (i + 1 < ring.shardCount()) {
        assertThat(Long.compareUnsigned(ring.point(i), ring.point(i + 1))).isLessThan(0);
      }
    }
    long top = ring.point(ring.shardCount() - 1);
    if (top != -1L) {
      assertThat(ring.shardForHash(top + 1)).isZero();
    }
    assertThat(ring.shardForHash(-1L)).isZero(); // the largest unsigned hash wraps
  }

  @Test
  void weightsScaleTheShareOfKeys() {
    RingPartitioner ring = RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), new double[] {1, 2, 1}, 256, "{node}-v{v}");
    int[] perNode = new int[3];
    for (byte[] key : TestKeys.users(60_000)) {
      perNode[ring.nodeFor(key)]++;
    }
    assertThat(perNode[1] / (double) perNode[0]).isBetween(1.6, 2.4);
    assertThat(perNode[1] / (double) perNode[2]).isBetween(1.6, 2.4);
  }

  @Test
  void badRingParametersAreRejected() {
    assertThatThrownBy(() -> RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), 3, 4, "node-{node}"))
        .hasMessageContaining("must contain {v} and {node}");
    assertThatThrownBy(() -> RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), 3, 0, "{node}-{v}"))
        .hasMessageContaining("at least 1");
    assertThatThrownBy(() -> RingPartitioner.virtualNodes(HashFunctions.murmur3_128(), new double[] {1, 0}, 4, "{node}-{v}"))
        .hasMessageContaining("positive");
  }

  @Test
  void randomTokensAreReproducibleFromTheSeed() {
    RingPartitioner a = RingPartitioner.randomTokens(HashFunctions.murmur3_128(), 5, 16, 99);
    RingPartitioner b = RingPartitioner.randomTokens(HashFunctions.murmur3_128(), 5, 16, 99);
    RingPartitioner c = RingPartitioner.randomTokens(HashFunctions.murmur3_128(), 5, 16, 100);
    assertThat(a.shardCount()).isEqualTo(80);
    boolean differs = false;
    for (int i = 0; i < a.shardCount(); i++) {
      assertThat(a.point(i)).isEqualTo(b.point(i));
      differs |= a.point(i) != c.point(i);
    }
    assertThat(differs).isTrue();
  }

  @Test
  void ownershipCoversTheSpaceInOrder() {
    for (RingPartitioner ring :
        List.of(
            RingPartitioner.virtualNodes(HashFunctions.fnv1a32(), 4, 16, "{node}-v{v}"),
            RingPartitioner.randomTokens(HashFunctions.md5(), 3, 8, 1))) {
      List<OwnedHashRange> owned = ring.ownership();
      assertThat(owned.get(0).first()).isZero();
      assertThat(owned.get(owned.size() - 1).last()).isEqualTo(ring.spaceMax());
      for (int i = 1; i < owned.size(); i++) {
        assertThat(owned.get(i).first()).isEqualTo(owned.get(i - 1).last() + 1);
        assertThat(owned.get(i).node()).isNotEqualTo(owned.get(i - 1).node());
      }
      for (OwnedHashRange r : owned) {
        assertThat(ring.nodeForHash(r.first())).isEqualTo(r.node());
        assertThat(ring.nodeForHash(r.last())).isEqualTo(r.node());
      }
    }
  }
}
