package io.shardwise.core.map;

import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * A change to the shard map, computed against the map at {@link #baseEpoch()}. Applying it to any
 * other epoch fails: whoever computed it must re-read the map and compute again (the same rule as
 * the compare-and-set that stores the map).
 *
 * <p>Immutable; build with {@link #on(ShardMap)}.
 */
public final class ShardMapDelta {

  /** One change. */
  public sealed interface Change permits CreateTable, DropTable, RestoreTable, MoveShard, SplitShard, MergeShards, JoinRing,
      SetReplication, AddFollower, RemoveFollower, ChangeInSync, ChangeLeader, GrantStore, RaiseVersionFloor,
      SetIndexes {}

  /**
   * A new table whose shard at position i is led by {@code owners.get(i)}, with the followers
   * {@code followers.get(i)} (empty lists for a table of one replica), all in sync: a new shard
   * holds nothing yet, so every replica has every write.
   */
  public record CreateTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners, List<List<NodeId>> followers,
      Replication replication, io.shardwise.core.doc.ValueFormat format) implements Change {
    public CreateTable {
      Tables.checkName(name);
      java.util.Objects.requireNonNull(format, "format");
      owners = List.copyOf(owners);
      List<List<NodeId>> copy = new ArrayList<>();
      followers.forEach(f -> copy.add(List.copyOf(f)));
      followers = List.copyOf(copy);
      if (followers.size() != owners.size()) {
        throw new IllegalArgumentException("table " + name + ": " + owners.size() + " owners but followers for " + followers.size() + " shards");
      }
    }

    /** A table of one replica per shard. */
    public CreateTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners) {
      this(name, spec, layout, owners, java.util.Collections.nCopies(owners.size(), List.of()), Replication.NONE);
    }

    /** A table of any bytes. */
    public CreateTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners, List<List<NodeId>> followers,
        Replication replication) {
      this(name, spec, layout, owners, followers, replication, io.shardwise.core.doc.ValueFormat.BYTES);
    }
  }

  /**
   * Sets how many replicas a table's shards keep and how many must be in sync for a write to be
   * acknowledged. The shards' replicas do not change here: the balancer adds and removes followers
   * until every shard has {@code replication.factor()} of them.
   */
  public record SetReplication(String table, Replication replication) implements Change {}

  /**
   * Sets a table's secondary indexes (creating one, marking it ready, dropping one): the whole list,
   * in creation order. Nodes maintain every index the map gives a table from the map that first
   * holds it on.
   */
  public record SetIndexes(String table, List<io.shardwise.core.doc.IndexDef> indexes) implements Change {
    public SetIndexes {
      indexes = List.copyOf(indexes);
    }
  }

  /**
   * Adds {@code node} as a follower of a shard, not in sync: it is being built (a snapshot, then the
   * replication log) and joins the in-sync set when its leader finds it caught up.
   */
  public record AddFollower(ShardId shard, NodeId node) implements Change {}

  /** Removes a follower (never the leader: change the leader first) from a shard's replicas. */
  public record RemoveFollower(ShardId shard, NodeId node) implements Change {}

  /**
   * The leader's change of its in-sync followers: refused unless {@code leader} still leads the
   * shard and it is still at {@code shardEpoch} (nothing of it changed since the leader looked), so
   * a deposed leader can never shrink the set its successor relies on. Shrinks when a follower falls
   * behind, grows when one has caught up.
   */
  public record ChangeInSync(ShardId shard, NodeId leader, long shardEpoch, List<NodeId> inSync, java.util.Map<NodeId, String> stores)
      implements Change {
    /**
     * @param stores for each follower it adds, the store it answered from: refused unless that is
     *     the store the map grants the follower's replicas to ({@link ShardMap#storeOf}), so a
     *     leader's knowledge of a node's old data directory can never vouch for its new one
     */
    public ChangeInSync {
      inSync = List.copyOf(inSync);
      stores = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(stores)); // by node: Map.copyOf's order differs between runs
    }

    /** A change that adds no follower (or one of a node with no store recorded). */
    public ChangeInSync(ShardId shard, NodeId leader, long shardEpoch, List<NodeId> inSync) {
      this(shard, leader, shardEpoch, inSync, java.util.Map.of());
    }
  }

  /**
   * Grants {@code node}'s replicas to {@code store} from now on: what a node starting on a data
   * directory the map does not know records, in the same change that takes it out of every
   * in-sync set and leadership (it holds none of their data).
   */
  public record GrantStore(NodeId node, String store) implements Change {}

  /**
   * Makes the in-sync follower {@code to} the shard's leader in place of {@code from}, which stays a
   * follower: in sync if {@code fromInSync} (a handover in which the old leader stopped writing and
   * the new one had all of its log), out of sync otherwise (a failover: it must catch up first).
   */
  public record ChangeLeader(ShardId shard, NodeId from, NodeId to, boolean fromInSync) implements Change {}

  /**
   * Raises a replicated table's version floor ({@link Replication#versionFloor}) to at least {@code
   * floor}: what a leader stores before it purges tombstones of versions up to it.
   */
  public record RaiseVersionFloor(String table, long floor) implements Change {}

  /** Removes a table and all its shards. */
  public record DropTable(String name) implements Change {}

  /**
   * Brings back a dropped table as it was when it was dropped: its id, layout and owners (the nodes
   * that keep its data in their trash), every shard at the new epoch. No table may have its name.
   */
  public record RestoreTable(Table table) implements Change {}

  /**
   * Gives a shard to a new owner, raising its epoch. {@code from} must be the current owner: a move
   * planned against an owner that has since changed is refused.
   */
  public record MoveShard(ShardId shard, NodeId from, NodeId to) implements Change {
    public MoveShard {
      if (from.equals(to)) {
        throw new IllegalArgumentException("shard " + shard + " already belongs to " + to);
      }
    }
  }

  /**
   * Splits a {@code range} shard at a partition key, or a {@code hashrange} shard at a hash, into
   * two new shards of the same owner: the lower part below the split, the upper part from it on.
   * The shard's number is retired; the two new ones are the table's next numbers, at the new epoch,
   * so every router and client holding the old map is refused and refreshes.
   */
  public record SplitShard(ShardId shard, byte[] partitionKey, long hash) implements Change {
    public SplitShard {
      partitionKey = partitionKey == null ? null : partitionKey.clone();
    }

    /** A split of a {@code range} shard: keys from {@code partitionKey} on go to the upper shard. */
    public static SplitShard atKey(ShardId shard, byte[] partitionKey) {
      return new SplitShard(shard, java.util.Objects.requireNonNull(partitionKey, "partitionKey"), 0);
    }

    /** A split of a {@code hashrange} shard: hashes from {@code hash} on go to the upper shard. */
    public static SplitShard atHash(ShardId shard, long hash) {
      return new SplitShard(shard, null, hash);
    }

    @Override
    public byte[] partitionKey() {
      return partitionKey == null ? null : partitionKey.clone();
    }
  }

  /**
   * Merges two adjacent shards ({@code right} directly after {@code left}) of one owner into one new
   * shard, at the new epoch. Shards of different owners do not merge: one moves first.
   */
  public record MergeShards(ShardId left, ShardId right) implements Change {}

  /**
   * Puts {@code node}'s points on the ring of a {@code ring} or {@code tokens} table of hash ranges
   * ({@link io.shardwise.core.partition.RingRanges}): every range one of its points falls inside is
   * cut there, into new shards of the range's owner at the new epoch (no data moves; the planner then
   * moves the new node's arcs to it).
   */
  public record JoinRing(String table, NodeId node) implements Change {}

  /** The most replicas a shard may have at once: its table's factor, and one more while a replica is rebuilt elsewhere. */
  public static final int MAX_REPLICAS_IN_FLIGHT = Replication.MAX_FACTOR + 1;

  private final long baseEpoch;
  private final List<Change> changes;

  private ShardMapDelta(long baseEpoch, List<Change> changes) {
    this.baseEpoch = baseEpoch;
    this.changes = List.copyOf(changes);
  }

  /** A builder of a delta against {@code base}. */
  public static Builder on(ShardMap base) {
    return new Builder(base.epoch());
  }

  public long baseEpoch() {
    return baseEpoch;
  }

  public List<Change> changes() {
    return changes;
  }

  /** Collects changes. Not thread-safe. */
  public static final class Builder {
    private final long baseEpoch;
    private final List<Change> changes = new ArrayList<>();

    private Builder(long baseEpoch) {
      this.baseEpoch = baseEpoch;
    }

    public Builder createTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners) {
      changes.add(new CreateTable(name, spec, layout, owners));
      return this;
    }

    public Builder createTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners, List<List<NodeId>> followers,
        Replication replication) {
      changes.add(new CreateTable(name, spec, layout, owners, followers, replication));
      return this;
    }

    public Builder createTable(String name, PartitionerSpec spec, ShardLayout layout, List<NodeId> owners, List<List<NodeId>> followers,
        Replication replication, io.shardwise.core.doc.ValueFormat format) {
      changes.add(new CreateTable(name, spec, layout, owners, followers, replication, format));
      return this;
    }

    /** Any change: the replication changes are built here directly. */
    public Builder add(Change change) {
      changes.add(change);
      return this;
    }

    public Builder dropTable(String name) {
      changes.add(new DropTable(name));
      return this;
    }

    public Builder restoreTable(Table table) {
      changes.add(new RestoreTable(table));
      return this;
    }

    public Builder moveShard(ShardId shard, NodeId from, NodeId to) {
      changes.add(new MoveShard(shard, from, to));
      return this;
    }

    public Builder splitShard(SplitShard split) {
      changes.add(split);
      return this;
    }

    public Builder joinRing(String table, NodeId node) {
      changes.add(new JoinRing(table, node));
      return this;
    }

    public Builder mergeShards(ShardId left, ShardId right) {
      changes.add(new MergeShards(left, right));
      return this;
    }

    public ShardMapDelta build() {
      if (changes.isEmpty()) {
        throw new IllegalArgumentException("a delta needs at least one change");
      }
      return new ShardMapDelta(baseEpoch, changes);
    }
  }
}
