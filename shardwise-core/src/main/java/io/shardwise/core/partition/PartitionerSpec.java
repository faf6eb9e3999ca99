package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import java.util.ArrayList;
import java.util.List;

/**
 * A strategy and its parameters: everything needed to place a table onto any number of nodes, and
 * what a table stores so every process places it the same way.
 *
 * <p>Immutable; build with {@link #builder(Strategy)}, which validates each value as it is set.
 */
public final class PartitionerSpec {

  public static final int DEFAULT_VNODES = 256;
  public static final int DEFAULT_TOKENS = 16;

  /** The most virtual nodes ({@code ring}) or tokens ({@code tokens}) one node may have. */
  public static final int MAX_POINTS_PER_NODE = 4096;

  private final Strategy strategy;
  private final HashFunction hash;
  private final int vnodes;
  private final String vnodeTemplate;
  private final int slots;
  private final int tokensPerNode;
  private final long seed;
  private final List<byte[]> splitPoints;

  private PartitionerSpec(Builder b) {
    this.strategy = b.strategy;
    this.hash = b.hash;
    this.vnodes = b.vnodes;
    this.vnodeTemplate = b.vnodeTemplate;
    this.slots = b.slots;
    this.tokensPerNode = b.tokensPerNode;
    this.seed = b.seed;
    this.splitPoints = b.splitPoints;
  }

  public static Builder builder(Strategy strategy) {
    return new Builder(strategy);
  }

  public Strategy strategy() {
    return strategy;
  }

  public HashFunction hash() {
    return hash;
  }

  public int vnodes() {
    return vnodes;
  }

  public String vnodeTemplate() {
    return vnodeTemplate;
  }

  public int slots() {
    return slots;
  }

  public int tokensPerNode() {
    return tokensPerNode;
  }

  public long seed() {
    return seed;
  }

  /** Explicit {@code range} split points (copies); empty when the table pre-splits from a sample. */
  public List<byte[]> splitPoints() {
    List<byte[]> out = new ArrayList<>();
    splitPoints.forEach(p -> out.add(p.clone()));
    return out;
  }

  /** Whether placing needs a key sample: {@code range} without split points. */
  public boolean needsSample() {
    return strategy == Strategy.RANGE && splitPoints.isEmpty();
  }

  /**
   * The table placed onto {@code nodes} nodes, as it would be created: {@code range} from its split
   * points, or pre-split from {@code sample} into one shard per node; {@code hashrange} as one equal
   * range per node; {@code slots} in contiguous blocks.
   *
   * @throws IllegalArgumentException when the parameters cannot place onto {@code nodes} nodes
   */
  public Partitioner create(int nodes, KeySample sample) {
    Validation.positiveNodes(nodes);
    switch (strategy) {
      case RANGE:
        return splitPoints.isEmpty() ? RangePartitioner.preSplit(sample, nodes, nodes) : RangePartitioner.of(splitPoints, nodes);
      case MOD:
        return new ModPartitioner(hash, nodes);
      case RING:
        return RingPartitioner.virtualNodes(hash, nodes, vnodes, vnodeTemplate);
      case SLOTS:
        return SlotPartitioner.evenly(hash, slots, nodes);
      case HASHRANGE:
        return HashRangePartitioner.evenly(hash, nodes, nodes);
      case TOKENS:
        return RingPartitioner.randomTokens(hash, nodes, tokensPerNode, seed);
      case JUMP:
        return new JumpPartitioner(hash, nodes);
      case RENDEZVOUS:
        return new RendezvousPartitioner(hash, nodes);
      default:
        throw new AssertionError(strategy);
    }
  }

  /** Builds a {@link PartitionerSpec}; each setter rejects a bad value with a message naming it. */
  public static final class Builder {
    private final Strategy strategy;
    private HashFunction hash = HashFunctions.defaultFunction();
    private int vnodes = DEFAULT_VNODES;
    private String vnodeTemplate = RingPartitioner.DEFAULT_TEMPLATE;
    private int slots = SlotPartitioner.DEFAULT_SLOTS;
    private int tokensPerNode = DEFAULT_TOKENS;
    private long seed;
    private List<byte[]> splitPoints = List.of();

    private Builder(Strategy strategy) {
      this.strategy = strategy;
    }

    public Builder hash(HashFunction hash) {
      this.hash = hash;
      return this;
    }

    public Builder vnodes(int vnodes) {
      if (vnodes < 1 || vnodes > MAX_POINTS_PER_NODE) {
        throw new IllegalArgumentException("virtual nodes per node must be in [1, " + MAX_POINTS_PER_NODE + "], not " + vnodes);
      }
      this.vnodes = vnodes;
      return this;
    }

    public Builder vnodeTemplate(String template) {
      this.vnodeTemplate = RingPartitioner.checkTemplate(template);
      return this;
    }

    public Builder slots(int slots) {
      if (slots < 1 || slots > SlotPartitioner.MAX_SLOTS) {
        throw new IllegalArgumentException("slot count must be in [1, " + SlotPartitioner.MAX_SLOTS + "], not " + slots);
      }
      this.slots = slots;
      return this;
    }

    public Builder tokensPerNode(int tokens) {
      if (tokens < 1 || tokens > MAX_POINTS_PER_NODE) {
        throw new IllegalArgumentException("tokens per node must be in [1, " + MAX_POINTS_PER_NODE + "], not " + tokens);
      }
      this.tokensPerNode = tokens;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Explicit split points for {@code range}; validated (sorted, distinct, non-empty) here. */
    public Builder splitPoints(List<byte[]> points) {
      RangePartitioner.of(points, 1); // validates
      List<byte[]> copy = new ArrayList<>();
      for (byte[] p : points) {
        copy.add(p.clone());
      }
      this.splitPoints = List.copyOf(copy);
      return this;
    }

    public PartitionerSpec build() {
      return new PartitionerSpec(this);
    }
  }
}
