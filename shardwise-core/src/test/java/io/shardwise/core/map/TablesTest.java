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
    for (String bad : new String[] {"", longest + "x", "0abc", "_abc", "-abc", "ab c", "abé", "ab/c", "Ω", "ab.", ".ab", "ab..c", "ab.1c",
        "ab.c-d", "a-.b c"}) {
      assertThatThrownBy(() -> Tables.checkName(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("must start with a letter and be 1 to 64 characters");
    }
    assertThatThrownBy(() -> Tables.checkName(null)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aGlobalIndexsTableIsItsTablesNameADotAndTheFieldsPathWhichNoUserTableCanTake() {
    for (String name : new String[] {"cars.color", "cars-2.owner.id", "a._x.y9", "a".repeat(64) + "." + "f".repeat(191)}) {
      assertThat(Tables.indexTable(name)).as(name).isTrue();
      assertThat(Tables.checkName(name)).isEqualTo(name);
      assertThatThrownBy(() -> Tables.checkUserName(name)).hasMessageContaining("global index's table");
    }
    assertThat(Tables.indexedTable("cars.owner.id")).isEqualTo("cars");
    assertThat(Tables.indexTable("a".repeat(64) + "." + "f".repeat(192))).as("257 characters").isFalse();
    assertThat(Tables.indexTable("cars")).isFalse();
    assertThat(Tables.checkUserName("cars")).isEqualTo("cars");
  }
}
