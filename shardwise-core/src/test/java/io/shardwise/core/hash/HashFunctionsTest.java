package io.shardwise.core.hash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Known-answer vectors for every hash function, computed by independent implementations: Python's
 * hashlib (MD5, BLAKE2b), python-xxhash (XXH64), a JavaScript MurmurHash3
 * (murmurhash3js-revisited) and FNV-1a written from its specification.
 */
class HashFunctionsTest {

  /** "", "a", "abc", "hello", the fox sentence, "user-000042", and bytes ff 80 00 7f c3 a9. */
  private static final List<byte[]> INPUTS =
      List.of(
          new byte[0],
          utf8("a"),
          utf8("abc"),
          utf8("hello"),
          utf8("The quick brown fox jumps over the lazy dog"),
          utf8("user-000042"),
          new byte[] {(byte) 0xff, (byte) 0x80, 0x00, 0x7f, (byte) 0xc3, (byte) 0xa9});

  /** Expected value (hex, unsigned) per input, by registered function name. */
  static final Map<String, List<String>> KNOWN_ANSWERS = new LinkedHashMap<>();

  static {
    KNOWN_ANSWERS.put("murmur3-32", List.of("0", "3c2569b2", "b3dd93fa", "248bfa47", "2e4ff723", "49d50ed9", "f27f252c"));
    KNOWN_ANSWERS.put(
        "murmur3-128",
        List.of("0", "85555565f6597889", "b4963f3f3fad7867", "cbd8a7b341bd9b02", "e34bbc7bbc071b6c", "3ece86f5b08a8785", "a0b8346808d8a121"));
    KNOWN_ANSWERS.put(
        "xxhash64",
        List.of("ef46db3751d8e999", "d24ec4f1a98c6e5b", "44bc2cf5ad770999", "26c7827d889f6da3", "0b242d361fda71bc", "cce18e9d972caf6e", "5815c7a37d93ba81"));
    KNOWN_ANSWERS.put(
        "md5",
        List.of("d41d8cd98f00b204", "0cc175b9c0f1b6a8", "900150983cd24fb0", "5d41402abc4b2a76", "9e107d9d372bb682", "03a63d54307c60ca", "971607ac69338f2f"));
    KNOWN_ANSWERS.put("fnv1a-32", List.of("811c9dc5", "e40c292c", "1a47e90b", "4f9f2cab", "048fff90", "6144743b", "9021421b"));
    KNOWN_ANSWERS.put(
        "fnv1a-64",
        List.of("cbf29ce484222325", "af63dc4c8601ec8c", "e71fa2190541574b", "a430d84680aabd0b", "f3f9b7f5e7e47110", "fbe882d16039e25b", "6770523c53c919fb"));
    KNOWN_ANSWERS.put("blake2b-32", List.of("1271cf25", "ca234c55", "63906248", "ea6706f7", "f1d38416", "2e477b83", "3fac3be6"));
    // Other digest sizes of blake2b-N.
    KNOWN_ANSWERS.put(
        "blake2b-64",
        List.of("e4a6a0577479b2b4", "40f89e395b66422f", "d8bb14d833d59559", "a7b6eda801e5347d", "4c4531b978d589f8", "9f53ddafb223c656", "1eddd3dde979740f"));
    KNOWN_ANSWERS.put(
        "blake2b-256",
        List.of("0e5751c026e543b2", "8928aae63c84d87e", "bddd813c63423972", "324dcf027dd4a30a", "01718cec35cd3d79", "8aa57b6eb3767e4d", "1a799648512d6f43"));
  }

  @Test
  void everyRegisteredFunctionHasKnownAnswers() {
    for (HashFunction f : HashFunctions.registered()) {
      assertThat(KNOWN_ANSWERS).as("known-answer vectors for %s", f.name()).containsKey(f.name());
    }
  }

  @Test
  void everyFunctionGivesItsKnownAnswers() {
    KNOWN_ANSWERS.forEach(
        (name, expected) -> {
          HashFunction f = HashFunctions.byName(name);
          assertThat(f.name()).isEqualTo(name);
          for (int i = 0; i < INPUTS.size(); i++) {
            assertThat(Long.toHexString(f.hash(INPUTS.get(i))))
                .as("%s of input %d", name, i)
                .isEqualTo(expected.get(i).replaceFirst("^0+(?=.)", ""));
          }
        });
  }

  /** Two libraries, one function: our murmur3-128 is h1 of Guava's MurmurHash3_x64_128. */
  @Test
  void murmur3_128AgreesWithGuavaOnRandomInputs() {
    io.shardwise.core.util.SplitMix64 random = new io.shardwise.core.util.SplitMix64(20261129);
    for (int i = 0; i < 2_000; i++) {
      byte[] input = new byte[random.nextInt(100)];
      for (int j = 0; j < input.length; j++) {
        input[j] = (byte) random.nextLong();
      }
      assertThat(HashFunctions.murmur3_128().hash(input))
          .isEqualTo(com.google.common.hash.Hashing.murmur3_128().hashBytes(input).asLong());
    }
  }

  @Test
  void hashingASliceEqualsHashingItsCopy() {
    byte[] padded = utf8("xxhelloyy");
    for (HashFunction f : HashFunctions.registered()) {
      assertThat(f.hash(padded, 2, 5)).as(f.name()).isEqualTo(f.hash(utf8("hello")));
    }
  }

  @Test
  void valuesStayWithinTheDeclaredWidth() {
    for (String name : KNOWN_ANSWERS.keySet()) {
      HashFunction f = HashFunctions.byName(name);
      for (byte[] input : INPUTS) {
        assertThat(Long.compareUnsigned(f.hash(input), f.maxValue())).as(name).isLessThanOrEqualTo(0);
      }
    }
    assertThat(HashFunctions.murmur3_32().maxValue()).isEqualTo(0xffffffffL);
    assertThat(HashFunctions.md5().maxValue()).isEqualTo(-1L);
  }

  @Test
  void namesAreCaseInsensitiveAndTheDefaultIsMurmur3_128() {
    assertThat(HashFunctions.byName("MURMUR3-128")).isSameAs(HashFunctions.murmur3_128());
    assertThat(HashFunctions.defaultFunction().name()).isEqualTo("murmur3-128");
    assertThat(HashFunctions.byName("blake2b-32")).isSameAs(HashFunctions.blake2b(32));
  }

  @ParameterizedTest
  @ValueSource(strings = {"crc32", "murmur3", "blake2b-0", "blake2b-7", "blake2b-520", ""})
  void unknownNamesAreRejectedWithTheValidChoices(String name) {
    assertThatThrownBy(() -> HashFunctions.byName(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("murmur3-128")
        .hasMessageContaining("blake2b");
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
