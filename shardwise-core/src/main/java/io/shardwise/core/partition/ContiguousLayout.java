package io.shardwise.core.partition;

import java.util.ArrayList;
import java.util.List;

/**
 * Shards that are contiguous ranges of an ordered space (partition keys for {@code range}, hash
 * values for {@code hashrange}), each owned by a node, and how such a table grows and shrinks the
 * way dynamic partitioning would.
 *
 * <p>Growing adds one node at a time: the largest shard is split in two and the upper half goes to
 * the new node. Shrinking removes the highest-numbered node first: each of its shards merges into
 * the smaller neighbour whose owner stays, or, with no such neighbour, moves whole to the staying
 * node that holds the least. Sizes come from a {@link Measure}, so the rule is written once for
 * both spaces. Mutable, single-threaded; used only while building a partitioner.
 *
 * @param <B> a boundary: the inclusive start of a shard
 */
final class ContiguousLayout<B> {

  /** Sizes and split points of a shard {@code [start, end)}; {@code end == null} is the top. */
  interface Measure<B> {
    /** A size to compare shards by; larger splits first. */
    double size(B start, B end);

    /** Where to split the shard, strictly above {@code start}; {@code null} when it cannot split. */
    B splitPoint(B start, B end);
  }

  private final List<B> starts;
  private final List<Integer> owners;
  private final Measure<B> measure;

  ContiguousLayout(List<B> starts, int[] owners, Measure<B> measure) {
    this.starts = new ArrayList<>(starts);
    this.owners = new ArrayList<>();
    for (int owner : owners) {
      this.owners.add(owner);
    }
    this.measure = measure;
  }

  int shards() {
    return starts.size();
  }

  B start(int shard) {
    return starts.get(shard);
  }

  int owner(int shard) {
    return owners.get(shard);
  }

  int[] ownerArray() {
    return owners.stream().mapToInt(Integer::intValue).toArray();
  }

  private B end(int shard) {
    return shard + 1 < starts.size() ? starts.get(shard + 1) : null;
  }

  private double size(int shard) {
    return measure.size(start(shard), end(shard));
  }

  void resize(int fromNodes, int toNodes) {
    for (int node = fromNodes; node < toNodes; node++) {
      splitLargestFor(node);
    }
    for (int node = fromNodes - 1; node >= toNodes; node--) {
      for (int shard = owners.indexOf(node); shard >= 0; shard = owners.indexOf(node)) {
        release(shard, toNodes);
      }
    }
  }

  private void splitLargestFor(int node) {
    int best = -1;
    B bestPoint = null;
    for (int shard = 0; shard < shards(); shard++) {
      if (best >= 0 && size(shard) <= size(best)) {
        continue;
      }
      B point = measure.splitPoint(start(shard), end(shard));
      if (point != null) {
        best = shard;
        bestPoint = point;
      }
    }
    if (best < 0) {
      throw new IllegalArgumentException(
          "cannot make a shard for node " + node + ": no shard can be split further (too few distinct keys in the sample)");
    }
    starts.add(best + 1, bestPoint);
    owners.add(best + 1, node);
  }

  /** Hands a shard of a leaving node to a staying one: a merge with a neighbour, or a move. */
  private void release(int shard, int stayingNodes) {
    int left = shard - 1;
    int right = shard + 1 < shards() ? shard + 1 : -1;
    boolean leftStays = left >= 0 && owner(left) < stayingNodes;
    boolean rightStays = right >= 0 && owner(right) < stayingNodes;
    if (leftStays && (!rightStays || size(left) <= size(right))) {
      starts.remove(shard); // the left neighbour now reaches to this shard's end
      owners.remove(shard);
    } else if (rightStays) {
      starts.remove(right); // this shard's start now begins the right neighbour
      owners.remove(shard);
    } else {
      owners.set(shard, leastLoaded(stayingNodes));
    }
  }

  private int leastLoaded(int stayingNodes) {
    double[] load = new double[stayingNodes];
    for (int shard = 0; shard < shards(); shard++) {
      if (owner(shard) < stayingNodes) {
        load[owner(shard)] += size(shard);
      }
    }
    int best = 0;
    for (int n = 1; n < stayingNodes; n++) {
      if (load[n] < load[best]) {
        best = n;
      }
    }
    return best;
  }
}
