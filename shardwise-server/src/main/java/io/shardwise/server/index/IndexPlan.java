package io.shardwise.server.index;

import io.shardwise.core.doc.IndexDef;
import io.shardwise.core.doc.IndexValues;
import io.shardwise.core.doc.Where;
import io.shardwise.core.map.Table;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * How a query reads a table through its ready indexes, if it can — all through global indexes, or
 * all through local ones (global first: a value's entries are in one index shard, where a local
 * index asks every shard). Each branch of an OR (the
 * whole condition when there is none) needs an AND-ed comparison ({@code = < <= > >=}) on an
 * indexed field; the comparisons on one field narrow one range, and an equality is preferred to a
 * range. Each branch becomes a probe; a shard's rows are those any probe finds, then checked
 * against the whole condition. {@code !=} never uses an index (it holds for missing fields too),
 * and one branch without an indexed comparison makes the query a scan.
 *
 * @param probes one per OR branch (duplicates merged)
 * @param describe the plan in words, for {@code --explain}: "color (local) = 'red'"
 * @param scope where every probe's index lives
 */
public record IndexPlan(List<Probe> probes, String describe, IndexDef.Scope scope) {

  /**
   * One range of one index; for a global index's equality, {@code intersect} holds the branch's
   * other equalities on global indexes: their posting lists, sorted by row like this one's, are
   * merged with it, and only the rows in every list are fetched.
   */
  public record Probe(IndexDef index, IndexValues.Range range, String describe, List<Probe> intersect) {
    Probe(IndexDef index, IndexValues.Range range, String describe) {
      this(index, range, describe, List.of());
    }
  }

  /** The plan for {@code where} over {@code table}'s ready indexes, or empty: a scan. */
  public static Optional<IndexPlan> choose(Table table, Where where) {
    Optional<IndexPlan> global = choose(table, where, IndexDef.Scope.GLOBAL);
    return global.isPresent() ? global : choose(table, where, IndexDef.Scope.LOCAL);
  }

  private static Optional<IndexPlan> choose(Table table, Where where, IndexDef.Scope scope) {
    List<Where> branches = where instanceof Where.Or or ? or.parts() : List.of(where);
    Map<String, Probe> probes = new LinkedHashMap<>();
    for (Where branch : branches) {
      Optional<Probe> p = probe(table, branch, scope);
      if (p.isEmpty()) {
        return Optional.empty();
      }
      probes.putIfAbsent(p.get().describe(), p.get());
    }
    List<Probe> list = new ArrayList<>(probes.values());
    return Optional.of(new IndexPlan(list, String.join(" OR ", list.stream().map(Probe::describe).toList()), scope));
  }

  /** The best probe for one AND-ed branch, or empty if no comparison in it is on a ready index of {@code scope}. */
  private static Optional<Probe> probe(Table table, Where branch, IndexDef.Scope scope) {
    List<Where> conjuncts = branch instanceof Where.And and ? and.parts() : List.of(branch);
    Map<Long, List<Where.Compare>> byIndex = new LinkedHashMap<>();
    Map<Long, IndexDef> indexes = new LinkedHashMap<>();
    for (Where w : conjuncts) {
      if (!(w instanceof Where.Compare c) || c.op() == Where.Op.NE) {
        continue; // a nested OR or a != narrows nothing here; the rows are checked against it anyway
      }
      Optional<IndexDef> index = table.index(c.path(), scope).filter(i -> i.state() == IndexDef.State.READY);
      if (index.isPresent()) {
        byIndex.computeIfAbsent(index.get().id(), k -> new ArrayList<>()).add(c);
        indexes.put(index.get().id(), index.get());
      }
    }
    Probe best = null;
    boolean bestIsEquality = false;
    List<Probe> equalities = new ArrayList<>();
    for (Map.Entry<Long, List<Where.Compare>> e : byIndex.entrySet()) {
      IndexValues.Range range = null;
      boolean equality = false;
      for (Where.Compare c : e.getValue()) {
        IndexValues.Range r = IndexValues.range(c.op(), c.value());
        range = range == null ? r : range.intersect(r);
        equality |= c.op() == Where.Op.EQ;
      }
      IndexDef index = indexes.get(e.getKey());
      String words = e.getValue().stream().map(Where.Compare::toString).reduce((a, b) -> a + " AND " + b).orElseThrow();
      Probe p = new Probe(index, range, index.field() + " (" + scope.label() + " index): " + words);
      if (equality && Arrays.equals(range.low(), range.high())) {
        equalities.add(p);
      }
      if (best == null || (equality && !bestIsEquality)) {
        best = p;
        bestIsEquality = equality;
      }
    }
    if (best != null && scope == IndexDef.Scope.GLOBAL && equalities.size() > 1 && equalities.contains(best)) {
      List<Probe> others = new ArrayList<>(equalities);
      others.remove(best);
      String words = best.describe() + " intersected with " + String.join(" and ", others.stream().map(Probe::describe).toList());
      best = new Probe(best.index(), best.range(), words, others);
    }
    return Optional.ofNullable(best);
  }
}
