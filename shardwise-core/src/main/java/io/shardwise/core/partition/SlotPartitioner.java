package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A fixed number of hash slots (default {@value #DEFAULT_SLOTS}; Redis Cluster uses 16384), key to
 * slot by {@code hash mod slots}, and a slot-to-node table.
 *
 * <p>The slot count never changes, so a key never changes slot: placement changes by moving whole
 * slots between nodes. Resizing keeps every node within one slot of every other and moves only the
 * slots it must: each node keeps its lowest-numbered slots up to its new target, gives away the
 * rest, and new or under-full nodes take the given-away slots in ascending order. Adding one node
 * to N therefore steals about slots/(N(N+1)) from every existing node.
 *
 * <p>Immutable and thread-safe.
 */
public final class SlotPartitioner implements HashPartitioner {

  public static final int DEFAULT_SLOTS = 1024;
  /** The most slots a table may have. */
  public static final int MAX_SLOTS = 1 << 20;

  private final HashFunction hash;
  private final int nodes;
  private final int[] owners;

  private SlotPartitioner(HashFunction hash, int nodes, int[] owners) {
    this.hash = hash;
    this.nodes = nodes;
    this.owners = owners;
  }

  /** {@code slots} slots over {@code nodes} nodes in contiguous blocks, as Redis assigns them. */
  public static SlotPartitioner evenly(HashFunction hash, int slots, int nodes) {
    checkSlots(slots, Validation.positiveNodes(nodes));
    int[] owners = new int[slots];
    for (int s = 0; s < slots; s++) {
      owners[s] = (int) ((long) s * nodes / slots);
    }
    return new SlotPartitioner(hash, nodes, owners);
  }

  /**
   * An explicit table.
   *
   * @throws IllegalArgumentException if a slot names a node outside {@code [0, nodes)}
   */
  public static SlotPartitioner of(HashFunction hash, int nodes, int[] owners) {
    checkSlots(owners.length, Validation.positiveNodes(nodes));
    for (int s = 0; s < owners.length; s++) {
      if (owners[s] < 0 || owners[s] >= nodes) {
        throw new IllegalArgumentException("slot " + s + " is owned by node " + owners[s] + ", not in [0, " + nodes + ")");
      }
    }
    return new SlotPartitioner(hash, nodes, owners.clone());
  }

  private static void checkSlots(int slots, int nodes) {
    if (slots < 1 || slots > MAX_SLOTS) {
      throw new IllegalArgumentException("slot count must be in [1, " + MAX_SLOTS + "], not " + slots);
    }
    if (nodes > slots) {
      throw new IllegalArgumentException(
          "more nodes (" + nodes + ") than slots (" + slots + "); every node needs at least one slot");
    }
  }

  @Override
  public Strategy strategy() {
    return Strategy.SLOTS;
  }

  @Override
  public HashFunction hashFunction() {
    return hash;
  }

  @Override
  public int shardCount() {
    return owners.length;
  }

  @Override
  public int nodeCount() {
    return nodes;
  }

  @Override
  public int shardForHash(long h) {
    return (int) Long.remainderUnsigned(h, owners.length);
  }

  @Override
  public int nodeOfShard(int slot) {
    return owners[slot];
  }

  /** Slots per node. */
  public int[] slotCounts() {
    int[] counts = new int[nodes];
    for (int owner : owners) {
      counts[owner]++;
    }
    return counts;
  }

  /**
   * The table after growing or shrinking to {@code newNodes}; see the class comment for which slots
   * move.
   *
   * @throws IllegalArgumentException if {@code newNodes} exceeds the slot count
   */
  @Override
  public SlotPartitioner withNodeCount(int newNodes, KeySample sample) {
    checkSlots(owners.length, Validation.positiveNodes(newNodes));
    int slots = owners.length;
    int[] counts = new int[newNodes];
    for (int owner : owners) {
      if (owner < newNodes) {
        counts[owner]++;
      }
    }
    int[] targets = targets(counts, slots);

    int[] next = owners.clone();
    int[] kept = new int[newNodes];
    List<Integer> pool = new ArrayList<>();
    for (int s = 0; s < slots; s++) {
      int owner = owners[s];
      if (owner < newNodes && kept[owner] < targets[owner]) {
        kept[owner]++;
      } else {
        pool.add(s);
      }
    }
    int taker = 0;
    for (int slot : pool) {
      while (kept[taker] >= targets[taker]) {
        taker++;
      }
      next[slot] = taker;
      kept[taker]++;
    }
    return new SlotPartitioner(hash, newNodes, next);
  }

  /**
   * Each node's share: {@code slots / nodes}, plus one for {@code slots % nodes} nodes, given to
   * the nodes holding the most slots already (ties to the lower node) so the fewest slots move.
   */
  private static int[] targets(int[] counts, int slots) {
    int n = counts.length;
    int[] targets = new int[n];
    Arrays.fill(targets, slots / n);
    Integer[] byCount = new Integer[n];
    for (int i = 0; i < n; i++) {
      byCount[i] = i;
    }
    Arrays.sort(byCount, (a, b) -> counts[a] != counts[b] ? Integer.compare(counts[b], counts[a]) : Integer.compare(a, b));
    for (int i = 0; i < slots % n; i++) {
      targets[byCount[i]]++;
    }
    return targets;
  }
}
