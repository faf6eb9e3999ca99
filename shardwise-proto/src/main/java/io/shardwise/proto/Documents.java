package io.shardwise.proto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.shardwise.core.doc.ValueFormat;
import java.io.IOException;

/**
 * JSON documents as a table of format {@link ValueFormat#JSON} holds them: each value is one JSON
 * object in UTF-8, nothing before or after it but whitespace. {@link #check} is what every write to
 * such a table passes; a value it refuses is not written, and the refusal names the byte where the
 * value stops being a document.
 */
public final class Documents {

  /** How deep objects and arrays may nest in a document. */
  public static final int MAX_DEPTH = 64;

  private static final JsonFactory JSON = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
      .build();

  private Documents() {}

  /** A value that is not a document: why, and at which byte of the value (0-based). */
  public static final class NotADocumentException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final long byteOffset;

    NotADocumentException(String why, long byteOffset) {
      super("not a JSON document at byte " + byteOffset + ": " + why);
      this.byteOffset = byteOffset;
    }

    public long byteOffset() {
      return byteOffset;
    }
  }

  /**
   * Checks that {@code value} is one JSON object, reading it once without building it.
   *
   * @throws NotADocumentException if it is not: malformed JSON, another kind of value (an array, a
   *     string...), more than one value, nesting deeper than {@link #MAX_DEPTH}, or not UTF-8
   */
  public static void check(byte[] value) {
    try (JsonParser p = JSON.createParser(value)) {
      JsonToken first = p.nextToken();
      if (first == null) {
        throw new NotADocumentException("the value is empty; a document is a JSON object", value.length);
      }
      if (first != JsonToken.START_OBJECT) {
        throw new NotADocumentException("a document is a JSON object, not " + describe(first), offset(p));
      }
      p.skipChildren();
      JsonToken after = p.nextToken();
      if (after != null) {
        throw new NotADocumentException("a document is one JSON object; another value follows it", offset(p));
      }
    } catch (JsonParseException e) {
      long at = e.getLocation() == null ? -1 : e.getLocation().getByteOffset();
      throw new NotADocumentException(plain(e.getOriginalMessage()), Math.max(0, at));
    } catch (IOException e) {
      throw new NotADocumentException(e.getMessage(), 0);
    }
  }

  /** The parser's message without its note on where the enclosing object began (which names no byte). */
  private static String plain(String message) {
    int at = message.indexOf(" (start marker at ");
    return at < 0 ? message : message.substring(0, at);
  }

  private static long offset(JsonParser p) {
    return Math.max(0, p.currentTokenLocation().getByteOffset());
  }

  private static String describe(JsonToken t) {
    switch (t) {
      case START_ARRAY:
        return "an array";
      case VALUE_STRING:
        return "a string";
      case VALUE_NUMBER_INT:
      case VALUE_NUMBER_FLOAT:
        return "a number";
      case VALUE_TRUE:
      case VALUE_FALSE:
        return "a boolean";
      case VALUE_NULL:
        return "null";
      default:
        return t.toString();
    }
  }
}
