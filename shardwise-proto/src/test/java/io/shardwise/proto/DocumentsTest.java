package io.shardwise.proto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.doc.ValueFormat;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DocumentsTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static long refusedAt(String value) {
    try {
      Documents.check(b(value));
    } catch (Documents.NotADocumentException e) {
      return e.byteOffset();
    }
    throw new AssertionError("accepted: " + value);
  }

  @Test
  void oneObjectIsADocument() {
    assertThatCode(() -> Documents.check(b("{}"))).doesNotThrowAnyException();
    assertThatCode(() -> Documents.check(b(" {\"color\": \"red\", \"owner\": {\"id\": 7, \"tags\": [1, 2.5, null, true]}}\n")))
        .doesNotThrowAnyException();
    assertThatCode(() -> Documents.check(b("{\"name\": \"Zoë ☕\"}"))).doesNotThrowAnyException();
  }

  @Test
  void anythingElseIsRefusedWithTheByteWhereItGoesWrong() {
    assertThat(refusedAt("{\"a\": 1,}")).isEqualTo(8);
    assertThat(refusedAt("{\"a\": tru}")).isBetween(6L, 9L);
    assertThat(refusedAt("{\"a\": 1")).isEqualTo(7); // ends inside the object
    assertThat(refusedAt("  [1, 2]")).isEqualTo(2);
    assertThat(refusedAt("{} {}")).isEqualTo(3);
    assertThat(refusedAt("")).isEqualTo(0);
    assertThatThrownBy(() -> Documents.check(b("\"text\""))).hasMessageContaining("a JSON object, not a string");
    assertThatThrownBy(() -> Documents.check(b("[]"))).hasMessageContaining("not an array");
    assertThatThrownBy(() -> Documents.check(b("{} x"))).hasMessageContaining("byte 3");
  }

  @Test
  void bytesThatAreNotUtf8AreRefused() {
    byte[] value = {'{', '"', 'a', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'};
    assertThatThrownBy(() -> Documents.check(value)).isInstanceOf(Documents.NotADocumentException.class);
  }

  @Test
  void nestingIsBounded() {
    String deep = "{\"a\":".repeat(Documents.MAX_DEPTH) + "1" + "}".repeat(Documents.MAX_DEPTH);
    assertThatCode(() -> Documents.check(b(deep))).doesNotThrowAnyException();
    String deeper = "{\"a\":".repeat(Documents.MAX_DEPTH + 1) + "1" + "}".repeat(Documents.MAX_DEPTH + 1);
    assertThatThrownBy(() -> Documents.check(b(deeper))).isInstanceOf(Documents.NotADocumentException.class)
        .hasMessageContaining("depth");
  }

  @Test
  void formatsByName() {
    assertThat(ValueFormat.parse("JSON")).isEqualTo(ValueFormat.JSON);
    assertThat(ValueFormat.parse("bytes")).isEqualTo(ValueFormat.BYTES);
    assertThat(ValueFormat.JSON.label()).isEqualTo("json");
    assertThatThrownBy(() -> ValueFormat.parse("xml")).hasMessageContaining("bytes or json");
  }

  private static boolean matches(String doc, String where) {
    return Documents.matches(b(doc), io.shardwise.core.doc.Where.parse(where));
  }

  @Test
  void conditionsReadFieldsByPathAndCompareLikeWithLike() {
    String car = "{\"color\": \"red\", \"year\": 2021, \"price\": 9999.5, \"sold\": false, \"note\": null,"
        + " \"owner\": {\"id\": 7, \"name\": \"Zoë\"}, \"tags\": [\"a\"]}";
    assertThat(matches(car, "color = 'red' AND year >= 2021 AND year < 2022")).isTrue();
    assertThat(matches(car, "color = 'blue' OR owner.id = 7")).isTrue();
    assertThat(matches(car, "owner.name = 'Zoë' AND price < 10000 AND price > 9999.49")).isTrue();
    assertThat(matches(car, "year = 2021.0")).as("numbers by value").isTrue();
    assertThat(matches(car, "sold = false AND note = null AND color != null")).isTrue();
    assertThat(matches(car, "color > 'blue' AND color < 'silver'")).isTrue();
    assertThat(matches(car, "year = '2021'")).as("a number is not a string").isFalse();
    assertThat(matches(car, "year != '2021'")).as("another kind meets only !=").isTrue();
    assertThat(matches(car, "missing = 1 OR missing < 1 OR owner.id.deeper = 1 OR tags.a = 1")).isFalse();
    assertThat(matches(car, "missing != 1")).isTrue();
  }
}
