package io.shardwise.core.map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TablesTest {

  @Test
  void aNameIsALetterThenUpTo63LettersDigitsUnderscoresAndDashes() {
    String longest = "a" + "B0_-".repeat(15) + "zzz";
    assertThat(longest).hasSize(Tables.MAX_NAME_LENGTH);
    assertThat(Tables.checkName(longest)).isEqualTo(longest);
    assertThat(Tables.checkName("Z")).isEqualTo("Z");
    for (String bad : new String[] {"", longest + "x", "0abc", "_abc", "-abc", "ab c", "ab.c", "abé", "ab/c", "Ω"}) {
      assertThatThrownBy(() -> Tables.checkName(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("must start with a letter and be 1 to 64 characters");
    }
    assertThatThrownBy(() -> Tables.checkName(null)).isInstanceOf(IllegalArgumentException.class);
  }
}
