package io.shardwise.core.partition;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A {@code ring} or {@code tokens} table in the cluster, stored as hash ranges cut at the ring's
 * points ({@link ShardLayout#ringRanges}): how it starts, how a node joins it, and which member's
 * point each range belongs to.
 *
 * <p>Member i of a table places exactly the points node i places in {@link PartitionerSpec#create}
 * (its virtual nodes, or its random tokens from the table's seed), so the cluster and {@code
 * simulate} agree on every key. A point {@code p} owns the arc {@code (previous point, p]}; every
 * point is a range boundary ({@code p + 1} starts a range), so an arc is one or more whole ranges,
 * and the arc that wraps past the top of the hash space is the last range plus the first.
 *
 * <p>A joining node adds its own points: each one that falls inside a range cuts it in two (a split
 * that writes no data, since stored keys are in hash order), and the ranges of the new arcs are
 * then what moves to it, about 1/(N+1) of the table — the keys consistent hashing says move, and no
 * others. Points are never removed: a node that leaves hands its ranges to others and keeps its
 * place on the ring, so if it comes back its arcs are its own again. Stateless.
 */
public final class RingRanges {

  private RingRanges() {}

  /**
   * The layout a new table starts with on {@code nodes} (member i is {@code nodes.get(i)}), and the
   * node index first owning each range: the member of its point.
   */
  public static ShardLayout.Initial initial(PartitionerSpec spec, List<String> nodes) {
    RingPartitioner ring = ring(spec, nodes.size());
    long max = spec.hash().maxValue();
    List<Long> starts = new ArrayList<>();
    List<Integer> owners = new ArrayList<>();
    starts.add(0L);
    long previous = -1; // the last distinct point
    boolean any = false;
    int firstOwner = -1;
    for (int i = 0; i < ring.shardCount(); i++) {
      long p = ring.point(i);
      if (any && p == previous) {
        continue; // an equal point of a later node owns nothing
      }
      if (!any) {
        firstOwner = ring.nodeOfShard(i);
      }
      owners.add(ring.nodeOfShard(i)); // the range that ends at p
      if (p != max) {
        starts.add(p + 1);
      }
      previous = p;
      any = true;
    }
    if (starts.size() > owners.size()) {
      owners.add(firstOwner); // above the last point: the arc that wraps to the first point
    }
    long[] values = starts.stream().mapToLong(Long::longValue).toArray();
    return new ShardLayout.Initial(ShardLayout.ringRanges(spec.strategy(), spec.hash(), values, nodes),
        owners.stream().mapToInt(Integer::intValue).toArray());
  }

  /** The points member {@code index} places, ascending and distinct (before ties with other members). */
  public static long[] pointsOf(PartitionerSpec spec, int index) {
    RingPartitioner ring = ring(spec, index + 1);
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < ring.shardCount(); i++) {
      if (ring.nodeOfShard(i) == index) {
        out.add(ring.point(i));
      }
    }
    return out.stream().mapToLong(Long::longValue).distinct().toArray();
  }

  /**
   * {@code layout} after {@code member} joins it as the next member: every point of the new member
   * that lies inside a range (not on an existing boundary) cuts it.
   *
   * @throws IllegalArgumentException if {@code member} is on the ring already, or the layout is not a ring of ranges
   */
  public static ShardLayout join(PartitionerSpec spec, ShardLayout layout, String member) {
    return layout.withMember(member, startsAfterJoin(spec, layout, member));
  }

  /**
   * The range starts the next member's points add to {@code layout} (those not on a boundary
   * already), ascending: the cuts its join makes. A join whose cuts were all made before (by
   * splits at these hashes) makes none, and changes nothing but the members.
   */
  public static long[] joinCuts(PartitionerSpec spec, ShardLayout layout) {
    requireRing(layout);
    long[] old = layout.hashValues();
    long max = spec.hash().maxValue();
    java.util.TreeSet<Long> cuts = new java.util.TreeSet<>(Long::compareUnsigned);
    for (long p : pointsOf(spec, layout.ringMembers().size())) {
      if (p != max) {
        cuts.add(p + 1);
      }
    }
    for (long o : old) {
      cuts.remove(o);
    }
    return cuts.stream().mapToLong(Long::longValue).toArray();
  }

  /** The range starts after {@code member} joins: ascending, the old starts among them. */
  private static long[] startsAfterJoin(PartitionerSpec spec, ShardLayout layout, String member) {
    requireRing(layout);
    if (layout.ringMembers().contains(member)) {
      throw new IllegalArgumentException(member + " is on the ring already (members: " + layout.ringMembers() + ")");
    }
    long max = spec.hash().maxValue();
    long[] old = layout.hashValues();
    long[] added = pointsOf(spec, layout.ringMembers().size());
    long[] all = Arrays.copyOf(old, old.length + added.length);
    int n = old.length;
    for (long p : added) {
      if (p != max) {
        all[n++] = p + 1;
      }
    }
    long[] cut = Arrays.copyOf(all, n);
    for (int i = 0; i < cut.length; i++) {
      cut[i] ^= Long.MIN_VALUE; // sort unsigned
    }
    Arrays.sort(cut);
    long[] out = new long[cut.length];
    int m = 0;
    for (long c : cut) {
      long v = c ^ Long.MIN_VALUE;
      if (m == 0 || out[m - 1] != v) {
        out[m++] = v;
      }
    }
    return Arrays.copyOf(out, m);
  }

  /**
   * For each range of {@code layout}, the index of the member whose point owns it: the first point
   * at or above the range's last hash, wrapping to the lowest point; of equal points, the earliest
   * member's.
   */
  public static int[] memberOfRanges(PartitionerSpec spec, ShardLayout layout) {
    requireRing(layout);
    RingPartitioner ring = ring(spec, layout.ringMembers().size());
    long[] starts = layout.hashValues();
    int[] out = new int[starts.length];
    for (int i = 0; i < starts.length; i++) {
      long last = i + 1 < starts.length ? starts[i + 1] - 1 : spec.hash().maxValue();
      out[i] = ring.nodeOfShard(ring.shardForHash(last));
    }
    return out;
  }

  private static RingPartitioner ring(PartitionerSpec spec, int members) {
    if (spec.strategy() != Strategy.RING && spec.strategy() != Strategy.TOKENS) {
      throw new IllegalArgumentException("a " + spec.strategy() + " table has no ring");
    }
    return (RingPartitioner) spec.create(members, KeySample.empty());
  }

  private static void requireRing(ShardLayout layout) {
    if (layout.ringMembers().isEmpty()) {
      throw new IllegalArgumentException("a " + layout.strategy() + " layout of whole arcs has no ring members"
          + " (a table created before rings were stored as hash ranges)");
    }
  }
}
