package io.shardwise.core.doc;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A secondary index of a document table, as the shard map keeps it with the table: on which field,
 * local or global, and whether it may answer queries yet.
 *
 * <p>A <b>local</b> index keeps its entries beside the rows they index, on every replica of the
 * shard, written in the same atomic batch as the row: it is exact at every moment, and a query
 * without the partition key asks every shard. An index answers queries only once it is {@link
 * State#READY}: it is created {@link State#BUILDING}, every write maintains it from then on, and the
 * rows written before are indexed by a backfill on every node that holds them.
 *
 * @param id the map epoch that created it: never reused, so the entries of a dropped index are
 *     never read as another's
 * @param path the field's path ({@code owner.id}: names of nested objects)
 * @param async a global index whose entries follow their rows' writes instead of committing with
 *     them ({@link #async()}); false for a local index
 * @param covering a global index's covered fields ({@link #covering()}); none for a local index
 */
public record IndexDef(long id, List<String> path, Scope scope, State state, boolean async, List<List<String>> covering) {

  /** The most fields one index may cover. */
  public static final int MAX_COVERED = 16;

  /** The most indexes one table may have. */
  public static final int MAX_PER_TABLE = 16;

  /** Where an index's entries live. */
  public enum Scope {
    /** Beside each shard's rows: a write touches one shard; a query asks every shard. */
    LOCAL,
    /**
     * In a table of its own, partitioned by the indexed value ({@link #globalTable}): a query of one
     * value reads one shard of it. Kept in sync (a write of a row changes its entries in one
     * transaction with the row: never stale) or {@linkplain IndexDef#async() asynchronously}.
     */
    GLOBAL;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Whether an index may answer queries. */
  public enum State {
    /** Writes maintain it; rows written before it existed are still being indexed. */
    BUILDING,
    /** Every row of the table is indexed: queries may use it. */
    READY;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public IndexDef {
    if (id < 1) {
      throw new IllegalArgumentException("an index id is at least 1, not " + id);
    }
    path = List.copyOf(path);
    if (path.isEmpty() || path.size() > Where.MAX_PATH) {
      throw new IllegalArgumentException("an indexed field path has 1 to " + Where.MAX_PATH + " names, not " + path.size());
    }
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(state, "state");
    if (async && scope != Scope.GLOBAL) {
      throw new IllegalArgumentException("only a global index is kept asynchronously");
    }
    covering = List.copyOf(covering.stream().map(List::copyOf).toList());
    if (!covering.isEmpty() && scope != Scope.GLOBAL) {
      throw new IllegalArgumentException("only a global index covers fields");
    }
    if (covering.size() > MAX_COVERED) {
      throw new IllegalArgumentException("an index covers at most " + MAX_COVERED + " fields, not " + covering.size());
    }
    java.util.Set<List<String>> seen = new java.util.HashSet<>();
    seen.add(path);
    for (List<String> c : covering) {
      if (c.isEmpty() || c.size() > Where.MAX_PATH) {
        throw new IllegalArgumentException("a covered field path has 1 to " + Where.MAX_PATH + " names, not " + c.size());
      }
      if (!seen.add(c)) {
        throw new IllegalArgumentException("field " + String.join(".", c) + " is named twice (the indexed field is covered already)");
      }
    }
  }

  /** A local index, or a global one kept in sync. */
  public IndexDef(long id, List<String> path, Scope scope, State state) {
    this(id, path, scope, state, false, List.of());
  }

  /** An index covering no field. */
  public IndexDef(long id, List<String> path, Scope scope, State state, boolean async) {
    this(id, path, scope, state, async, List.of());
  }

  /**
   * The fields a global index's entries hold besides the row's key (a <b>covering</b> index): the
   * indexed field and these. A query that needs no other field — in its condition or its answer —
   * is answered from the entries alone, without fetching a row.
   */
  @Override
  public List<List<String>> covering() {
    return covering;
  }

  /** The fields each entry holds: the indexed one, then the covered ones; empty if the index covers none. */
  public List<List<String>> projected() {
    if (covering.isEmpty()) {
      return List.of();
    }
    List<List<String>> out = new ArrayList<>(1 + covering.size());
    out.add(path);
    out.addAll(covering);
    return out;
  }

  /** True if this index's entries hold every field of {@code paths} (a covering index; never one covering nothing). */
  public boolean covers(java.util.Collection<List<String>> paths) {
    return !covering.isEmpty() && projected().containsAll(paths);
  }

  /**
   * True for a global index kept <b>asynchronously</b>: a write of a row commits alone, with a
   * pending marker beside the row in its own shard, and the shard's leader then moves the row's
   * entry to its current value. A write costs one shard; a query may miss the newest writes by the
   * index's lag (or wait for them: a consistent query).
   */
  @Override
  public boolean async() {
    return async;
  }

  /** A global index kept in sync with its rows (written in one transaction with each row). */
  public boolean sync() {
    return scope == Scope.GLOBAL && !async;
  }

  /** How the index is kept, as users name it: local, global (sync) or global (async). */
  public String describe() {
    return scope == Scope.LOCAL ? "local" : async ? "global (async)" : "global (sync)";
  }

  /** The field as users write it: names joined by dots. */
  public String field() {
    return String.join(".", path);
  }

  /**
   * The name of a global index's own table: {@code table}'s name, a dot, the field's path
   * ({@code orders.owner.id}). Its rows are the index's entries: partition key the indexed value's
   * {@link IndexValues} encoding (a value's entries are one partition), sort key the indexed row's
   * {@linkplain io.shardwise.core.key.Key#encode() encoded key}.
   */
  public String globalTable(String table) {
    return table + "." + field();
  }

  public IndexDef withState(State next) {
    return new IndexDef(id, path, scope, next, async, covering);
  }

  /**
   * Reads a field path as {@code index create} takes it: names joined by dots, each a letter or
   * {@code _} then letters, digits and {@code _}.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static List<String> parsePath(String field) {
    List<String> out = new ArrayList<>();
    for (String name : field.strip().split("\\.", -1)) {
      if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
        throw new IllegalArgumentException("an indexed field is names joined by dots (letters, digits and _, not starting with a digit),"
            + " not '" + field + "'");
      }
      out.add(name);
    }
    if (out.size() > Where.MAX_PATH) {
      throw new IllegalArgumentException("an indexed field path has at most " + Where.MAX_PATH + " names, not " + out.size());
    }
    return out;
  }
}
