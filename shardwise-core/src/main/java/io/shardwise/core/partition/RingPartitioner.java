package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.util.SplitMix64;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A hash ring: every node places points on the circle of hash values, and a key belongs to the
 * first point whose value is at or above the key's hash, wrapping to the lowest point (Karger et
 * al. 1997; Dynamo; Cassandra). A shard here is one point (an arc of the ring).
 *
 * <p>Two ways to place the points, two strategies:
 *
 * <ul>
 *   <li>{@code ring}: V virtual nodes per node (scaled by the node's weight); point v of node n is
 *       the hash of a name built from a template, {@code {node}-v{v}} by default, so a published
 *       simulation that names its points differently (say {@code shard-{shard}-v{v}}) can be
 *       reproduced exactly.
 *   <li>{@code tokens}: T random tokens per node from a seeded SplitMix64 stream of that node alone
 *       (Cassandra's {@code num_tokens}), reproducible from the seed.
 * </ul>
 *
 * <p>A node's points never depend on the other nodes, so adding a node moves keys only to it, and
 * removing one moves only its keys. Points are compared as unsigned values; equal points are
 * ordered by node, then by index, so ties resolve the same way everywhere.
 *
 * <p>Lookup is a lower-bound search over a sorted primitive array through a prefix index
 * ({@link HashPointIndex}): near-constant time for hashed points, O(log P) at worst, and
 * allocation-free for a pre-hashed key. Immutable and thread-safe.
 */
public final class RingPartitioner implements HashPartitioner, HashSpaceOwnership {

  /** The default virtual-node name template. */
  public static final String DEFAULT_TEMPLATE = "{node}-v{v}";

  /** How one node's points are made; depends only on the node. */
  private interface PointSource {
    long[] pointsOf(int node, double weight);
  }

  private final Strategy strategy;
  private final HashFunction hash;
  private final PointSource source;
  private final double[] weights;
  /** The ring points, ascending. */
  private final HashPointIndex points;
  /** Owner node of each point. */
  private final int[] owners;

  private RingPartitioner(Strategy strategy, HashFunction hash, PointSource source, double[] weights) {
    this.strategy = strategy;
    this.hash = hash;
    this.source = source;
    this.weights = weights;

    int total = 0;
    long[][] perNode = new long[weights.length][];
    for (int n = 0; n < weights.length; n++) {
      perNode[n] = source.pointsOf(n, weights[n]);
      total += perNode[n].length;
    }
    long[] keys = new long[total];
    int[] nodeOf = new int[total];
    int[] indexOf = new int[total];
    Integer[] order = new Integer[total];
    int at = 0;
    for (int n = 0; n < perNode.length; n++) {
      for (int v = 0; v < perNode[n].length; v++) {
        keys[at] = perNode[n][v] ^ Long.MIN_VALUE;
        nodeOf[at] = n;
        indexOf[at] = v;
        order[at] = at;
        at++;
      }
    }
    Arrays.sort(
        order,
        (a, b) -> {
          int c = Long.compare(keys[a], keys[b]);
          if (c == 0) {
            c = Integer.compare(nodeOf[a], nodeOf[b]);
          }
          return c != 0 ? c : Integer.compare(indexOf[a], indexOf[b]);
        });
    long[] sorted = new long[total];
    this.owners = new int[total];
    for (int i = 0; i < total; i++) {
      sorted[i] = keys[order[i]];
      owners[i] = nodeOf[order[i]];
    }
    this.points = new HashPointIndex(sorted, hash.bits());
  }

  /**
   * A ring of {@code vnodes} virtual nodes per node, every node of weight 1.
   *
   * @param template the point name; {@code {node}} (or its synonym {@code {shard}}) expands to the
   *     node number and {@code {v}} to the virtual-node index, both in decimal
   */
  public static RingPartitioner virtualNodes(HashFunction hash, int nodes, int vnodes, String template) {
    double[] weights = new double[Validation.positiveNodes(nodes)];
    Arrays.fill(weights, 1.0);
    return virtualNodes(hash, weights, vnodes, template);
  }

  /**
   * A ring where node n gets {@code max(1, round(vnodes * weights[n]))} virtual nodes.
   *
   * @throws IllegalArgumentException for a non-positive weight or vnode count, or a template that
   *     lacks {@code {v}} or a node placeholder
   */
  public static RingPartitioner virtualNodes(HashFunction hash, double[] weights, int vnodes, String template) {
    Validation.positiveNodes(weights.length);
    if (vnodes < 1) {
      throw new IllegalArgumentException("virtual nodes per node must be at least 1, not " + vnodes);
    }
    checkTemplate(template);
    for (double w : weights) {
      if (!(w > 0) || Double.isInfinite(w)) {
        throw new IllegalArgumentException("node weights must be positive and finite, not " + w);
      }
    }
    PointSource source =
        (node, weight) -> {
          int count = (int) Math.max(1, Math.round(vnodes * weight));
          String prefix = template.replace("{node}", Integer.toString(node)).replace("{shard}", Integer.toString(node));
          long[] points = new long[count];
          for (int v = 0; v < count; v++) {
            points[v] = hash.hash(prefix.replace("{v}", Integer.toString(v)));
          }
          return points;
        };
    return new RingPartitioner(Strategy.RING, hash, source, weights.clone());
  }

  /**
   * Returns {@code template} if it names both the node ({@code {node}} or {@code {shard}}) and the
   * virtual-node index ({@code {v}}); without both, points of one node or of all nodes would collide.
   *
   * @throws IllegalArgumentException naming the template
   */
  public static String checkTemplate(String template) {
    if (!template.contains("{v}") || !(template.contains("{node}") || template.contains("{shard}"))) {
      throw new IllegalArgumentException(
          "virtual-node name template '" + template + "' must contain {v} and {node} (or {shard})");
    }
    return template;
  }

  /**
   * {@code tokensPerNode} random tokens per node, uniform over the hash function's value space.
   * Node n's tokens come from SplitMix64 seeded with {@code fmix64(seed + n)} alone.
   */
  public static RingPartitioner randomTokens(HashFunction hash, int nodes, int tokensPerNode, long seed) {
    Validation.positiveNodes(nodes);
    if (tokensPerNode < 1) {
      throw new IllegalArgumentException("tokens per node must be at least 1, not " + tokensPerNode);
    }
    long mask = hash.maxValue();
    PointSource source =
        (node, weight) -> {
          SplitMix64 random = new SplitMix64(RendezvousPartitioner.fmix64(seed + node));
          long[] tokens = new long[tokensPerNode];
          for (int t = 0; t < tokensPerNode; t++) {
            tokens[t] = random.nextLong() & mask;
          }
          return tokens;
        };
    double[] weights = new double[nodes];
    Arrays.fill(weights, 1.0);
    return new RingPartitioner(Strategy.TOKENS, hash, source, weights);
  }

  @Override
  public Strategy strategy() {
    return strategy;
  }

  @Override
  public HashFunction hashFunction() {
    return hash;
  }

  @Override
  public int shardCount() {
    return points.size();
  }

  @Override
  public int nodeCount() {
    return weights.length;
  }

  @Override
  public int shardForHash(long h) {
    int at = points.lowerBound(h);
    return at == points.size() ? 0 : at;
  }

  @Override
  public int nodeOfShard(int shard) {
    return owners[shard];
  }

  /** The unsigned hash value of ring point {@code shard}. */
  public long point(int shard) {
    return points.value(shard);
  }

  /** New nodes get weight 1; shrinking drops the highest-numbered nodes and their points. */
  @Override
  public RingPartitioner withNodeCount(int nodes, KeySample sample) {
    Validation.positiveNodes(nodes);
    double[] next = Arrays.copyOf(weights, nodes);
    for (int n = weights.length; n < nodes; n++) {
      next[n] = 1.0;
    }
    return new RingPartitioner(strategy, hash, source, next);
  }

  @Override
  public long spaceMax() {
    return hash.maxValue();
  }

  @Override
  public List<OwnedHashRange> ownership() {
    List<OwnedHashRange> out = new ArrayList<>();
    long max = hash.maxValue();
    int firstOwner = owners[0];
    long previous = 0; // the last point placed; the next arc starts after it
    boolean started = false;
    for (int i = 0; i < points.size(); i++) {
      long p = points.value(i);
      long first = started ? previous + 1 : 0;
      if (started && p == previous) {
        continue; // a duplicate point owns nothing: the earlier one took the value
      }
      add(out, first, p, owners[i]);
      previous = p;
      started = true;
      if (p == max) {
        return out; // the last point sits at the top: nothing wraps
      }
    }
    add(out, previous + 1, max, firstOwner);
    return out;
  }

  private static void add(List<OwnedHashRange> out, long first, long last, int node) {
    if (!out.isEmpty() && out.get(out.size() - 1).node() == node) {
      OwnedHashRange prev = out.remove(out.size() - 1);
      out.add(new OwnedHashRange(prev.first(), last, node));
    } else {
      out.add(new OwnedHashRange(first, last, node));
    }
  }
}
