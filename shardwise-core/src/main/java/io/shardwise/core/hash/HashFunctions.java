package io.shardwise.core.hash;

import com.google.common.hash.Hashing;
import java.util.List;
import net.openhft.hashing.LongHashFunction;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The registry of hash functions placement may use, by the names users type.
 *
 * <table>
 *   <caption>Registered functions and the bits they return</caption>
 *   <tr><th>name</th><th>bits</th><th>value</th></tr>
 *   <tr><td>{@code murmur3-32}</td><td>32</td><td>MurmurHash3_x86_32, seed 0 (the usual integer
 *       result)</td></tr>
 *   <tr><td>{@code murmur3-128}</td><td>64</td><td>h1 (the first 64-bit word) of
 *       MurmurHash3_x64_128, seed 0</td></tr>
 *   <tr><td>{@code xxhash64}</td><td>64</td><td>XXH64, seed 0</td></tr>
 *   <tr><td>{@code md5}</td><td>64</td><td>the first 8 digest bytes, big-endian</td></tr>
 *   <tr><td>{@code fnv1a-32}, {@code fnv1a-64}</td><td>32, 64</td><td>FNV-1a</td></tr>
 *   <tr><td>{@code blake2b-N}</td><td>min(N, 64)</td><td>a BLAKE2b digest of N bits, big-endian;
 *       {@code blake2b-32} is the registered default size</td></tr>
 * </table>
 *
 * <p>Thread-safe; every function returned is immutable.
 */
public final class HashFunctions {

  /** The default for new tables and for {@code simulate}. */
  public static final String DEFAULT_NAME = "murmur3-128";

  private static final Pattern BLAKE2B = Pattern.compile("blake2b-(\\d{1,3})");

  private static final HashFunction MURMUR3_32 =
      new GuavaHash("murmur3-32", 32, Hashing.murmur3_32_fixed(), GuavaHash.Reading.INT_LITTLE_ENDIAN);
  // zero-allocation-hashing's murmur_3() is h1 of MurmurHash3_x64_128 (the value Guava's
  // murmur3_128().asLong() gives) without the allocations Guava's Hasher makes on every call.
  private static final HashFunction MURMUR3_128 = new OpenHftHash("murmur3-128", LongHashFunction.murmur_3());
  private static final HashFunction XXHASH64 = new OpenHftHash("xxhash64", LongHashFunction.xx());
  @SuppressWarnings("deprecation") // MD5 is used for placement, never for security.
  private static final HashFunction MD5 =
      new GuavaHash("md5", 64, Hashing.md5(), GuavaHash.Reading.LONG_BIG_ENDIAN);
  private static final HashFunction FNV1A_32 = new Fnv1a(32);
  private static final HashFunction FNV1A_64 = new Fnv1a(64);
  private static final HashFunction BLAKE2B_32 = new Blake2b(32);

  private static final List<HashFunction> REGISTERED =
      List.of(MURMUR3_32, MURMUR3_128, XXHASH64, MD5, FNV1A_32, FNV1A_64, BLAKE2B_32);

  private HashFunctions() {}

  public static HashFunction murmur3_32() {
    return MURMUR3_32;
  }

  public static HashFunction murmur3_128() {
    return MURMUR3_128;
  }

  public static HashFunction xxhash64() {
    return XXHASH64;
  }

  public static HashFunction md5() {
    return MD5;
  }

  public static HashFunction fnv1a32() {
    return FNV1A_32;
  }

  public static HashFunction fnv1a64() {
    return FNV1A_64;
  }

  /**
   * BLAKE2b with a digest of {@code digestBits} bits.
   *
   * @throws IllegalArgumentException unless {@code digestBits} is a multiple of 8 in [8, 512]
   */
  public static HashFunction blake2b(int digestBits) {
    return digestBits == 32 ? BLAKE2B_32 : new Blake2b(digestBits);
  }

  /** The default function, {@value #DEFAULT_NAME}. */
  public static HashFunction defaultFunction() {
    return MURMUR3_128;
  }

  /** Every registered function; {@code blake2b-N} appears once, as {@code blake2b-32}. */
  public static List<HashFunction> registered() {
    return REGISTERED;
  }

  /** The names {@link #byName} accepts, for error messages and help. */
  public static String validNames() {
    return "murmur3-32, murmur3-128, xxhash64, md5, fnv1a-32, fnv1a-64, blake2b-32 (or blake2b-N, N a"
        + " multiple of 8 from 8 to 512)";
  }

  /**
   * The function with this name (case-insensitive).
   *
   * @throws IllegalArgumentException naming the valid choices when the name is unknown
   */
  public static HashFunction byName(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    for (HashFunction function : REGISTERED) {
      if (function.name().equals(lower)) {
        return function;
      }
    }
    Matcher blake = BLAKE2B.matcher(lower);
    if (blake.matches()) {
      try {
        return blake2b(Integer.parseInt(blake.group(1)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(e.getMessage() + "; valid hashes: " + validNames(), e);
      }
    }
    throw new IllegalArgumentException(
        "unknown hash '" + name + "'; valid hashes: " + validNames());
  }
}
