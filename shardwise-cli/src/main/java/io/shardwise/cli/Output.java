package io.shardwise.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.List;

/** Printing results: aligned text tables and JSON. */
final class Output {

  static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private Output() {}

  static ObjectNode object() {
    return JSON.createObjectNode();
  }

  static void json(PrintWriter out, Object node) {
    try {
      out.println(JSON.writeValueAsString(node));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code n} and the noun, singular or plural: "1 shard", "768 shards". */
  static String count(long n, String noun) {
    return String.format(java.util.Locale.ROOT, "%,d %s", n, n == 1 ? noun : noun + "s");
  }

  /** A number with thousands separators: 1,204. */
  static String number(long n) {
    return String.format(java.util.Locale.ROOT, "%,d", n);
  }

  /** Left-aligned columns, two spaces apart. */
  static void table(PrintWriter out, List<String> header, List<List<String>> rows) {
    int[] widths = new int[header.size()];
    for (int i = 0; i < widths.length; i++) {
      widths[i] = header.get(i).length();
      for (List<String> row : rows) {
        widths[i] = Math.max(widths[i], row.get(i).length());
      }
    }
    printRow(out, header, widths);
    for (List<String> row : rows) {
      printRow(out, row, widths);
    }
  }

  private static void printRow(PrintWriter out, List<String> cells, int[] widths) {
    StringBuilder line = new StringBuilder();
    for (int i = 0; i < cells.size(); i++) {
      if (i > 0) {
        line.append("  ");
      }
      line.append(cells.get(i));
      if (i < cells.size() - 1) {
        line.append(" ".repeat(widths[i] - cells.get(i).length()));
      }
    }
    out.println(line);
  }
}
