package io.shardwise.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Locale;

/**
 * How a value is shown ({@code kv get/scan --format}) or given ({@code kv put --format}).
 *
 * <ul>
 *   <li>{@code text}: UTF-8 text; shown with every byte that is not printable UTF-8 escaped as
 *       {@code \xHH} (and {@code \n}, {@code \r}, {@code \t}, {@code \\}), the way redis-cli does, so
 *       nothing unprintable reaches the terminal and nothing is lost;
 *   <li>{@code hex}, {@code base64}: the bytes in that encoding;
 *   <li>{@code raw}: the bytes as they are (output only: for files and pipes).
 * </ul>
 */
enum ValueFormat {
  text, hex, base64, raw;

  /** The bytes of {@code value} given on the command line in this format. */
  byte[] parse(String value) {
    return switch (this) {
      case text -> value.getBytes(StandardCharsets.UTF_8);
      case hex -> {
        try {
          yield HexFormat.of().parseHex(value.startsWith("0x") ? value.substring(2) : value);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("the value is not hex (two digits per byte, 0-9 a-f): " + e.getMessage(), e);
        }
      }
      case base64 -> {
        try {
          yield Base64.getDecoder().decode(value);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("the value is not base64: " + e.getMessage(), e);
        }
      }
      case raw -> throw new IllegalArgumentException("--format raw is for output; give a value as text, hex or base64, or with --value-file");
    };
  }

  /** {@code bytes} for a terminal or a table cell ({@code raw}: decoded as UTF-8 as it is, for a stream of bytes use {@link #isRaw}). */
  String render(byte[] bytes) {
    return switch (this) {
      case text -> escaped(bytes);
      case hex -> HexFormat.of().formatHex(bytes);
      case base64 -> Base64.getEncoder().encodeToString(bytes);
      case raw -> new String(bytes, StandardCharsets.UTF_8);
    };
  }

  boolean isRaw() {
    return this == raw;
  }

  /**
   * Puts {@code bytes} into a JSON object without losing any: as {@code field} when they are UTF-8
   * text, else as {@code field_base64}.
   */
  static void putJson(ObjectNode o, String field, byte[] bytes) {
    if (isUtf8(bytes)) {
      o.put(field, new String(bytes, StandardCharsets.UTF_8));
    } else {
      o.put(field + "_base64", Base64.getEncoder().encodeToString(bytes));
    }
  }

  static boolean isUtf8(byte[] bytes) {
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  /** Printable UTF-8 as it is; every other byte as an escape. */
  static String escaped(byte[] bytes) {
    StringBuilder out = new StringBuilder(bytes.length + 8);
    int i = 0;
    while (i < bytes.length) {
      int b = bytes[i] & 0xff;
      int length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
      if (length == 1) {
        switch (b) {
          case '\n' -> out.append("\\n");
          case '\r' -> out.append("\\r");
          case '\t' -> out.append("\\t");
          case '\\' -> out.append("\\\\");
          default -> {
            if (b < 0x20 || b == 0x7f) {
              out.append(String.format(Locale.ROOT, "\\x%02x", b));
            } else {
              out.append((char) b);
            }
          }
        }
        i++;
        continue;
      }
      String decoded = length == 0 || i + length > bytes.length ? null : decode(bytes, i, length);
      if (decoded == null || Character.isISOControl(decoded.codePointAt(0))) {
        out.append(String.format(Locale.ROOT, "\\x%02x", b));
        i++;
      } else {
        out.append(decoded);
        i += length;
      }
    }
    return out.toString();
  }

  private static String decode(byte[] bytes, int offset, int length) {
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes, offset, length)).toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }
}
