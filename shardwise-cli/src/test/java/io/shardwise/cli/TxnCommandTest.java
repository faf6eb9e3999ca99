package io.shardwise.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Transaction files as {@code shardwise txn run} reads them: every item's mistake named with its index. */
class TxnCommandTest {

  @Test
  void itemsReadAsWritten() {
    List<TxnItem> items = TxnCommand.parse("""
        {"items": [
          {"op": "put", "table": "t", "key": "a", "value": "1", "if": 3},
          {"op": "put", "table": "t", "key": "b", "sort_key": "s", "value_base64": "AP8="},
          {"op": "delete", "table": "u", "key": "c", "if": "exists"},
          {"op": "check", "table": "u", "key": "d", "if": "absent"}
        ]}""");
    assertThat(items).containsExactly(
        TxnItem.put("t", Key.of("a"), "1".getBytes(java.nio.charset.StandardCharsets.UTF_8)).onlyIf(3),
        TxnItem.put("t", Key.of("b", "s"), new byte[] {0, -1}),
        TxnItem.delete("u", Key.of("c")).onlyIf(TxnItem.EXISTS),
        TxnItem.check("u", Key.of("d"), TxnItem.ABSENT));
  }

  @Test
  void mistakesAreNamed() {
    assertThatThrownBy(() -> TxnCommand.parse("{")).hasMessageContaining("not JSON");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": []}")).hasMessageContaining("at least one item");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": [{\"op\": \"put\", \"table\": \"t\", \"key\": \"a\"}]}"))
        .hasMessageContaining("item 0: a put needs");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": [{\"op\": \"put\", \"table\": \"t\", \"key\": \"a\", \"value\": \"1\"},"
        + " {\"op\": \"check\", \"table\": \"t\", \"key\": \"b\"}]}")).hasMessageContaining("item 1: a condition check needs a condition");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": [{\"op\": \"move\", \"table\": \"t\", \"key\": \"a\"}]}"))
        .hasMessageContaining("\"op\" is put, delete or check");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": [{\"op\": \"delete\", \"key\": \"a\"}]}"))
        .hasMessageContaining("item 0: \"table\" is required");
    assertThatThrownBy(() -> TxnCommand.parse("{\"items\": [{\"op\": \"delete\", \"table\": \"t\", \"key\": \"a\", \"if\": -4}]}"))
        .hasMessageContaining("\"if\" is \"exists\", \"absent\" or a version");
  }
}
