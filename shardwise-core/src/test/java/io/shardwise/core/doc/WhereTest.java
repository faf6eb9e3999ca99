package io.shardwise.core.doc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.util.List;
import org.junit.jupiter.api.Test;

class WhereTest {

  @Test
  void readsComparisonsJoinedByAndAndOrWithAndBindingTighter() {
    Where w = Where.parse("color = 'red' AND make = 'ford' OR year >= 2020");
    assertThat(w).isEqualTo(new Where.Or(List.of(
        new Where.And(List.of(new Where.Compare(List.of("color"), Where.Op.EQ, "red"), new Where.Compare(List.of("make"), Where.Op.EQ, "ford"))),
        new Where.Compare(List.of("year"), Where.Op.GE, new BigDecimal("2020")))));
    assertThat(w.toString()).isEqualTo("((color = 'red' AND make = 'ford') OR year >= 2020)");
    assertThat(Where.parse(w.toString())).as("printed back, read again").isEqualTo(w);
  }

  @Test
  void readsPathsLiteralsAndParentheses() {
    Where w = Where.parse("  owner.id=7 and (sold = FALSE or price < -10.5e2) AND note != null AND \"and\".\"a b\" <> 'it''s'");
    assertThat(w.comparisons()).extracting(Object::toString).containsExactly("owner.id = 7", "sold = false", "price < -1050",
        "note != null", "\"and\".\"a b\" != 'it''s'");
    assertThat(Where.parse(w.toString())).isEqualTo(w);
    assertThat(Where.parse("n = 1.0")).as("numbers by value").isEqualTo(Where.parse("n = 1"));
  }

  @Test
  void aBadConditionSaysWhere() {
    assertThatThrownBy(() -> Where.parse("color = red")).hasMessage(
        "bad condition at character 9 ('red'): expected a value: a 'string', a number, true, false or null");
    assertThatThrownBy(() -> Where.parse("color 'red'")).hasMessageContaining("character 7").hasMessageContaining("expected a comparison");
    assertThatThrownBy(() -> Where.parse("(a = 1")).hasMessageContaining("the end").hasMessageContaining("expected ')'");
    assertThatThrownBy(() -> Where.parse("a = 1 b = 2")).hasMessageContaining("character 7").hasMessageContaining("AND, OR or the end");
    assertThatThrownBy(() -> Where.parse("a = 'open")).hasMessageContaining("not closed");
    assertThatThrownBy(() -> Where.parse("and = 1")).hasMessageContaining("keyword AND");
    assertThatThrownBy(() -> Where.parse("")).hasMessageContaining("expected a field name");
    assertThatThrownBy(() -> Where.parse("a = 1.2.3")).hasMessageContaining("not a number");
  }

  @Test
  void limitsAreNamed() {
    assertThatThrownBy(() -> Where.parse("a = 1" + " AND a = 1".repeat(Where.MAX_COMPARISONS))).hasMessageContaining("at most 64 comparisons");
    assertThatThrownBy(() -> Where.parse("x".repeat(Where.MAX_LENGTH + 1))).hasMessageContaining("at most 4096 characters");
    assertThatThrownBy(() -> Where.parse("a" + ".a".repeat(Where.MAX_PATH) + " = 1")).hasMessageContaining("at most 16 names");
    assertThatThrownBy(() -> Where.parse("(".repeat(20) + "a = 1" + ")".repeat(20))).hasMessageContaining("nest at most");
  }
}
