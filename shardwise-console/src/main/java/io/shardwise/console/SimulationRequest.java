package io.shardwise.console;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.RingPartitioner;
import io.shardwise.core.partition.SlotPartitioner;
import io.shardwise.core.partition.Strategy;
import io.shardwise.core.sim.KeyGenerators;
import io.shardwise.core.sim.KeySource;
import io.shardwise.core.sim.Simulation;
import io.shardwise.core.sim.SimulationReport;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/**
 * The parameters of one simulation, shared by {@code shardwise simulate} and {@code GET
 * /api/v1/simulate} so that both accept the same names and give the same report. Every limit is
 * named here and checked before any work; a violation is an {@link IllegalArgumentException} whose
 * message names the parameter.
 *
 * @param format a printf pattern with one integer, or {@code uuid}, {@code timestamp}, {@code zipf};
 *     ignored when {@code keyList} is given
 * @param keyList explicit keys (pasted in the lab), or {@code null}
 * @param detail what to keep per key: counts only, moved keys, or every key's placement
 */
public record SimulationRequest(
    String format,
    List<String> keyList,
    long count,
    long start,
    int from,
    int to,
    String strategies,
    String hash,
    int vnodes,
    String vnodeName,
    int slots,
    int tokens,
    List<String> splitPoints,
    long seed,
    Simulation.Detail detail) {

  public static final String DEFAULT_PATTERN = "user-%06d";

  /** {@link #DEFAULT_PATTERN} for picocli's help texts, which are format strings themselves. */
  public static final String DEFAULT_PATTERN_IN_HELP = "user-%%06d";
  public static final long DEFAULT_COUNT = 100_000;

  /** Nodes before or after, at most: the report tallies a from x to matrix of moves. */
  public static final int MAX_NODES = 1024;
  /** Virtual nodes or tokens per node, at most. */
  public static final int MAX_POINTS_PER_NODE = io.shardwise.core.partition.PartitionerSpec.MAX_POINTS_PER_NODE;
  /** Keys of one simulation asked over HTTP, at most (the CLI streams any number). */
  public static final long MAX_HTTP_COUNT = 1_000_000;
  /** Keys a lab grid shows (per-key placements), at most. */
  public static final int MAX_GRID_KEYS = 1000;
  /** Keys whose moves are listed ({@code list=true}) or that are pasted ({@code keyList}), at most. */
  public static final int MAX_LISTED_KEYS = 100 * MAX_GRID_KEYS;
  /** Bytes of one pasted key, at most. */
  public static final int MAX_KEY_BYTES = 1024;

  /** The defaults of {@code shardwise simulate}: 100,000 keys user-000000… from 10 to 11 nodes, every strategy. */
  public static SimulationRequest defaults() {
    return new SimulationRequest(
        DEFAULT_PATTERN, null, DEFAULT_COUNT, 0, 10, 11, "all", HashFunctions.DEFAULT_NAME,
        PartitionerSpec.DEFAULT_VNODES, RingPartitioner.DEFAULT_TEMPLATE, SlotPartitioner.DEFAULT_SLOTS,
        PartitionerSpec.DEFAULT_TOKENS, List.of(), 0, Simulation.Detail.SUMMARY);
  }

  /**
   * A request from named parameters as the HTTP API takes them (the CLI's option names without the
   * dashes): keys, keyList (newline-separated), count, start, from, to, strategy, hash, vnodes,
   * vnode-name, slots, tokens, split-points (comma-separated), seed, list, placements. Missing
   * parameters take the CLI's defaults; unknown ones are refused.
   */
  public static SimulationRequest fromParameters(Set<String> names, Function<String, String> param) {
    Set<String> known = Set.of("keys", "keyList", "count", "start", "from", "to", "strategy", "hash", "vnodes",
        "vnode-name", "slots", "tokens", "split-points", "seed", "list", "placements");
    for (String name : names) {
      if (!known.contains(name)) {
        throw new IllegalArgumentException("unknown parameter '" + name + "'; known: " + new java.util.TreeSet<>(known));
      }
    }
    SimulationRequest d = defaults();
    String keyList = param.apply("keyList");
    List<String> keys = null;
    if (keyList != null) {
      keys = new ArrayList<>();
      for (String line : keyList.split("\r?\n")) {
        if (!line.isBlank()) {
          keys.add(line.strip());
        }
      }
    }
    boolean placements = bool(param, "placements");
    boolean list = bool(param, "list");
    String splits = param.apply("split-points");
    return new SimulationRequest(
        orDefault(param.apply("keys"), d.format),
        keys,
        number(param, "count", d.count),
        number(param, "start", d.start),
        (int) number(param, "from", d.from),
        (int) number(param, "to", d.to),
        orDefault(param.apply("strategy"), d.strategies),
        orDefault(param.apply("hash"), d.hash),
        (int) number(param, "vnodes", d.vnodes),
        orDefault(param.apply("vnode-name"), d.vnodeName),
        (int) number(param, "slots", d.slots),
        (int) number(param, "tokens", d.tokens),
        splits == null || splits.isBlank() ? List.of() : List.of(splits.split(",")),
        number(param, "seed", d.seed),
        placements ? Simulation.Detail.PLACEMENTS : list ? Simulation.Detail.MOVED_KEYS : Simulation.Detail.SUMMARY);
  }

  /** Runs the simulation on the generated or listed keys; errors name parameters as the API does. */
  public SimulationReport run() {
    return run(null, name -> name);
  }

  /**
   * Runs the simulation on {@code source} when not null (a keys file), else on the generated or
   * listed keys.
   *
   * @param parameterName how errors name a parameter ({@code from} for the API, {@code --from} for
   *     the command)
   * @throws IllegalArgumentException naming the parameter that is out of its limits
   */
  public SimulationReport run(KeySource source, Function<String, String> parameterName) {
    KeySource keys = source != null ? source : keys(parameterName);
    return Simulation.run(keys, from, to, specs(parameterName), detail);
  }

  /** Checks the limits a request over HTTP must also keep (on top of those every request keeps). */
  public SimulationRequest checkHttpLimits() {
    if (keyList == null && count > MAX_HTTP_COUNT) {
      throw new IllegalArgumentException("count must be at most " + MAX_HTTP_COUNT + " over HTTP, not " + count
          + "; run 'shardwise simulate' for more");
    }
    long gridKeys = keyList != null ? keyList.size() : count;
    if (detail == Simulation.Detail.PLACEMENTS && gridKeys > MAX_GRID_KEYS) {
      throw new IllegalArgumentException("the lab grid shows at most " + MAX_GRID_KEYS + " keys, not " + gridKeys
          + "; lower count or drop placements=true");
    }
    if (detail == Simulation.Detail.MOVED_KEYS && gridKeys > MAX_LISTED_KEYS) {
      throw new IllegalArgumentException("list=true lists moved keys of at most " + MAX_LISTED_KEYS + " keys, not " + gridKeys);
    }
    return this;
  }

  private KeySource keys(Function<String, String> name) {
    if (count < 0) {
      throw new IllegalArgumentException(name.apply("count") + " must not be negative, not " + count);
    }
    if (keyList != null) {
      if (keyList.size() > MAX_LISTED_KEYS) {
        throw new IllegalArgumentException("keyList has " + keyList.size() + " keys; at most " + MAX_LISTED_KEYS);
      }
      List<byte[]> bytes = new ArrayList<>(keyList.size());
      for (String k : keyList) {
        byte[] b = ByteStrings.utf8(k);
        if (b.length > MAX_KEY_BYTES) {
          throw new IllegalArgumentException("a key of keyList has " + b.length + " bytes; at most " + MAX_KEY_BYTES);
        }
        bytes.add(b);
      }
      return new ListedKeys(bytes);
    }
    return KeyGenerators.byName(format, count, start, seed);
  }

  private List<PartitionerSpec> specs(Function<String, String> name) {
    checkNodes(name.apply("from"), from);
    checkNodes(name.apply("to"), to);
    if (vnodes < 1 || vnodes > MAX_POINTS_PER_NODE) {
      throw new IllegalArgumentException(name.apply("vnodes") + " must be in [1, " + MAX_POINTS_PER_NODE + "], not " + vnodes);
    }
    if (tokens < 1 || tokens > MAX_POINTS_PER_NODE) {
      throw new IllegalArgumentException(name.apply("tokens") + " must be in [1, " + MAX_POINTS_PER_NODE + "], not " + tokens);
    }
    HashFunction function = HashFunctions.byName(hash);
    List<byte[]> points = new ArrayList<>();
    for (String p : splitPoints) {
      points.add(ByteStrings.utf8(p));
    }
    List<PartitionerSpec> out = new ArrayList<>();
    for (Strategy strategy : parseStrategies(strategies, name.apply("strategy"))) {
      PartitionerSpec.Builder b = PartitionerSpec.builder(strategy)
          .hash(function)
          .vnodes(vnodes)
          .vnodeTemplate(vnodeName)
          .slots(slots)
          .tokensPerNode(tokens)
          .seed(seed);
      if (strategy == Strategy.RANGE && !points.isEmpty()) {
        b.splitPoints(points);
      }
      out.add(b.build());
    }
    return out;
  }

  private static void checkNodes(String name, int nodes) {
    if (nodes < 1 || nodes > MAX_NODES) {
      throw new IllegalArgumentException(name + " must be in [1, " + MAX_NODES + "] nodes, not " + nodes);
    }
  }

  /** Strategies from a comma-separated list; {@code all} is every strategy. */
  public static Set<Strategy> parseStrategies(String list, String parameterName) {
    Set<Strategy> out = new LinkedHashSet<>();
    for (String name : list.split(",")) {
      if (name.trim().equalsIgnoreCase("all")) {
        out.addAll(List.of(Strategy.values()));
      } else if (!name.isBlank()) {
        out.add(Strategy.byId(name.trim().toLowerCase(Locale.ROOT)));
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(parameterName + " names no strategy; valid strategies: " + Strategy.validIds() + ", or all");
    }
    return out;
  }

  private static String orDefault(String value, String fallback) {
    return value == null || value.isEmpty() ? fallback : value;
  }

  private static long number(Function<String, String> param, String name, long fallback) {
    String value = param.apply(name);
    if (value == null || value.isEmpty()) {
      return fallback;
    }
    try {
      long n = Long.parseLong(value.trim());
      if (!name.equals("count") && !name.equals("start") && !name.equals("seed") && (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE)) {
        throw new IllegalArgumentException(name + " is out of range: " + value);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be a whole number, not '" + value + "'", e);
    }
  }

  private static boolean bool(Function<String, String> param, String name) {
    String value = param.apply(name);
    if (value == null || value.isEmpty()) {
      return false;
    }
    if (value.equalsIgnoreCase("true")) {
      return true;
    }
    if (value.equalsIgnoreCase("false")) {
      return false;
    }
    throw new IllegalArgumentException(name + " must be true or false, not '" + value + "'");
  }

  /** Pasted keys, in the order given. */
  private static final class ListedKeys implements KeySource {
    private final List<byte[]> keys;

    ListedKeys(List<byte[]> keys) {
      this.keys = List.copyOf(keys);
    }

    @Override
    public Iterator<byte[]> iterator() {
      return keys.iterator();
    }

    @Override
    public String description() {
      return keys.size() + " listed keys";
    }
  }
}
