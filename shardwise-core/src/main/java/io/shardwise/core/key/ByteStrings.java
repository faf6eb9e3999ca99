package io.shardwise.core.key;

import java.nio.charset.StandardCharsets;

/** Helpers for byte strings used as keys. Stateless. */
public final class ByteStrings {

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private ByteStrings() {}

  /** UTF-8 bytes of {@code s}. */
  public static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A readable rendering: the text itself when every byte is printable ASCII, otherwise
   * {@code 0x} followed by lowercase hex.
   */
  public static String toDisplay(byte[] bytes) {
    boolean printable = true;
    for (byte b : bytes) {
      if (b < 0x20 || b > 0x7e) {
        printable = false;
        break;
      }
    }
    if (printable) {
      return new String(bytes, StandardCharsets.US_ASCII);
    }
    StringBuilder out = new StringBuilder(2 + 2 * bytes.length).append("0x");
    for (byte b : bytes) {
      out.append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
    }
    return out.toString();
  }
}
