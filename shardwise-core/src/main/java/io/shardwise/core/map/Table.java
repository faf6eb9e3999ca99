package io.shardwise.core.map;

import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One table in the shard map: its name and id, the partitioning it was created with, the layout
 * that maps keys to shard positions, and who owns the shard at each position.
 *
 * <p>Immutable and thread-safe.
 */
public final class Table {

  private final String name;
  private final long id;
  private final PartitionerSpec spec;
  private final ShardLayout layout;
  private final List<ShardAssignment> shards;
  private final Replication replication;
  private final long replicationChangedAt;
  private final long changedAt;
  private final long nextShardNumber;
  private final ValueFormat format;
  private final List<io.shardwise.core.doc.IndexDef> indexes;
  private final long indexesChangedAt;
  /** Shard number to position, built on first use once numbers no longer equal positions. */
  private volatile java.util.Map<Long, Integer> positions;

  Table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards) {
    this(name, id, spec, layout, shards, 0, Replication.NONE, id);
  }

  Table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards, long nextShardNumber) {
    this(name, id, spec, layout, shards, nextShardNumber, Replication.NONE, id);
  }

  /**
   * @param nextShardNumber the number the next new shard gets (splits and merges make new shards;
   *     numbers are never reused); 0: one above the highest number here, as for a map stored before
   *     tables recorded it
   * @param replicationChangedAt the map epoch of the table's last change of {@code replication}
   *     (its creation if never), which {@link #changedAt} covers too
   */
  Table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards, long nextShardNumber,
      Replication replication, long replicationChangedAt) {
    this(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt, ValueFormat.BYTES);
  }

  /** @param format what the table's values are (set at creation, never changed) */
  Table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards, long nextShardNumber,
      Replication replication, long replicationChangedAt, ValueFormat format) {
    this(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt, format, List.of(), id);
  }

  /**
   * @param indexes the table's secondary indexes, in creation order
   * @param indexesChangedAt the map epoch of the last change of {@code indexes} (the table's id if never)
   */
  Table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards, long nextShardNumber,
      Replication replication, long replicationChangedAt, ValueFormat format, List<io.shardwise.core.doc.IndexDef> indexes,
      long indexesChangedAt) {
    this.format = java.util.Objects.requireNonNull(format, "format");
    this.indexes = List.copyOf(indexes);
    if (!this.indexes.isEmpty() && format != ValueFormat.JSON) {
      throw new IllegalArgumentException("table " + name + " holds any bytes: only a table of JSON documents has indexes");
    }
    if (this.indexes.size() > io.shardwise.core.doc.IndexDef.MAX_PER_TABLE) {
      throw new IllegalArgumentException("a table has at most " + io.shardwise.core.doc.IndexDef.MAX_PER_TABLE + " indexes");
    }
    if (indexesChangedAt < id) {
      throw new IllegalArgumentException("table " + name + ": indexes changed at epoch " + indexesChangedAt + ", before the table existed");
    }
    this.indexesChangedAt = indexesChangedAt;
    this.name = Tables.checkName(name);
    if (id < 1) {
      throw new IllegalArgumentException("table id must be at least 1, not " + id);
    }
    this.id = id;
    if (spec.strategy() != layout.strategy()) {
      throw new IllegalArgumentException("table " + name + ": spec is " + spec.strategy() + " but layout is " + layout.strategy());
    }
    if (shards.size() != layout.shardCount()) {
      throw new IllegalArgumentException(
          "table " + name + ": layout has " + layout.shardCount() + " shards but " + shards.size() + " are assigned");
    }
    this.spec = spec;
    this.layout = layout;
    this.shards = List.copyOf(shards);
    this.replication = replication;
    if (replicationChangedAt < id) {
      throw new IllegalArgumentException("table " + name + ": replication changed at epoch " + replicationChangedAt + ", before the table existed");
    }
    this.replicationChangedAt = replicationChangedAt;
    long latest = Math.max(replicationChangedAt, indexesChangedAt);
    for (ShardAssignment s : this.shards) {
      latest = Math.max(latest, s.epoch());
    }
    this.changedAt = latest;
    long highest = -1;
    for (ShardAssignment s : this.shards) {
      highest = Math.max(highest, s.id().number());
    }
    if (nextShardNumber != 0 && nextShardNumber <= highest) {
      throw new IllegalArgumentException("table " + name + ": next shard number " + nextShardNumber + " is not above shard " + highest);
    }
    this.nextShardNumber = nextShardNumber == 0 ? highest + 1 : nextShardNumber;
  }

  /**
   * True if {@code earlier}, a map at an epoch not above the one that holds this table, holds this
   * very table: the same name and id, and nothing of it changed since ({@link #changedAt}). What a
   * node, a client or a store catching up from {@code earlier} can skip.
   */
  public boolean unchangedSince(ShardMap earlier) {
    return changedAt <= earlier.epoch() && earlier.table(name).map(t -> t.id() == id).orElse(false);
  }

  /** The number the next new shard of this table gets: above every shard number it ever had. */
  public long nextShardNumber() {
    return nextShardNumber;
  }

  /** The shard numbered {@code number}, if the table has it. */
  public java.util.Optional<ShardAssignment> shard(long number) {
    int position = positionOf(number);
    return position < 0 ? java.util.Optional.empty() : java.util.Optional.of(shards.get(position));
  }

  /** The position of the shard numbered {@code number}, or -1. */
  public int positionOf(long number) {
    if (number >= 0 && number < shards.size() && shards.get((int) number).id().number() == number) {
      return (int) number; // numbers are positions until the first split or merge
    }
    java.util.Map<Long, Integer> index = positions;
    if (index == null) {
      index = new java.util.HashMap<>();
      for (int i = 0; i < shards.size(); i++) {
        index.put(shards.get(i).id().number(), i);
      }
      positions = index;
    }
    return index.getOrDefault(number, -1);
  }

  /**
   * The map epoch at which this table last changed: its creation or the latest change of a shard
   * (every change gives the shards it touches the epoch of the map that makes it). A map at any
   * epoch from this one on holds this table exactly as it is here, which is what lets a client
   * that has a map fetch only the tables changed since.
   */
  public long changedAt() {
    return changedAt;
  }

  public String name() {
    return name;
  }

  /**
   * The map epoch at which the table was created: never reused, so data stored under a dropped
   * table can never be mistaken for a new table of the same name.
   */
  public long id() {
    return id;
  }

  public PartitionerSpec spec() {
    return spec;
  }

  public ShardLayout layout() {
    return layout;
  }

  /** The shards in position order. */
  public List<ShardAssignment> shards() {
    return shards;
  }

  /** The shard that holds {@code partitionKey}. */
  public ShardAssignment shardFor(byte[] partitionKey) {
    return shards.get(layout.shardFor(partitionKey));
  }

  /** The position of a shard, or -1 if the table has no such shard. */
  public int positionOf(ShardId id) {
    return id.table().equals(name) ? positionOf(id.number()) : -1;
  }

  /** How many replicas each shard keeps, and how many must have a write before it is acknowledged. */
  public Replication replication() {
    return replication;
  }

  /** What the table's values are: any bytes, or JSON documents checked on every write. */
  public ValueFormat format() {
    return format;
  }

  /** The table's secondary indexes, in creation order. */
  public List<io.shardwise.core.doc.IndexDef> indexes() {
    return indexes;
  }

  /** The index of {@code id}, if the table has it. */
  public java.util.Optional<io.shardwise.core.doc.IndexDef> index(long indexId) {
    return indexes.stream().filter(i -> i.id() == indexId).findFirst();
  }

  /** The index on {@code path} of {@code scope}, if the table has it. */
  public java.util.Optional<io.shardwise.core.doc.IndexDef> index(List<String> path, io.shardwise.core.doc.IndexDef.Scope scope) {
    return indexes.stream().filter(i -> i.path().equals(path) && i.scope() == scope).findFirst();
  }

  /** The table's global indexes (each with a table of its own), in creation order. */
  public List<io.shardwise.core.doc.IndexDef> globalIndexes() {
    return indexes.stream().filter(i -> i.scope() == io.shardwise.core.doc.IndexDef.Scope.GLOBAL).toList();
  }

  /** The table's global indexes kept in sync with their rows (each write a transaction with its entries). */
  public List<io.shardwise.core.doc.IndexDef> syncIndexes() {
    return indexes.stream().filter(io.shardwise.core.doc.IndexDef::sync).toList();
  }

  /** The table's global indexes kept asynchronously (each write leaves a pending marker that its shard's leader reconciles). */
  public List<io.shardwise.core.doc.IndexDef> asyncIndexes() {
    return indexes.stream().filter(io.shardwise.core.doc.IndexDef::async).toList();
  }

  /**
   * The id (the creating epoch) of the table's newest global index kept in sync; 0 if it has none.
   * From the map that holds it, a plain write of the table is refused where it lands.
   */
  public long newestSyncIndex() {
    long newest = 0;
    for (io.shardwise.core.doc.IndexDef i : indexes) {
      if (i.sync()) {
        newest = Math.max(newest, i.id());
      }
    }
    return newest;
  }

  /** The map epoch at which {@link #indexes} last changed (the table's id if never). */
  public long indexesChangedAt() {
    return indexesChangedAt;
  }

  /** The table with {@code next} as its indexes from map epoch {@code epoch} on. */
  Table withIndexes(List<io.shardwise.core.doc.IndexDef> next, long epoch) {
    return new Table(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt, format, next, epoch);
  }

  /** The map epoch at which {@link #replication} was last set (the table's id if never). */
  public long replicationChangedAt() {
    return replicationChangedAt;
  }

  Table withShard(int position, ShardAssignment shard) {
    List<ShardAssignment> next = new ArrayList<>(shards);
    next.set(position, shard);
    return new Table(name, id, spec, layout, next, nextShardNumber, replication, replicationChangedAt(), format, indexes, indexesChangedAt);
  }

  /** The table with a new layout and the shards to match, the next shard number raised to {@code nextShardNumber}. */
  Table withLayout(ShardLayout newLayout, List<ShardAssignment> newShards, long newNextShardNumber) {
    return new Table(name, id, spec, newLayout, newShards, newNextShardNumber, replication, replicationChangedAt(), format, indexes, indexesChangedAt);
  }

  /** The table keeping {@code newReplication} from map epoch {@code epoch} on (its shards converge to it as the balancer adds or removes replicas). */
  Table withReplication(Replication newReplication, long epoch) {
    return new Table(name, id, spec, layout, shards, nextShardNumber, newReplication, epoch, format, indexes, indexesChangedAt);
  }
}
