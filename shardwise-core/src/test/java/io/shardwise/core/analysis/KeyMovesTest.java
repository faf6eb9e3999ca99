package io.shardwise.core.analysis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import org.junit.jupiter.api.Test;

class KeyMovesTest {

  @Test
  void theoreticalMinimumIsTheShareOfTheNodesAddedOrRemoved() {
    assertThat(KeyMoves.theoreticalMinimum(10, 11)).isEqualTo(1.0 / 11);
    assertThat(KeyMoves.theoreticalMinimum(11, 10)).isEqualTo(1.0 / 11);
    assertThat(KeyMoves.theoreticalMinimum(4, 8)).isEqualTo(0.5);
    assertThat(KeyMoves.theoreticalMinimum(5, 5)).isZero();
    assertThatThrownBy(() -> KeyMoves.theoreticalMinimum(0, 3)).hasMessageContaining("at least 1");
  }

  @Test
  void tallyCountsMovesFlowsAndLoad() {
    KeyMoves moves = new KeyMoves(2, 3);
    assertThat(moves.record(0, 0)).isFalse();
    assertThat(moves.record(0, 2)).isTrue();
    assertThat(moves.record(1, 2)).isTrue();
    assertThat(moves.record(1, 1)).isFalse();
    assertThat(moves.keys()).isEqualTo(4);
    assertThat(moves.moved()).isEqualTo(2);
    assertThat(moves.movedFraction()).isEqualTo(0.5);
    assertThat(moves.flow(1, 2)).isEqualTo(1);
    assertThat(moves.beforeLoad()).containsExactly(2, 2);
    assertThat(moves.afterLoad()).containsExactly(1, 1, 2);
  }

  @Test
  void loadStatsDescribeTheSpread() {
    LoadStats s = LoadStats.of(new long[] {2, 4, 6});
    assertThat(s.min()).isEqualTo(2);
    assertThat(s.max()).isEqualTo(6);
    assertThat(s.mean()).isEqualTo(4.0);
    assertThat(s.stddev()).isCloseTo(Math.sqrt(8.0 / 3), offset(1e-12));
    assertThat(s.peakToAverage()).isEqualTo(1.5);
    assertThat(LoadStats.of(new long[] {0, 0}).peakToAverage()).isEqualTo(1.0);
  }
}
