package io.shardwise.proto;

import static org.assertj.core.api.Assertions.assertThat;

import io.shardwise.core.doc.IndexValues;
import io.shardwise.core.doc.Where;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An index answers a comparison by a range of encoded values, then checks each row it finds: so it
 * is right exactly when it never misses a row. Over random documents and conditions (strings with
 * zeros and characters beyond U+FFFF, numbers of every size and sign, booleans, null, missing
 * fields, objects): whenever {@link Documents#matches} holds, the row's encoded value lies in the
 * comparison's range; equal values encode equally; and every encoding ends where {@link
 * IndexValues#end} says.
 */
class IndexValuesTest {

  private static final List<Where.Op> OPS = List.of(Where.Op.EQ, Where.Op.LT, Where.Op.LE, Where.Op.GT, Where.Op.GE);

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void aComparisonsRangeHoldsEveryValueThatMeetsIt(long seed) {
    Random random = new Random(seed);
    for (int i = 0; i < 20_000; i++) {
      String json = jsonValue(random);
      byte[] doc = ("{\"f\": " + json + "}").getBytes(StandardCharsets.UTF_8);
      byte[] encoded = Documents.indexValues(doc, List.of(List.of("f")))[0];
      Object literal = literal(random);
      Where.Op op = OPS.get(random.nextInt(OPS.size()));
      Where w = new Where.Compare(List.of("f"), op, literal);
      if (encoded != null) {
        assertThat(IndexValues.end(encoded, 0)).as(json).isEqualTo(encoded.length);
      }
      if (Documents.matches(doc, w)) {
        assertThat(encoded).as("%s meets %s, so it has an entry", json, w).isNotNull();
        assertThat(in(encoded, IndexValues.range(op, literal))).as("%s meets %s: its entry is in the range read", json, w).isTrue();
      }
      // The same value written another way encodes the same.
      if (json.matches("-?\\d+")) {
        byte[] again = Documents.indexValues(("{\"f\": " + json + ".0}").getBytes(StandardCharsets.UTF_8), List.of(List.of("f")))[0];
        assertThat(again).as(json + " and " + json + ".0").isEqualTo(encoded);
      }
    }
  }

  /**
   * {@link Documents#indexValues} reads the indexed paths in one streaming pass; a parsed tree is
   * the oracle: nested objects, arrays, missing fields, and names that repeat (the last counts).
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void theStreamingExtractionAgreesWithAParsedTree(long seed) throws Exception {
    Random random = new Random(seed);
    com.fasterxml.jackson.databind.ObjectMapper trees = new com.fasterxml.jackson.databind.ObjectMapper()
        .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
    List<List<String>> paths = List.of(List.of("a"), List.of("b"), List.of("a", "b"), List.of("c", "a", "b"), List.of("c", "a"));
    for (int i = 0; i < 20_000; i++) {
      String json = object(random, 3);
      byte[] doc = json.getBytes(StandardCharsets.UTF_8);
      byte[][] streamed = Documents.indexValues(doc, paths);
      com.fasterxml.jackson.databind.JsonNode root = trees.readTree(doc);
      for (int p = 0; p < paths.size(); p++) {
        com.fasterxml.jackson.databind.JsonNode node = root;
        for (String name : paths.get(p)) {
          node = node != null && node.isObject() ? node.get(name) : null;
        }
        byte[] expected = node == null || node.isObject() || node.isArray() ? null
            : Documents.indexValues(("{\"v\": " + node.toString() + "}").getBytes(StandardCharsets.UTF_8), List.of(List.of("v")))[0];
        assertThat(streamed[p]).as("%s in %s", paths.get(p), json).isEqualTo(expected);
      }
    }
  }

  /** A random object over the names a, b, c (repeats allowed), nesting at most {@code depth} deep. */
  private static String object(Random random, int depth) {
    StringBuilder b = new StringBuilder("{");
    int n = random.nextInt(5);
    for (int i = 0; i < n; i++) {
      b.append(i == 0 ? "" : ", ").append('"').append("abc".charAt(random.nextInt(3))).append("\": ");
      int kind = random.nextInt(6);
      if (kind == 0 && depth > 0) {
        b.append(object(random, depth - 1));
      } else if (kind == 1) {
        b.append("[1, {\"a\": 2}]");
      } else {
        b.append(jsonValue(random).replace("{\"x\": 1}", "7"));
      }
    }
    return b.append('}').toString();
  }

  private static boolean in(byte[] v, IndexValues.Range r) {
    if (Arrays.compareUnsigned(v, r.low()) < 0) {
      return false;
    }
    int c = Arrays.compareUnsigned(v, r.high());
    return r.highInclusive() ? c <= 0 || (v.length >= r.high().length && Arrays.equals(v, 0, r.high().length, r.high(), 0, r.high().length))
        : c < 0;
  }

  private static String jsonValue(Random random) {
    switch (random.nextInt(8)) {
      case 0:
        return "null";
      case 1:
        return random.nextBoolean() ? "true" : "false";
      case 2:
      case 3:
        return number(random).toPlainString();
      case 4:
        return "{\"x\": 1}";
      default:
        return "\"" + escape(string(random)) + "\"";
    }
  }

  private static Object literal(Random random) {
    switch (random.nextInt(6)) {
      case 0:
        return Where.NULL;
      case 1:
        return random.nextBoolean();
      case 2:
      case 3:
        return number(random);
      default:
        return string(random);
    }
  }

  private static BigDecimal number(Random random) {
    switch (random.nextInt(5)) {
      case 0:
        return BigDecimal.valueOf(random.nextInt(7) - 3);
      case 1:
        return BigDecimal.valueOf(random.nextLong());
      case 2:
        return new BigDecimal(random.nextInt(2000) - 1000).movePointLeft(random.nextInt(4));
      case 3:
        return BigDecimal.valueOf(Long.MAX_VALUE).add(BigDecimal.valueOf(random.nextInt(3))); // beyond a double's exact integers
      default:
        return new BigDecimal("1e" + (random.nextInt(40) - 20)).negate();
    }
  }

  private static final int[] CODE_POINTS = {0, 1, 'a', 'b', 'z', 0x7f, 0xe9, 0x2603, 0xfffd, 0xffff, 0x1f697, 0x10ffff};

  private static String string(Random random) {
    StringBuilder b = new StringBuilder();
    int n = random.nextInt(4);
    for (int i = 0; i < n; i++) {
      b.appendCodePoint(CODE_POINTS[random.nextInt(CODE_POINTS.length)]);
    }
    return b.toString();
  }

  private static String escape(String s) {
    StringBuilder b = new StringBuilder();
    s.codePoints().forEach(cp -> {
      if (cp < 0x20 || cp == '"' || cp == '\\') {
        b.append(String.format("\\u%04x", cp));
      } else {
        b.appendCodePoint(cp);
      }
    });
    return b.toString();
  }
}
