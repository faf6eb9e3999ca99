package io.shardwise.core.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

class KeyGeneratorsTest {

  private static List<String> all(KeySource source) {
    List<String> out = new ArrayList<>();
    source.forEach(k -> out.add(new String(k, StandardCharsets.UTF_8)));
    return out;
  }

  @Test
  void patternsFormatConsecutiveNumbersFromStart() {
    assertThat(all(KeyGenerators.pattern("user-%06d", 3, 41))).containsExactly("user-000041", "user-000042", "user-000043");
    assertThat(all(KeyGenerators.byName("key-%02d", 2, 1, 0))).containsExactly("key-01", "key-02");
  }

  @Property(tries = 3000, seed = "20261129")
  void theFastPatternPathFormatsExactlyAsStringFormat(
      @ForAll("patterns") String pattern, @ForAll @LongRange(min = -2_000_000, max = Long.MAX_VALUE) long n) {
    assertThat(KeyGenerators.integerFormat(pattern).apply(n)).isEqualTo(String.format(Locale.ROOT, pattern, n));
  }

  @Provide
  Arbitrary<String> patterns() {
    return Arbitraries.of("user-%06d", "%d", "k%d-x", "%012d", "%5d!", "a%1d", "%%d%d", "id:%,d", "%x", "o-%08X", "%-6d|");
  }

  @Test
  void sourcesAreReReadableAndDeterministic() {
    for (String shape : List.of("uuid", "timestamp", "zipf", "k%d")) {
      KeySource a = KeyGenerators.byName(shape, 500, 0, 9);
      assertThat(all(a)).as(shape).hasSize(500).isEqualTo(all(a)).isEqualTo(all(KeyGenerators.byName(shape, 500, 0, 9)));
    }
    assertThat(all(KeyGenerators.uuid(5, 1))).isNotEqualTo(all(KeyGenerators.uuid(5, 2)));
  }

  @Test
  void uuidsAreVersion4() {
    for (String u : all(KeyGenerators.uuid(100, 3))) {
      assertThat(u).matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    }
  }

  @Test
  void timestampsStrictlyIncrease() {
    List<String> ts = all(KeyGenerators.timestamp(1000, 4));
    assertThat(ts.get(0)).startsWith("2026-01-01T00:00:0");
    for (int i = 1; i < ts.size(); i++) {
      assertThat(ts.get(i)).isGreaterThan(ts.get(i - 1));
    }
  }

  @Test
  void zipfMakesTheFirstItemsHot() {
    Map<String, Integer> counts = new HashMap<>();
    all(KeyGenerators.zipf(100_000, 0.99, 5)).forEach(k -> counts.merge(k, 1, Integer::sum));
    int top = counts.getOrDefault("item-00000000", 0);
    int second = counts.getOrDefault("item-00000001", 0);
    // Item 0 draws about 1/zeta(n) = ~8% of 100k; item 1 about half of that.
    assertThat(top).isBetween(6_000, 10_000);
    assertThat(second).isBetween(top / 3, (int) (top * 0.7));
    assertThat(counts.size()).isLessThan(100_000);
  }

  @Test
  void badArgumentsAreRejectedWithTheValidShapes() {
    assertThatThrownBy(() -> KeyGenerators.pattern("user-%s-%s", 3, 0))
        .hasMessageContaining("must format one integer")
        .hasMessageContaining("uuid, timestamp, zipf");
    assertThatThrownBy(() -> KeyGenerators.pattern("user", 3, 0)).hasMessageContaining("has no conversion");
    assertThatThrownBy(() -> KeyGenerators.uuid(-1, 0)).hasMessageContaining("must not be negative");
  }
}
