package io.shardwise.core.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.analysis.PlacementDiff;
import io.shardwise.core.hash.HashFunctions;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class SlotPartitionerTest {

  @Property(tries = 300, seed = "20261129")
  void resizingStaysBalancedWithinOneSlotAndMovesOnlyTheSlotsItMust(
      @ForAll @IntRange(min = 1, max = 64) int from,
      @ForAll @IntRange(min = 1, max = 64) int to,
      @ForAll @IntRange(min = 64, max = 2048) int slots) {
    SlotPartitioner before = SlotPartitioner.evenly(HashFunctions.murmur3_128(), slots, from);
    SlotPartitioner after = before.withNodeCount(to, KeySample.empty());

    int[] counts = after.slotCounts();
    assertThat(Arrays.stream(counts).max().getAsInt() - Arrays.stream(counts).min().getAsInt()).isLessThanOrEqualTo(1);

    // The least that must move: what nodes hold above their new count, plus every slot of a
    // removed node.
    int[] old = before.slotCounts();
    int mustMove = 0;
    for (int n = 0; n < from; n++) {
      mustMove += n < to ? Math.max(0, old[n] - counts[n]) : old[n];
    }
    List<PlacementDiff.SlotMove> moves = PlacementDiff.slots(before, after);
    assertThat(moves).hasSize(mustMove);
  }

  @Test
  void aNewNodeStealsFromEveryExistingNode() {
    SlotPartitioner before = SlotPartitioner.evenly(HashFunctions.murmur3_128(), 1024, 4);
    SlotPartitioner after = before.withNodeCount(5, KeySample.empty());
    List<PlacementDiff.SlotMove> moves = PlacementDiff.slots(before, after);
    assertThat(moves).allMatch(m -> m.to() == 4);
    assertThat(moves.stream().map(PlacementDiff.SlotMove::from).distinct()).containsExactlyInAnyOrder(0, 1, 2, 3);
    assertThat(after.slotCounts()).containsExactly(205, 205, 205, 205, 204);
  }

  @Test
  void sixteenThousandSlotsLikeRedisCluster() {
    SlotPartitioner p = SlotPartitioner.evenly(HashFunctions.murmur3_128(), 16384, 3);
    assertThat(p.slotCounts()).containsExactly(5462, 5461, 5461);
    assertThat(p.shardCount()).isEqualTo(16384);
  }

  @Test
  void moreNodesThanSlotsIsAClearError() {
    assertThatThrownBy(() -> SlotPartitioner.evenly(HashFunctions.murmur3_128(), 8, 9))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("more nodes (9) than slots (8); every node needs at least one slot");
    SlotPartitioner p = SlotPartitioner.evenly(HashFunctions.murmur3_128(), 8, 8);
    assertThatThrownBy(() -> p.withNodeCount(9, KeySample.empty())).hasMessageContaining("more nodes (9) than slots (8)");
  }

  @Test
  void explicitTablesAreValidated() {
    assertThatThrownBy(() -> SlotPartitioner.of(HashFunctions.murmur3_128(), 2, new int[] {0, 1, 2}))
        .hasMessageContaining("slot 2 is owned by node 2");
  }
}
