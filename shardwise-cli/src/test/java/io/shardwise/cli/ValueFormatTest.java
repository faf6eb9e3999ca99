package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ValueFormatTest {

  private static final byte[] MIXED = {'h', (byte) 0xc3, (byte) 0xa9, '\n', 0, (byte) 0xff, '\\', 0x7f};

  @Test
  void textEscapesEveryByteThatIsNotPrintableUtf8AndKeepsTheRest() {
    assertThat(ValueFormat.text.render(MIXED)).isEqualTo("hé\\n\\x00\\xff\\\\\\x7f");
    assertThat(ValueFormat.text.render("plain text".getBytes(StandardCharsets.UTF_8))).isEqualTo("plain text");
    assertThat(ValueFormat.text.render(new byte[] {(byte) 0xe2, (byte) 0x82})).as("a cut-off sequence").isEqualTo("\\xe2\\x82");
  }

  @Test
  void hexAndBase64RoundTripEveryByte() {
    for (ValueFormat f : new ValueFormat[] {ValueFormat.hex, ValueFormat.base64}) {
      assertThat(f.parse(f.render(MIXED))).as(f.name()).isEqualTo(MIXED);
    }
    assertThat(ValueFormat.hex.render(MIXED)).isEqualTo("68c3a90a00ff5c7f");
    assertThat(ValueFormat.hex.parse("0xff00")).isEqualTo(new byte[] {(byte) 0xff, 0});
    assertThatThrownBy(() -> ValueFormat.hex.parse("xyz")).hasMessageStartingWith("the value is not hex");
    assertThatThrownBy(() -> ValueFormat.raw.parse("x")).hasMessageContaining("--format raw is for output");
  }

  @Test
  void jsonNeverLosesAByte() {
    ObjectNode text = Output.object();
    ValueFormat.putJson(text, "value", "héllo".getBytes(StandardCharsets.UTF_8));
    assertThat(text.get("value").asText()).isEqualTo("héllo");
    ObjectNode binary = Output.object();
    ValueFormat.putJson(binary, "value", MIXED);
    assertThat(binary.has("value")).isFalse();
    assertThat(ValueFormat.base64.parse(binary.get("value_base64").asText())).isEqualTo(MIXED);
  }
}
