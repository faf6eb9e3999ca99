package io.shardwise.proto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.shardwise.core.doc.ValueFormat;
import java.io.IOException;
import java.util.List;

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

  private static final com.fasterxml.jackson.databind.ObjectMapper TREES = new com.fasterxml.jackson.databind.ObjectMapper(JSON)
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  private Documents() {}

  /**
   * True if {@code document} (a value of a JSON table, so one JSON object) meets {@code where}: a
   * comparison reads the field at its path (objects only: a path through an array or a scalar finds
   * nothing) and compares it with the literal if both are of one kind — strings by their UTF-16
   * order, numbers by value, booleans false before true, null only equal to null; a missing field, or
   * one of another kind, meets only {@code !=}.
   *
   * @throws NotADocumentException if {@code document} is not one (a table's values always are)
   */
  public static boolean matches(byte[] document, io.shardwise.core.doc.Where where) {
    com.fasterxml.jackson.databind.JsonNode root;
    try {
      root = TREES.readTree(document);
    } catch (IOException e) {
      throw new NotADocumentException(e.getMessage(), 0);
    }
    return matches(root, where);
  }

  private static boolean matches(com.fasterxml.jackson.databind.JsonNode root, io.shardwise.core.doc.Where where) {
    if (where instanceof io.shardwise.core.doc.Where.And and) {
      return and.parts().stream().allMatch(p -> matches(root, p));
    }
    if (where instanceof io.shardwise.core.doc.Where.Or or) {
      return or.parts().stream().anyMatch(p -> matches(root, p));
    }
    io.shardwise.core.doc.Where.Compare c = (io.shardwise.core.doc.Where.Compare) where;
    com.fasterxml.jackson.databind.JsonNode node = root;
    for (String name : c.path()) {
      node = node != null && node.isObject() ? node.get(name) : null;
    }
    Integer order = compare(node, c.value());
    return order == null ? c.op() == io.shardwise.core.doc.Where.Op.NE : c.op().holds(order);
  }

  /** The field's order against the literal, or null if they are not of one kind (or the field is missing). */
  private static Integer compare(com.fasterxml.jackson.databind.JsonNode node, Object literal) {
    if (node == null || node.isMissingNode()) {
      return null;
    }
    if (literal == io.shardwise.core.doc.Where.NULL) {
      return node.isNull() ? 0 : null;
    }
    if (literal instanceof String s && node.isTextual()) {
      return compareCodePoints(node.textValue(), s);
    }
    if (literal instanceof java.math.BigDecimal d && node.isNumber()) {
      return node.decimalValue().compareTo(d);
    }
    if (literal instanceof Boolean b && node.isBoolean()) {
      return Boolean.compare(node.booleanValue(), b);
    }
    return null;
  }

  /**
   * Strings in code point order, which is their UTF-8 bytes' order and so an index's
   * ({@link io.shardwise.core.doc.IndexValues}); Java's {@code compareTo} orders UTF-16 units, which
   * differs for characters beyond U+FFFF.
   */
  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int x = a.codePointAt(i);
      int y = b.codePointAt(j);
      if (x != y) {
        return x < y ? -1 : 1;
      }
      i += Character.charCount(x);
      j += Character.charCount(y);
    }
    return Integer.signum((a.length() - i) - (b.length() - j));
  }

  /**
   * The index encodings ({@link io.shardwise.core.doc.IndexValues}) of the fields at {@code paths}
   * in {@code document}, in order: null where a field is missing or holds an object or an array
   * (such a field is not indexed; no comparison an index serves holds for it).
   *
   * @throws NotADocumentException if {@code document} is not JSON
   */
  public static byte[][] indexValues(byte[] document, List<List<String>> paths) {
    // One streaming pass that looks only at the indexed paths (no tree of the whole document): a
    // write of an indexed row extracts its old and its new values on every write.
    PathNode root = new PathNode();
    for (int i = 0; i < paths.size(); i++) {
      PathNode n = root;
      for (String name : paths.get(i)) {
        n = n.children.computeIfAbsent(name, k -> new PathNode());
      }
      n.outputs.add(i);
    }
    byte[][] out = new byte[paths.size()][];
    try (JsonParser p = JSON.createParser(document)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new NotADocumentException("a document is a JSON object", 0);
      }
      walk(p, root, out);
    } catch (IOException e) {
      throw new NotADocumentException(e.getMessage(), 0);
    }
    return out;
  }

  /** The indexed paths below one object, as a tree of names; {@code outputs}: the paths that end here. */
  private static final class PathNode {
    final java.util.Map<String, PathNode> children = new java.util.HashMap<>();
    final List<Integer> outputs = new java.util.ArrayList<>(1);

    void clear(byte[][] out) {
      outputs.forEach(i -> out[i] = null);
      children.values().forEach(c -> c.clear(out));
    }
  }

  /**
   * Reads the object whose START_OBJECT {@code p} has just read, setting the values of the paths
   * under {@code node}. A name that repeats counts by its last value, as a parsed tree keeps it.
   */
  private static void walk(JsonParser p, PathNode node, byte[][] out) throws IOException {
    for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
      PathNode child = node.children.get(p.currentName());
      JsonToken value = p.nextToken();
      if (child == null) {
        p.skipChildren();
        continue;
      }
      child.clear(out); // a later value of the same name replaces all an earlier one set
      if (value == JsonToken.START_OBJECT) {
        walk(p, child, out); // an object is no indexed value itself: the paths ending here stay null
      } else if (value == JsonToken.START_ARRAY) {
        p.skipChildren();
      } else {
        byte[] v = scalar(p, value);
        child.outputs.forEach(i -> out[i] = v);
      }
    }
  }

  private static byte[] scalar(JsonParser p, JsonToken t) throws IOException {
    switch (t) {
      case VALUE_NULL:
        return io.shardwise.core.doc.IndexValues.encode(io.shardwise.core.doc.Where.NULL);
      case VALUE_TRUE:
        return io.shardwise.core.doc.IndexValues.encode(Boolean.TRUE);
      case VALUE_FALSE:
        return io.shardwise.core.doc.IndexValues.encode(Boolean.FALSE);
      case VALUE_NUMBER_INT:
        return io.shardwise.core.doc.IndexValues.number(p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
            ? new java.math.BigDecimal(p.getBigIntegerValue()).doubleValue() : (double) p.getLongValue());
      case VALUE_NUMBER_FLOAT:
        return io.shardwise.core.doc.IndexValues.number(p.getDecimalValue().doubleValue()); // exact decimal, then rounded once
      case VALUE_STRING:
        return io.shardwise.core.doc.IndexValues.string(p.getText());
      default:
        return null;
    }
  }

  /**
   * {@code document} with only the fields at {@code paths} (each kept with the objects above it; a
   * path through a non-object, or to nothing, is left out), as compact JSON: what a projected query
   * answers, and what a covering index's entry holds.
   *
   * @throws NotADocumentException if {@code document} is not one
   */
  public static byte[] project(byte[] document, List<List<String>> paths) {
    com.fasterxml.jackson.databind.JsonNode root;
    try {
      root = TREES.readTree(document);
    } catch (IOException e) {
      throw new NotADocumentException(e.getMessage(), 0);
    }
    com.fasterxml.jackson.databind.node.ObjectNode out = TREES.createObjectNode();
    for (List<String> path : paths) {
      com.fasterxml.jackson.databind.JsonNode node = root;
      for (String name : path) {
        node = node != null && node.isObject() ? node.get(name) : null;
      }
      if (node == null) {
        continue;
      }
      com.fasterxml.jackson.databind.node.ObjectNode at = out;
      for (int i = 0; i < path.size() - 1; i++) {
        com.fasterxml.jackson.databind.JsonNode next = at.get(path.get(i));
        at = next instanceof com.fasterxml.jackson.databind.node.ObjectNode o ? o : at.putObject(path.get(i));
      }
      at.set(path.get(path.size() - 1), node);
    }
    try {
      return TREES.writeValueAsBytes(out);
    } catch (IOException e) {
      throw new IllegalStateException("a projection of a parsed document could not be written", e);
    }
  }

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
