package io.shardwise.core.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.Strategy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimulationTest {

  private static List<PartitionerSpec> allStrategies() {
    List<PartitionerSpec> specs = new ArrayList<>();
    for (Strategy s : Strategy.values()) {
      specs.add(PartitionerSpec.builder(s).hash(HashFunctions.murmur3_128()).build());
    }
    return specs;
  }

  @Test
  void reportsEveryStrategyInOrderWithTheTheoreticalMinimum() {
    SimulationReport r = Simulation.run(KeyGenerators.pattern("user-%06d", 20_000, 0), 10, 11, allStrategies(), false);
    assertThat(r.keys()).isEqualTo(20_000);
    assertThat(r.hash()).isEqualTo("murmur3-128");
    assertThat(r.results()).extracting(SimulationReport.Result::strategy).containsExactly(Strategy.values());
    for (SimulationReport.Result result : r.results()) {
      assertThat(result.theoreticalFraction()).isEqualTo(1.0 / 11);
      assertThat(result.movedFraction()).isEqualTo(result.moved() / 20_000.0);
      assertThat(result.before().mean()).isEqualTo(2_000.0);
      assertThat(result.after().mean()).isEqualTo(20_000.0 / 11);
      assertThat(result.movedKeys()).isNull();
    }
    SimulationReport.Result mod = r.results().get(Strategy.MOD.ordinal());
    SimulationReport.Result ring = r.results().get(Strategy.RING.ordinal());
    assertThat(mod.movedFraction()).isGreaterThan(0.85);
    assertThat(ring.movedFraction()).isLessThan(0.12);
    assertThat(ring.structure().unit()).isEqualTo("hash ranges");
    assertThat(r.results().get(Strategy.SLOTS.ordinal()).structure().total()).isEqualTo(1024);
  }

  @Test
  void theSameArgumentsGiveTheSameReport() {
    KeySource keys = KeyGenerators.uuid(5_000, 11);
    SimulationReport a = Simulation.run(keys, 3, 5, allStrategies(), false);
    SimulationReport b = Simulation.run(keys, 3, 5, allStrategies(), false);
    assertThat(a).isEqualTo(b);
  }

  @Test
  void movedKeysAreListedInInputOrder() {
    KeySource keys = KeyGenerators.pattern("key-%02d", 40, 1);
    SimulationReport r = Simulation.run(keys, 4, 5, List.of(PartitionerSpec.builder(Strategy.MOD).build()), true);
    List<SimulationReport.MovedKey> moved = r.results().get(0).movedKeys();
    assertThat(moved).hasSize((int) r.results().get(0).moved());
    int last = 0;
    for (SimulationReport.MovedKey k : moved) {
      int n = Integer.parseInt(new String(k.key(), StandardCharsets.UTF_8).substring(4));
      assertThat(n).isGreaterThan(last);
      last = n;
      assertThat(k.from()).isNotEqualTo(k.to());
    }
  }

  @Test
  void shrinkingReportsTheRemovedShare() {
    SimulationReport r =
        Simulation.run(KeyGenerators.pattern("k%d", 10_000, 0), 5, 4, List.of(PartitionerSpec.builder(Strategy.JUMP).build()), true);
    assertThat(r.results().get(0).theoreticalFraction()).isEqualTo(0.2);
    assertThat(r.results().get(0).movedKeys()).allMatch(k -> k.from() == 4);
  }

  @Test
  void impossiblePlacementsNameTheStrategy() {
    List<PartitionerSpec> slots = List.of(PartitionerSpec.builder(Strategy.SLOTS).slots(16).build());
    assertThatThrownBy(() -> Simulation.run(KeyGenerators.pattern("k%d", 10, 0), 4, 17, slots, false))
        .hasMessage("slots: more nodes (17) than slots (16); every node needs at least one slot");
    assertThatThrownBy(() -> Simulation.run(KeyGenerators.pattern("k%d", 10, 0), 0, 1, slots, false))
        .hasMessageContaining("at least 1");
  }

  @Test
  void placementsGiveEveryKeysNodeBeforeAndAfterConsistentWithTheCounts() {
    SimulationReport r = Simulation.run(KeyGenerators.pattern("key-%02d", 40, 1), 4, 5, allStrategies(), Simulation.Detail.PLACEMENTS);
    assertThat(r.placedKeys()).hasSize(40);
    assertThat(new String(r.placedKeys().get(0), StandardCharsets.UTF_8)).isEqualTo("key-01");
    for (SimulationReport.Result result : r.results()) {
      int[] before = result.placement().before();
      int[] after = result.placement().after();
      assertThat(before).hasSize(40);
      long moved = 0;
      long[] loadAfter = new long[5];
      for (int i = 0; i < 40; i++) {
        moved += before[i] != after[i] ? 1 : 0;
        loadAfter[after[i]]++;
      }
      assertThat(moved).as(result.strategy().id()).isEqualTo(result.moved());
      assertThat(result.movedKeys()).hasSize((int) moved);
      assertThat(result.loadAfter()).containsExactly(java.util.Arrays.stream(loadAfter).boxed().toArray(Long[]::new));
      assertThat(result.loadBefore()).hasSize(4);
    }
    SimulationReport again = Simulation.run(KeyGenerators.pattern("key-%02d", 40, 1), 4, 5, allStrategies(), Simulation.Detail.PLACEMENTS);
    for (int i = 0; i < r.results().size(); i++) {
      assertThat(again.results().get(i).placement()).isEqualTo(r.results().get(i).placement());
    }
  }

  @Test
  void placementsAreBoundedSoAHugeGridIsRefused() {
    List<PartitionerSpec> mod = List.of(PartitionerSpec.builder(Strategy.MOD).build());
    assertThatThrownBy(
            () -> Simulation.run(KeyGenerators.pattern("k%d", Simulation.MAX_PLACED_KEYS + 1, 0), 4, 5, mod, Simulation.Detail.PLACEMENTS))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most " + Simulation.MAX_PLACED_KEYS + " keys");
  }
}
