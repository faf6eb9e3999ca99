package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.proto.v1.PartitioningSpec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class TableSpecTest {

  @Test
  void aSettingNotGivenIsLeftToTheClusterNotSentAsZero() {
    TableSpec spec = TableSpec.builder("slots").build();
    assertThat(spec.slots()).isEmpty();
    assertThat(spec.hash()).isEmpty();
    PartitioningSpec wire = Protos.spec(spec);
    assertThat(wire.getSlots()).isZero(); // the wire's "not set"
    assertThat(wire.getHash()).isEmpty();
  }

  @Test
  void everySettingSurvivesTheWire() {
    TableSpec spec = TableSpec.builder("range").hash("xxhash64").shards(7).vnodes(16).vnodeTemplate("{node}#{i}").slots(64).tokens(8)
        .seed(42).splitPoints("g", "n").sampleKeys(List.of(new byte[] {1, 2}, new byte[] {(byte) 0xff}))
        .format(io.shardwise.core.doc.ValueFormat.JSON).build();
    TableSpec back = Protos.spec(Protos.spec(spec), spec.format().label());
    assertThat(back.format()).isEqualTo(io.shardwise.core.doc.ValueFormat.JSON);
    assertThat(back.strategy()).isEqualTo("range");
    assertThat(back.hash()).contains("xxhash64");
    assertThat(back.shards()).hasValue(7);
    assertThat(back.vnodes()).hasValue(16);
    assertThat(back.vnodeTemplate()).contains("{node}#{i}");
    assertThat(back.slots()).hasValue(64);
    assertThat(back.tokens()).hasValue(8);
    assertThat(back.seed()).isEqualTo(42);
    assertThat(back.splitPoints()).extracting(p -> new String(p, StandardCharsets.UTF_8)).containsExactly("g", "n");
    assertThat(back.sampleKeys()).containsExactly(new byte[] {1, 2}, new byte[] {(byte) 0xff});
    assertThat(back).hasToString("range, hash xxhash64, 7 shards, 16 vnodes, 64 slots, 8 tokens, json values, 2 split points");
  }

  @Test
  void countsBelowOneAndAMissingStrategyAreRefusedWhereTheyAreGiven() {
    assertThatThrownBy(() -> TableSpec.builder("mod").shards(0)).hasMessage("shards must be at least 1, not 0");
    assertThatThrownBy(() -> TableSpec.builder("ring").vnodes(-1)).hasMessage("vnodes must be at least 1, not -1");
    assertThatThrownBy(() -> TableSpec.builder("slots").slots(0)).hasMessage("slots must be at least 1, not 0");
    assertThatThrownBy(() -> TableSpec.builder("tokens").tokens(0)).hasMessage("tokens must be at least 1, not 0");
    assertThatThrownBy(() -> TableSpec.builder(" ")).hasMessageStartingWith("a table needs a strategy: one of range, mod");
  }

  @Test
  void theBuilderCopiesWhatItIsGiven() {
    byte[] point = "m".getBytes(StandardCharsets.UTF_8);
    TableSpec spec = TableSpec.builder("range").splitPoints(List.of(point)).build();
    point[0] = 'z';
    assertThat(spec.splitPoints().get(0)).containsExactly('m');
  }
}
