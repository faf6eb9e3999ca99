package io.shardwise.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * How a table is partitioned: its strategy and the settings that strategy takes. A setting left
 * unset takes the cluster's default (one shard per node, 256 virtual nodes, 1024 slots, 16 tokens,
 * murmur3-128); the table that {@link ShardwiseClient#describeTable} returns shows the values used.
 *
 * <pre>{@code
 * TableSpec.builder("slots").slots(64).build()
 * TableSpec.builder("range").splitPoints("g", "n", "t").build()
 * TableSpec.builder("hashrange").shards(6).build()
 * }</pre>
 */
public final class TableSpec {

  /** The strategies a table can have. */
  public static final List<String> STRATEGIES = List.of("range", "mod", "ring", "slots", "hashrange", "tokens", "jump", "rendezvous");

  private final String strategy;
  private final String hash;
  private final Integer shards;
  private final Integer vnodes;
  private final String vnodeTemplate;
  private final Integer slots;
  private final Integer tokens;
  private final long seed;
  private final List<byte[]> splitPoints;
  private final List<byte[]> sampleKeys;
  private final Integer replicas;
  private final Integer minInSync;
  private final io.shardwise.core.doc.ValueFormat format;

  private TableSpec(Builder b) {
    this.format = b.format;
    this.replicas = b.replicas;
    this.minInSync = b.minInSync;
    this.strategy = b.strategy;
    this.hash = b.hash;
    this.shards = b.shards;
    this.vnodes = b.vnodes;
    this.vnodeTemplate = b.vnodeTemplate;
    this.slots = b.slots;
    this.tokens = b.tokens;
    this.seed = b.seed;
    this.splitPoints = List.copyOf(b.splitPoints);
    this.sampleKeys = List.copyOf(b.sampleKeys);
  }

  /** A spec of {@code strategy} (one of {@link #STRATEGIES}; the server checks it). */
  public static Builder builder(String strategy) {
    if (strategy == null || strategy.isBlank()) {
      throw new IllegalArgumentException("a table needs a strategy: one of " + String.join(", ", STRATEGIES));
    }
    return new Builder(strategy);
  }

  public String strategy() {
    return strategy;
  }

  /** Replicas per shard (unset: the cluster's default); each on its own node. */
  public OptionalInt replicas() {
    return replicas == null ? OptionalInt.empty() : OptionalInt.of(replicas);
  }

  /** The fewest in-sync replicas a write needs (unset: a majority of the replicas). */
  public OptionalInt minInSync() {
    return minInSync == null ? OptionalInt.empty() : OptionalInt.of(minInSync);
  }

  /** What the table's values are: any bytes (the default), or JSON documents checked on every write. */
  public io.shardwise.core.doc.ValueFormat format() {
    return format;
  }

  /** The hash function; empty: the default. */
  public Optional<String> hash() {
    return Optional.ofNullable(hash);
  }

  /** Shard count (mod, jump, rendezvous, hashrange, range pre-split from sample keys). */
  public OptionalInt shards() {
    return shards == null ? OptionalInt.empty() : OptionalInt.of(shards);
  }

  /** Virtual nodes per node (ring). */
  public OptionalInt vnodes() {
    return vnodes == null ? OptionalInt.empty() : OptionalInt.of(vnodes);
  }

  /** The virtual-node name template (ring). */
  public Optional<String> vnodeTemplate() {
    return Optional.ofNullable(vnodeTemplate);
  }

  /** Slot count (slots). */
  public OptionalInt slots() {
    return slots == null ? OptionalInt.empty() : OptionalInt.of(slots);
  }

  /** Tokens per node (tokens). */
  public OptionalInt tokens() {
    return tokens == null ? OptionalInt.empty() : OptionalInt.of(tokens);
  }

  /** The seed of the random tokens (tokens). */
  public long seed() {
    return seed;
  }

  /** Explicit split points (range). */
  public List<byte[]> splitPoints() {
    return splitPoints;
  }

  /** Partition keys to pre-split a range table from, {@link #shards} ways. */
  public List<byte[]> sampleKeys() {
    return sampleKeys;
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(strategy);
    hash().ifPresent(h -> b.append(", hash ").append(h));
    shards().ifPresent(n -> b.append(", ").append(n).append(" shards"));
    vnodes().ifPresent(n -> b.append(", ").append(n).append(" vnodes"));
    slots().ifPresent(n -> b.append(", ").append(n).append(" slots"));
    tokens().ifPresent(n -> b.append(", ").append(n).append(" tokens"));
    replicas().ifPresent(n -> b.append(", ").append(n).append(" replicas"));
    if (format != io.shardwise.core.doc.ValueFormat.BYTES) {
      b.append(", ").append(format.label()).append(" values");
    }
    if (!splitPoints.isEmpty()) {
      b.append(", ").append(splitPoints.size()).append(" split points");
    }
    return b.toString();
  }

  /** Builds a {@link TableSpec}; every count must be at least 1 (the server checks the upper limits). */
  public static final class Builder {
    private final String strategy;
    private String hash;
    private Integer shards;
    private Integer vnodes;
    private String vnodeTemplate;
    private Integer slots;
    private Integer tokens;
    private long seed;
    private final List<byte[]> splitPoints = new ArrayList<>();
    private final List<byte[]> sampleKeys = new ArrayList<>();
    private Integer replicas;
    private Integer minInSync;
    private io.shardwise.core.doc.ValueFormat format = io.shardwise.core.doc.ValueFormat.BYTES;

    private Builder(String strategy) {
      this.strategy = strategy;
    }

    public Builder hash(String name) {
      this.hash = name;
      return this;
    }

    public Builder shards(int count) {
      this.shards = positive("shards", count);
      return this;
    }

    public Builder vnodes(int perNode) {
      this.vnodes = positive("vnodes", perNode);
      return this;
    }

    public Builder vnodeTemplate(String template) {
      this.vnodeTemplate = template;
      return this;
    }

    public Builder slots(int count) {
      this.slots = positive("slots", count);
      return this;
    }

    public Builder tokens(int perNode) {
      this.tokens = positive("tokens", perNode);
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Replicas per shard, each on its own node (the server checks the upper limit against the live nodes). */
    public Builder replicas(int count) {
      this.replicas = positive("replicas", count);
      return this;
    }

    /** The fewest in-sync replicas (the leader counted) a write needs before it is acknowledged. */
    /** {@link io.shardwise.core.doc.ValueFormat#JSON}: every value a JSON object, a write of anything else refused. */
    public Builder format(io.shardwise.core.doc.ValueFormat valueFormat) {
      this.format = java.util.Objects.requireNonNull(valueFormat, "format");
      return this;
    }

    public Builder minInSync(int count) {
      this.minInSync = positive("min in-sync replicas", count);
      return this;
    }

    /** Adds split points, in order. */
    public Builder splitPoints(List<byte[]> points) {
      points.forEach(p -> splitPoints.add(p.clone()));
      return this;
    }

    /** Adds split points given as UTF-8 text, in order. */
    public Builder splitPoints(String... points) {
      for (String p : points) {
        splitPoints.add(p.getBytes(StandardCharsets.UTF_8));
      }
      return this;
    }

    /** Adds partition keys to pre-split from. */
    public Builder sampleKeys(List<byte[]> keys) {
      keys.forEach(k -> sampleKeys.add(k.clone()));
      return this;
    }

    public TableSpec build() {
      return new TableSpec(this);
    }

    private static int positive(String what, int value) {
      if (value < 1) {
        throw new IllegalArgumentException(what + " must be at least 1, not " + value);
      }
      return value;
    }
  }
}
