package io.shardwise.core.doc;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A query's condition on documents' fields, as {@code shardwise query T --where "..."} writes it:
 *
 * <pre>
 *   color = 'red' AND make = 'ford'
 *   year >= 2020 AND (owner.id = 7 OR owner.id = 9)
 *   sold = false OR price &lt; 10000.5
 * </pre>
 *
 * Comparisons ({@code = != < <= > >=}) of a field path (names joined by dots, each a letter or
 * {@code _} then letters, digits and {@code _}; a name in double quotes may hold anything) with a
 * literal: a string in single quotes ({@code ''} for a quote), a number, {@code true}, {@code false}
 * or {@code null}; joined by {@code AND} and {@code OR} (AND binds tighter; any case), grouped by
 * parentheses. A field that is missing, or holds a value of another kind than the literal, matches
 * no comparison but {@code !=}. Immutable; {@link #toString} prints it back in full parentheses.
 */
public abstract sealed class Where permits Where.Compare, Where.And, Where.Or {

  /** The longest condition {@link #parse} reads, in characters. */
  public static final int MAX_LENGTH = 4_096;
  /** The most comparisons one condition may hold. */
  public static final int MAX_COMPARISONS = 64;
  /** The deepest a field path may go. */
  public static final int MAX_PATH = 16;

  private Where() {}

  /** The field paths this condition reads, each once, in the order they first appear. */
  public java.util.Set<List<String>> paths() {
    java.util.Set<List<String>> out = new java.util.LinkedHashSet<>();
    collect(this, out);
    return out;
  }

  private static void collect(Where w, java.util.Set<List<String>> out) {
    if (w instanceof Compare c) {
      out.add(c.path());
    } else if (w instanceof And and) {
      and.parts().forEach(p -> collect(p, out));
    } else {
      ((Or) w).parts().forEach(p -> collect(p, out));
    }
  }

  /** A comparison's operator. */
  public enum Op {
    EQ("="), NE("!="), LT("<"), LE("<="), GT(">"), GE(">=");

    private final String symbol;

    Op(String symbol) {
      this.symbol = symbol;
    }

    public String symbol() {
      return symbol;
    }

    /** Whether a comparison's result {@code c} (as {@link Comparable#compareTo}) satisfies this operator. */
    public boolean holds(int c) {
      switch (this) {
        case EQ:
          return c == 0;
        case NE:
          return c != 0;
        case LT:
          return c < 0;
        case LE:
          return c <= 0;
        case GT:
          return c > 0;
        default:
          return c >= 0;
      }
    }
  }

  /**
   * A literal: a {@link String}, a {@link java.math.BigDecimal} (numbers compare by value: 1 = 1.0),
   * a {@link Boolean}, or {@link #NULL}.
   */
  public static final Object NULL = new Object() {
    @Override
    public String toString() {
      return "null";
    }
  };

  /** {@code path op value}. */
  public static final class Compare extends Where {
    private final List<String> path;
    private final Op op;
    private final Object value;

    public Compare(List<String> path, Op op, Object value) {
      if (path.isEmpty() || path.size() > MAX_PATH) {
        throw new IllegalArgumentException("a field path has 1 to " + MAX_PATH + " names, not " + path.size());
      }
      this.path = List.copyOf(path);
      this.op = Objects.requireNonNull(op);
      this.value = Objects.requireNonNull(value);
      if (value != NULL && !(value instanceof String) && !(value instanceof java.math.BigDecimal) && !(value instanceof Boolean)) {
        throw new IllegalArgumentException("a literal is a string, a number, a boolean or null, not " + value.getClass().getSimpleName());
      }
    }

    public List<String> path() {
      return path;
    }

    public Op op() {
      return op;
    }

    public Object value() {
      return value;
    }

    @Override
    public String toString() {
      StringBuilder b = new StringBuilder();
      for (String name : path) {
        if (b.length() > 0) {
          b.append('.');
        }
        b.append(name.matches("[A-Za-z_][A-Za-z0-9_]*") && !keyword(name) ? name : "\"" + name.replace("\"", "\"\"") + "\"");
      }
      b.append(' ').append(op.symbol()).append(' ');
      if (value instanceof String) {
        b.append('\'').append(((String) value).replace("'", "''")).append('\'');
      } else if (value instanceof java.math.BigDecimal) {
        b.append(((java.math.BigDecimal) value).toPlainString());
      } else {
        b.append(value);
      }
      return b.toString();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Compare c && c.path.equals(path) && c.op == op && sameLiteral(c.value, value);
    }

    @Override
    public int hashCode() {
      return Objects.hash(path, op, value instanceof java.math.BigDecimal d ? d.stripTrailingZeros() : value);
    }
  }

  /** Every part holds. */
  public static final class And extends Where {
    private final List<Where> parts;

    public And(List<Where> parts) {
      this.parts = List.copyOf(parts);
    }

    public List<Where> parts() {
      return parts;
    }

    @Override
    public String toString() {
      return joined(parts, " AND ");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof And a && a.parts.equals(parts);
    }

    @Override
    public int hashCode() {
      return 31 * parts.hashCode() + 1;
    }
  }

  /** At least one part holds. */
  public static final class Or extends Where {
    private final List<Where> parts;

    public Or(List<Where> parts) {
      this.parts = List.copyOf(parts);
    }

    public List<Where> parts() {
      return parts;
    }

    @Override
    public String toString() {
      return joined(parts, " OR ");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Or a && a.parts.equals(parts);
    }

    @Override
    public int hashCode() {
      return 31 * parts.hashCode() + 2;
    }
  }

  private static String joined(List<Where> parts, String with) {
    StringBuilder b = new StringBuilder("(");
    for (int i = 0; i < parts.size(); i++) {
      b.append(i == 0 ? "" : with).append(parts.get(i));
    }
    return b.append(')').toString();
  }

  private static boolean sameLiteral(Object a, Object b) {
    if (a instanceof java.math.BigDecimal x && b instanceof java.math.BigDecimal y) {
      return x.compareTo(y) == 0;
    }
    return a.equals(b);
  }

  private static boolean keyword(String name) {
    return name.equalsIgnoreCase("and") || name.equalsIgnoreCase("or") || name.equalsIgnoreCase("true") || name.equalsIgnoreCase("false")
        || name.equalsIgnoreCase("null");
  }

  /** Every comparison in this condition, in order. */
  public List<Compare> comparisons() {
    List<Compare> out = new ArrayList<>();
    collect(this, out);
    return out;
  }

  private static void collect(Where w, List<Compare> out) {
    if (w instanceof Compare c) {
      out.add(c);
    } else if (w instanceof And a) {
      a.parts().forEach(p -> collect(p, out));
    } else {
      ((Or) w).parts().forEach(p -> collect(p, out));
    }
  }

  /**
   * Reads a condition.
   *
   * @throws IllegalArgumentException naming the character where it stops making sense
   */
  public static Where parse(String text) {
    if (text.length() > MAX_LENGTH) {
      throw new IllegalArgumentException("a condition is at most " + MAX_LENGTH + " characters, not " + text.length());
    }
    Parser p = new Parser(text);
    Where w = p.or();
    p.skipSpace();
    if (p.at < text.length()) {
      throw p.error("expected AND, OR or the end");
    }
    if (w.comparisons().size() > MAX_COMPARISONS) {
      throw new IllegalArgumentException("a condition holds at most " + MAX_COMPARISONS + " comparisons, not " + w.comparisons().size());
    }
    return w;
  }

  /** Recursive descent: {@code or := and (OR and)*; and := term (AND term)*; term := '(' or ')' | compare}. */
  private static final class Parser {
    private final String text;
    private int at;
    private int depth;

    Parser(String text) {
      this.text = text;
    }

    Where or() {
      List<Where> parts = new ArrayList<>();
      parts.add(and());
      while (keywordNext("OR")) {
        parts.add(and());
      }
      return parts.size() == 1 ? parts.get(0) : new Or(parts);
    }

    Where and() {
      List<Where> parts = new ArrayList<>();
      parts.add(term());
      while (keywordNext("AND")) {
        parts.add(term());
      }
      return parts.size() == 1 ? parts.get(0) : new And(parts);
    }

    Where term() {
      skipSpace();
      if (at < text.length() && text.charAt(at) == '(') {
        if (++depth > MAX_PATH) {
          throw error("parentheses nest at most " + MAX_PATH + " deep");
        }
        at++;
        Where inner = or();
        skipSpace();
        if (at >= text.length() || text.charAt(at) != ')') {
          throw error("expected ')'");
        }
        at++;
        depth--;
        return inner;
      }
      return compare();
    }

    Compare compare() {
      List<String> path = new ArrayList<>();
      path.add(name());
      while (at < text.length() && text.charAt(at) == '.') {
        at++;
        path.add(name());
      }
      if (path.size() > MAX_PATH) {
        throw error("a field path has at most " + MAX_PATH + " names");
      }
      Op op = op();
      Object value = literal();
      return new Compare(path, op, value);
    }

    String name() {
      skipSpace();
      int start = at;
      if (at < text.length() && text.charAt(at) == '"') {
        StringBuilder b = new StringBuilder();
        at++;
        while (true) {
          if (at >= text.length()) {
            at = start;
            throw error("a quoted field name is not closed");
          }
          char c = text.charAt(at++);
          if (c == '"') {
            if (at < text.length() && text.charAt(at) == '"') {
              b.append('"');
              at++;
              continue;
            }
            return b.toString();
          }
          b.append(c);
        }
      }
      if (at < text.length() && (Character.isLetter(text.charAt(at)) || text.charAt(at) == '_')) {
        while (at < text.length() && (Character.isLetterOrDigit(text.charAt(at)) || text.charAt(at) == '_')) {
          at++;
        }
        String name = text.substring(start, at);
        if (keyword(name)) {
          at = start;
          throw error("expected a field name, not the keyword " + name.toUpperCase(java.util.Locale.ROOT)
              + " (quote it, \"" + name + "\", to name such a field)");
        }
        return name;
      }
      throw error("expected a field name");
    }

    Op op() {
      skipSpace();
      String[] symbols = {"!=", "<>", "<=", ">=", "=", "<", ">"};
      Op[] ops = {Op.NE, Op.NE, Op.LE, Op.GE, Op.EQ, Op.LT, Op.GT};
      for (int i = 0; i < symbols.length; i++) {
        if (text.startsWith(symbols[i], at)) {
          at += symbols[i].length();
          return ops[i];
        }
      }
      throw error("expected a comparison: = != < <= > >=");
    }

    Object literal() {
      skipSpace();
      int start = at;
      if (at < text.length() && text.charAt(at) == '\'') {
        StringBuilder b = new StringBuilder();
        at++;
        while (true) {
          if (at >= text.length()) {
            at = start;
            throw error("a string is not closed (a quote inside one is written '')");
          }
          char c = text.charAt(at++);
          if (c == '\'') {
            if (at < text.length() && text.charAt(at) == '\'') {
              b.append('\'');
              at++;
              continue;
            }
            return b.toString();
          }
          b.append(c);
        }
      }
      while (at < text.length() && "+-.0123456789eE".indexOf(text.charAt(at)) >= 0) {
        at++;
      }
      if (at > start) {
        try {
          return new java.math.BigDecimal(text.substring(start, at));
        } catch (NumberFormatException e) {
          at = start;
          throw error("not a number");
        }
      }
      while (at < text.length() && Character.isLetter(text.charAt(at))) {
        at++;
      }
      String word = text.substring(start, at);
      if (word.equalsIgnoreCase("true")) {
        return Boolean.TRUE;
      }
      if (word.equalsIgnoreCase("false")) {
        return Boolean.FALSE;
      }
      if (word.equalsIgnoreCase("null")) {
        return NULL;
      }
      at = start;
      throw error("expected a value: a 'string', a number, true, false or null");
    }

    boolean keywordNext(String keyword) {
      skipSpace();
      int end = at + keyword.length();
      if (text.regionMatches(true, at, keyword, 0, keyword.length())
          && (end == text.length() || !Character.isLetterOrDigit(text.charAt(end)) && text.charAt(end) != '_')) {
        at = end;
        return true;
      }
      return false;
    }

    void skipSpace() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
        at++;
      }
    }

    IllegalArgumentException error(String what) {
      skipSpace();
      String rest = at >= text.length() ? "the end" : "'" + text.substring(at, Math.min(text.length(), at + 20)) + "'";
      return new IllegalArgumentException("bad condition at character " + (at + 1) + " (" + rest + "): " + what);
    }
  }
}
