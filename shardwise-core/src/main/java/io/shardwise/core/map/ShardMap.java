package io.shardwise.core.map;

import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.RingRanges;
import io.shardwise.core.partition.ShardLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The authoritative picture of the cluster's data: every table, its layout, and the owner and epoch
 * of every shard, at a map {@link #epoch()} that rises by one with every change.
 *
 * <p>An immutable image (after Kafka's {@code TopicsImage}): a change is a {@link ShardMapDelta},
 * and {@link #apply} returns a new map. Every shard has exactly one owner at any epoch, and a
 * shard's epoch is the map epoch at which its owner got it. {@link #route} is the rule every node
 * applies before serving a key.
 *
 * <p>Thread-safe.
 */
public final class ShardMap {

  /** The map before anything was created: epoch 0, no tables. */
  public static final ShardMap EMPTY = new ShardMap(0, new TreeMap<>(), new TreeMap<>());

  private final long epoch;
  private final SortedMap<String, Table> tables;
  private final SortedMap<NodeId, String> stores;

  private ShardMap(long epoch, SortedMap<String, Table> tables, SortedMap<NodeId, String> stores) {
    this.epoch = epoch;
    this.tables = Collections.unmodifiableSortedMap(tables);
    this.stores = Collections.unmodifiableSortedMap(stores);
  }

  /** {@link #restore(long, List, java.util.Map)} with no stores recorded (a map as clients see it). */
  public static ShardMap restore(long epoch, List<Table> tables) {
    return restore(epoch, tables, java.util.Map.of());
  }

  /**
   * Rebuilds a stored map. Used by whatever reads the map back from storage.
   *
   * @param stores the store each node's replicas are granted to ({@link #storeOf})
   * @throws IllegalArgumentException if a shard epoch is above the map epoch or a shard id repeats
   */
  public static ShardMap restore(long epoch, List<Table> tables, java.util.Map<NodeId, String> stores) {
    SortedMap<String, Table> byName = new TreeMap<>();
    for (Table t : tables) {
      if (byName.put(t.name(), t) != null) {
        throw new IllegalArgumentException("table " + t.name() + " appears twice");
      }
      if (t.id() > epoch) {
        throw new IllegalArgumentException("table " + t.name() + " has id " + t.id() + " above the map epoch " + epoch);
      }
      if (t.changedAt() > epoch) {
        ShardAssignment newest = t.shards().stream().max(java.util.Comparator.comparingLong(ShardAssignment::epoch)).orElseThrow();
        throw new IllegalArgumentException("shard " + newest.id() + " has epoch " + newest.epoch() + " above the map epoch " + epoch);
      }
      long[] numbers = new long[t.shards().size()];
      for (int i = 0; i < numbers.length; i++) {
        ShardAssignment s = t.shards().get(i);
        if (!s.id().table().equals(t.name())) {
          throw new IllegalArgumentException("shard id " + s.id() + " is repeated or names another table");
        }
        numbers[i] = s.id().number();
      }
      java.util.Arrays.sort(numbers); // a sort, not a set: a map of 100,000 shards is rebuilt on every change
      for (int i = 1; i < numbers.length; i++) {
        if (numbers[i] == numbers[i - 1]) {
          throw new IllegalArgumentException("shard id " + new ShardId(t.name(), numbers[i]) + " is repeated or names another table");
        }
      }
    }
    return new ShardMap(epoch, byName, new TreeMap<>(stores));
  }

  /** Builds a table for {@link #restore}, its next shard number one above its highest. */
  public static Table table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards) {
    return new Table(name, id, spec, layout, shards);
  }

  /**
   * Builds a table for {@link #restore}.
   *
   * @param nextShardNumber the number its next new shard gets (0: one above its highest)
   */
  public static Table table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards,
      long nextShardNumber) {
    return new Table(name, id, spec, layout, shards, nextShardNumber);
  }

  /**
   * Builds a table for {@link #restore} that keeps {@code replication}, set at map epoch {@code
   * replicationChangedAt} (its id if never changed).
   */
  public static Table table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards,
      long nextShardNumber, Replication replication, long replicationChangedAt) {
    return new Table(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt);
  }

  /** Builds a table for {@link #restore} as the one above, whose values are of {@code format}. */
  public static Table table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards,
      long nextShardNumber, Replication replication, long replicationChangedAt, io.shardwise.core.doc.ValueFormat format) {
    return new Table(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt, format);
  }

  /** Builds a table for {@link #restore} as the one above, with {@code indexes}, last changed at map epoch {@code indexesChangedAt}. */
  public static Table table(String name, long id, PartitionerSpec spec, ShardLayout layout, List<ShardAssignment> shards,
      long nextShardNumber, Replication replication, long replicationChangedAt, io.shardwise.core.doc.ValueFormat format,
      List<io.shardwise.core.doc.IndexDef> indexes, long indexesChangedAt) {
    return new Table(name, id, spec, layout, shards, nextShardNumber, replication, replicationChangedAt, format, indexes, indexesChangedAt);
  }

  public long epoch() {
    return epoch;
  }

  /**
   * The store (a node's data directory, by its id) that {@code node}'s replicas in this map are
   * granted to: their in-sync memberships and leaderships vouch for that data, not for whatever
   * directory a process with the node's id has. A node starting on another store takes itself out
   * of them first ({@link ShardMapDelta.GrantStore}); a follower joins an in-sync set only with a
   * leader's word that it answered from this store ({@link ShardMapDelta.ChangeInSync#stores}).
   * Empty if none is recorded (nodes of a build before store ids).
   */
  public Optional<String> storeOf(NodeId node) {
    return Optional.ofNullable(stores.get(node));
  }

  /** Every recorded store, by node. */
  public SortedMap<NodeId, String> stores() {
    return stores;
  }

  /** Tables by name, in name order. */
  public SortedMap<String, Table> tables() {
    return tables;
  }

  public Optional<Table> table(String name) {
    return Optional.ofNullable(tables.get(name));
  }

  /** The table whose id is {@code tableId}, if this map has it. */
  public Optional<Table> tableById(long tableId) {
    for (Table t : tables.values()) {
      if (t.id() == tableId) {
        return Optional.of(t);
      }
    }
    return Optional.empty();
  }

  /**
   * The shard at {@code number} of the table whose id is {@code tableId}: how a node names a shard
   * in storage and moves, where a re-created table of the same name never matches.
   */
  public Optional<ShardAssignment> shard(long tableId, long number) {
    for (Table t : tables.values()) {
      if (t.id() == tableId) {
        return t.shard(number);
      }
    }
    return Optional.empty();
  }

  /**
   * A shard's name for people, as the CLI and the console write it: {@code users/96}; a table this
   * map does not have (dropped, or not yet seen) by its id: {@code table#5/96}.
   */
  public String shardName(long tableId, long number) {
    for (Table t : tables.values()) {
      if (t.id() == tableId) {
        return t.name() + "/" + number;
      }
    }
    return "table#" + tableId + "/" + number;
  }

  /**
   * True if {@code node} keeps a replica of shard {@code number} of table {@code tableId} in this
   * map, as its leader or a follower: its copy is the shard's data, never a stale one to trash.
   */
  public boolean holds(NodeId node, long tableId, long number) {
    return shard(tableId, number).map(s -> s.isReplica(node)).orElse(false);
  }

  /** True if {@code node} owns the shard {@code number} of table {@code tableId} in this map. */
  public boolean owns(NodeId node, long tableId, long number) {
    return shard(tableId, number).map(s -> s.owner().equals(node)).orElse(false);
  }

  /** The shards {@code node} owns, in id order. */
  public List<ShardAssignment> shardsOf(NodeId node) {
    List<ShardAssignment> out = new ArrayList<>();
    for (Table t : tables.values()) {
      for (ShardAssignment s : t.shards()) {
        if (s.owner().equals(node)) {
          out.add(s);
        }
      }
    }
    out.sort((a, b) -> a.id().compareTo(b.id()));
    return out;
  }

  /**
   * The map with {@code delta} applied, at epoch {@code epoch() + 1}.
   *
   * @throws StaleDeltaException if the delta was computed against another epoch
   * @throws IllegalArgumentException if a change does not fit this map (a table that exists or
   *     does not, a move whose {@code from} is not the owner); nothing is applied
   */
  public ShardMap apply(ShardMapDelta delta) {
    if (delta.baseEpoch() != epoch) {
      throw new StaleDeltaException(delta.baseEpoch(), epoch);
    }
    long next = epoch + 1;
    SortedMap<String, Table> out = new TreeMap<>(tables);
    SortedMap<NodeId, String> grants = new TreeMap<>(stores);
    for (ShardMapDelta.Change change : delta.changes()) {
      if (change instanceof ShardMapDelta.GrantStore g) {
        grants.put(g.node(), g.store());
      } else if (change instanceof ShardMapDelta.CreateTable) {
        ShardMapDelta.CreateTable c = (ShardMapDelta.CreateTable) change;
        if (out.containsKey(c.name())) {
          throw new IllegalArgumentException("table " + c.name() + " already exists");
        }
        List<ShardAssignment> shards = new ArrayList<>();
        for (int i = 0; i < c.owners().size(); i++) {
          List<NodeId> followers = c.followers().get(i);
          if (followers.size() >= c.replication().factor()) {
            throw new IllegalArgumentException("table " + c.name() + " keeps " + c.replication().factor() + " replicas; shard " + i
                + " was given " + (followers.size() + 1));
          }
          shards.add(new ShardAssignment(new ShardId(c.name(), i), c.owners().get(i), next, followers, followers));
        }
        out.put(c.name(), new Table(c.name(), next, c.spec(), c.layout(), shards, 0, c.replication(), next, c.format()));
      } else if (change instanceof ShardMapDelta.RestoreTable) {
        Table t = ((ShardMapDelta.RestoreTable) change).table();
        if (out.containsKey(t.name())) {
          throw new IllegalArgumentException("table " + t.name() + " exists; drop it first to bring back the dropped one");
        }
        for (Table other : out.values()) {
          if (other.id() == t.id()) {
            throw new IllegalArgumentException("table id " + t.id() + " is in use by table " + other.name());
          }
        }
        if (t.id() >= next) {
          throw new IllegalArgumentException("table " + t.name() + " has id " + t.id() + ", newer than this map");
        }
        List<ShardAssignment> shards = new ArrayList<>();
        for (ShardAssignment s : t.shards()) {
          shards.add(s.as(s.id(), next));
        }
        // Without its indexes: their entries went to the trash with the rows; `index create` builds them again.
        out.put(t.name(), new Table(t.name(), t.id(), t.spec(), t.layout(), shards, t.nextShardNumber(), t.replication(), next,
            t.format()));
      } else if (change instanceof ShardMapDelta.DropTable) {
        String name = ((ShardMapDelta.DropTable) change).name();
        if (out.remove(name) == null) {
          throw new IllegalArgumentException("table " + name + " does not exist");
        }
      } else if (change instanceof ShardMapDelta.SplitShard) {
        ShardMapDelta.SplitShard split = (ShardMapDelta.SplitShard) change;
        Table t = splittable(out, split.shard());
        int position = t.positionOf(split.shard());
        ShardLayout layout = split.partitionKey() != null
            ? t.layout().splitAt(position, split.partitionKey())
            : t.layout().splitAtHash(position, split.hash());
        ShardAssignment parent = t.shards().get(position);
        long number = t.nextShardNumber();
        List<ShardAssignment> shards = new ArrayList<>(t.shards());
        shards.set(position, parent.as(new ShardId(t.name(), number), next)); // both halves on every replica of the parent
        shards.add(position + 1, parent.as(new ShardId(t.name(), number + 1), next));
        out.put(t.name(), t.withLayout(layout, shards, number + 2));
      } else if (change instanceof ShardMapDelta.JoinRing) {
        ShardMapDelta.JoinRing join = (ShardMapDelta.JoinRing) change;
        Table t = out.get(join.table());
        if (t == null) {
          throw new IllegalArgumentException("table " + join.table() + " does not exist");
        }
        out.put(t.name(), joined(t, join.node(), next));
      } else if (change instanceof ShardMapDelta.MergeShards) {
        ShardMapDelta.MergeShards merge = (ShardMapDelta.MergeShards) change;
        Table t = splittable(out, merge.left());
        int left = t.positionOf(merge.left());
        int right = t.positionOf(merge.right());
        if (right < 0) {
          throw new IllegalArgumentException("shard " + merge.right() + " does not exist");
        }
        if (right != left + 1) {
          throw new IllegalArgumentException("shards " + merge.left() + " and " + merge.right() + " are not adjacent (positions " + left + " and "
              + right + "); only a shard and the one right after it merge");
        }
        ShardAssignment a = t.shards().get(left);
        ShardAssignment b = t.shards().get(right);
        if (!a.owner().equals(b.owner())) {
          throw new IllegalArgumentException("shards " + merge.left() + " and " + merge.right() + " belong to " + a.owner() + " and "
              + b.owner() + "; move one to the other's owner first");
        }
        if (!a.sameReplicas(b)) {
          throw new IllegalArgumentException("shards " + merge.left() + " and " + merge.right() + " have the followers " + a.followers()
              + " and " + b.followers() + "; only shards with the same replicas merge");
        }
        ShardLayout layout = t.layout().mergeWithNext(left);
        long number = t.nextShardNumber();
        List<ShardAssignment> shards = new ArrayList<>(t.shards());
        shards.remove(right);
        List<NodeId> inSync = new ArrayList<>(a.inSync());
        inSync.retainAll(b.inSync()); // in sync for the merged shard only if in sync for both halves
        shards.set(left, new ShardAssignment(new ShardId(t.name(), number), a.owner(), next, a.followers(), inSync));
        out.put(t.name(), t.withLayout(layout, shards, number + 1));
      } else if (change instanceof ShardMapDelta.SetReplication r) {
        Table t = out.get(r.table());
        if (t == null) {
          throw new IllegalArgumentException("table " + r.table() + " does not exist");
        }
        // A factor's change keeps the version floor: it only ever rises.
        boolean starts = !t.replication().replicated() && r.replication().replicated();
        Replication replication = r.replication().withVersionFloor(t.replication().versionFloor()).since(starts ? next : t.replication().since());
        Table changed = t.withReplication(replication, next);
        if (starts) {
          changed = startReplicating(changed, next);
        } else if (t.replication().replicated() && !r.replication().replicated()) {
          changed = stopReplicating(changed, next);
        }
        out.put(t.name(), changed);
      } else if (change instanceof ShardMapDelta.SetIndexes set) {
        Table t = out.get(set.table());
        if (t == null) {
          throw new IllegalArgumentException("table " + set.table() + " does not exist");
        }
        out.put(t.name(), t.withIndexes(set.indexes(), next));
      } else if (change instanceof ShardMapDelta.RaiseVersionFloor raise) {
        Table t = out.get(raise.table());
        if (t == null) {
          throw new IllegalArgumentException("table " + raise.table() + " does not exist");
        }
        if (raise.floor() > t.replication().versionFloor()) {
          out.put(t.name(), t.withReplication(t.replication().withVersionFloor(raise.floor()), next));
        }
      } else if (change instanceof ShardMapDelta.AddFollower add) {
        Table t = existing(out, add.shard());
        int position = t.positionOf(add.shard());
        ShardAssignment s = t.shards().get(position);
        if (s.isReplica(add.node())) {
          throw new IllegalArgumentException("shard " + s.id() + " already has a replica on " + add.node());
        }
        if (s.followers().size() + 1 >= ShardMapDelta.MAX_REPLICAS_IN_FLIGHT) {
          throw new IllegalArgumentException("shard " + s.id() + " has " + (s.followers().size() + 1) + " replicas; no more are added");
        }
        List<NodeId> followers = new ArrayList<>(s.followers());
        followers.add(add.node());
        out.put(t.name(), t.withShard(position, s.withFollowers(followers, s.inSync(), next)));
      } else if (change instanceof ShardMapDelta.RemoveFollower remove) {
        Table t = existing(out, remove.shard());
        int position = t.positionOf(remove.shard());
        ShardAssignment s = t.shards().get(position);
        if (!s.followers().contains(remove.node())) {
          throw new IllegalArgumentException("shard " + s.id() + " has no follower on " + remove.node()
              + (s.owner().equals(remove.node()) ? " (it leads it: change the leader first)" : ""));
        }
        List<NodeId> followers = new ArrayList<>(s.followers());
        followers.remove(remove.node());
        List<NodeId> inSync = new ArrayList<>(s.inSync());
        inSync.remove(remove.node());
        out.put(t.name(), t.withShard(position, s.withFollowers(followers, inSync, next)));
      } else if (change instanceof ShardMapDelta.ChangeInSync isr) {
        Table t = existing(out, isr.shard());
        int position = t.positionOf(isr.shard());
        ShardAssignment s = t.shards().get(position);
        if (!s.owner().equals(isr.leader()) || s.epoch() != isr.shardEpoch()) {
          throw new IllegalArgumentException("shard " + s.id() + " is led by " + s.owner() + " at epoch " + s.epoch() + ", not by "
              + isr.leader() + " at " + isr.shardEpoch() + "; only its leader changes its in-sync replicas");
        }
        List<NodeId> ordered = new ArrayList<>();
        for (NodeId f : s.followers()) {
          if (isr.inSync().contains(f)) {
            ordered.add(f);
          }
        }
        if (ordered.size() != isr.inSync().size()) {
          throw new IllegalArgumentException("shard " + s.id() + ": in-sync " + isr.inSync() + " are not all followers " + s.followers());
        }
        for (NodeId f : ordered) {
          String granted = grants.get(f);
          if (!s.inSync().contains(f) && granted != null && !granted.equals(isr.stores().get(f))) {
            throw new IllegalArgumentException("shard " + s.id() + ": " + f + " joins the in-sync set on the word of store "
                + isr.stores().get(f) + ", but its replicas are granted to store " + granted + " (its data directory was replaced)");
          }
        }
        out.put(t.name(), t.withShard(position, s.withFollowers(s.followers(), ordered, next)));
      } else if (change instanceof ShardMapDelta.ChangeLeader lead) {
        Table t = existing(out, lead.shard());
        int position = t.positionOf(lead.shard());
        ShardAssignment s = t.shards().get(position);
        if (!s.owner().equals(lead.from())) {
          throw new IllegalArgumentException("shard " + s.id() + " is led by " + s.owner() + ", not " + lead.from());
        }
        if (!s.inSync().contains(lead.to())) {
          throw new IllegalArgumentException("shard " + s.id() + ": " + lead.to() + " is not an in-sync follower " + s.inSync()
              + "; only one may lead (it has every acknowledged write)");
        }
        List<NodeId> followers = new ArrayList<>(s.followers());
        followers.set(followers.indexOf(lead.to()), lead.from()); // the old leader takes the new one's place
        List<NodeId> inSync = new ArrayList<>();
        for (NodeId f : followers) {
          if (f.equals(lead.from()) ? lead.fromInSync() : s.inSync().contains(f)) {
            inSync.add(f);
          }
        }
        out.put(t.name(), t.withShard(position, new ShardAssignment(s.id(), lead.to(), next, next, followers, inSync)));
      } else {
        ShardMapDelta.MoveShard m = (ShardMapDelta.MoveShard) change;
        Table t = out.get(m.shard().table());
        int position = t == null ? -1 : t.positionOf(m.shard());
        if (position < 0) {
          throw new IllegalArgumentException("shard " + m.shard() + " does not exist");
        }
        ShardAssignment current = t.shards().get(position);
        if (!current.owner().equals(m.from())) {
          throw new IllegalArgumentException(
              "shard " + m.shard() + " belongs to " + current.owner() + ", not " + m.from() + "; re-plan the move");
        }
        if (!current.followers().isEmpty()) {
          throw new IllegalArgumentException("shard " + m.shard() + " has followers " + current.followers()
              + "; a replicated shard changes nodes a replica at a time (add a follower, change the leader, remove one)");
        }
        out.put(t.name(), t.withShard(position, current.movedTo(m.to(), next)));
      }
    }
    return new ShardMap(next, out, grants);
  }

  /** {@code t} with {@code node} on its ring: each range its points cut becomes new shards of the same owner. */
  private static Table joined(Table t, NodeId node, long epoch) {
    ShardLayout layout = t.layout();
    ShardLayout after = RingRanges.join(t.spec(), layout, node.value());
    long[] starts = after.hashValues();
    long[] old = layout.hashValues();
    long number = t.nextShardNumber();
    List<ShardAssignment> shards = new ArrayList<>(starts.length);
    int at = 0; // the old range holding starts[i]
    for (int i = 0; i < starts.length; i++) {
      while (at + 1 < old.length && Long.compareUnsigned(old[at + 1], starts[i]) <= 0) {
        at++;
      }
      ShardAssignment parent = t.shards().get(at);
      boolean whole = old[at] == starts[i] && (i + 1 == starts.length ? at + 1 == old.length
          : at + 1 < old.length && old[at + 1] == starts[i + 1]);
      shards.add(whole ? parent : parent.as(new ShardId(t.name(), number++), epoch));
    }
    return t.withLayout(after, shards, number);
  }

  /**
   * A table of one replica per shard that begins to keep replicas at {@code epoch}: each shard is
   * led by its owner from that epoch, with no follower yet (the balancer adds them). The new shard
   * epoch fences what the owners did under the old one: a write on the path without a log, or a
   * move's cutover planned before.
   */
  private static Table startReplicating(Table t, long epoch) {
    List<ShardAssignment> led = new ArrayList<>(t.shards().size());
    for (ShardAssignment s : t.shards()) {
      led.add(new ShardAssignment(s.id(), s.owner(), epoch, epoch, List.of(), List.of()));
    }
    return t.withLayout(t.layout(), led, t.nextShardNumber());
  }

  /**
   * A replicated table that goes back to one replica per shard at {@code epoch}: each leader keeps
   * its shard alone, its followers removed (their copies go to their nodes' trash). The new shard
   * epoch fences the leaders' logs: a leader steps down from its log before its writes take the path
   * without one.
   */
  private static Table stopReplicating(Table t, long epoch) {
    List<ShardAssignment> alone = new ArrayList<>(t.shards().size());
    for (ShardAssignment s : t.shards()) {
      alone.add(new ShardAssignment(s.id(), s.owner(), epoch, s.leaderEpoch(), List.of(), List.of()));
    }
    return t.withLayout(t.layout(), alone, t.nextShardNumber());
  }

  private static Table existing(SortedMap<String, Table> tables, ShardId shard) {
    Table t = tables.get(shard.table());
    if (t == null || t.positionOf(shard) < 0) {
      throw new IllegalArgumentException("shard " + shard + " does not exist");
    }
    return t;
  }

  /** {@link #existing}, for a split or a merge: the table's shards must be able to split and merge. */
  private static Table splittable(SortedMap<String, Table> tables, ShardId shard) {
    Table t = existing(tables, shard);
    if (!t.layout().splittable()) {
      throw new IllegalArgumentException("table " + t.name() + " is a " + t.spec().strategy().id()
          + " table; " + ShardLayout.SPLITTABLE);
    }
    return t;
  }

  /**
   * What {@code node} must do to go from {@code previous} to this map: shards to open (now its
   * own) and to close (no longer its own, or their table dropped).
   */
  public LocalChanges localChanges(NodeId node, ShardMap previous) {
    TreeSet<ShardId> before = new TreeSet<>();
    previous.shardsOf(node).forEach(s -> before.add(s.id()));
    TreeSet<ShardId> after = new TreeSet<>();
    shardsOf(node).forEach(s -> after.add(s.id()));
    List<ShardId> open = new ArrayList<>();
    for (ShardId id : after) {
      if (!before.contains(id)) {
        open.add(id);
      }
    }
    List<ShardId> close = new ArrayList<>();
    for (ShardId id : before) {
      if (!after.contains(id)) {
        close.add(id);
      }
    }
    return new LocalChanges(open, close);
  }

  /** Shards a node opens and closes when it applies a new map, in id order. */
  public record LocalChanges(List<ShardId> open, List<ShardId> close) {
    public LocalChanges {
      open = List.copyOf(open);
      close = List.copyOf(close);
    }
  }

  /**
   * Design rule 1, as a function: may {@code self}, holding this map, serve a request for
   * {@code partitionKey} of {@code table} from a caller whose map is at {@code requestEpoch}?
   *
   * <ul>
   *   <li>The caller's map is newer than ours: we may have lost the shard without knowing yet, so
   *       we do not serve ({@link Route.MapBehind}); the node catches up and the caller retries.
   *   <li>The shard is ours in our map: serve. The caller's map may be older, but ours is at least
   *       as new, and the answer carries our epoch so the caller can refresh.
   *   <li>Otherwise {@link Route.WrongShard}, with our epoch and the owner we know.
   * </ul>
   */
  public Route route(NodeId self, String table, byte[] partitionKey, long requestEpoch) {
    if (requestEpoch > epoch) {
      return new Route.MapBehind(epoch, requestEpoch);
    }
    Table t = tables.get(table);
    if (t == null) {
      return new Route.NoSuchTable(epoch, table);
    }
    ShardAssignment shard = t.shardFor(partitionKey);
    if (!shard.owner().equals(self)) {
      return new Route.WrongShard(epoch, shard.id(), shard.owner());
    }
    return new Route.Serve(epoch, shard);
  }
}
