package io.shardwise.core.analysis;

import io.shardwise.core.key.KeyRange;
import io.shardwise.core.partition.HashSpaceOwnership;
import io.shardwise.core.partition.OwnedHashRange;
import io.shardwise.core.partition.OwnedKeyRange;
import io.shardwise.core.partition.RangePartitioner;
import io.shardwise.core.partition.SlotPartitioner;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Exactly what changes owner between two placements of the same table, computed from their
 * structure rather than from keys: slots for {@code slots}, hash ranges for {@code ring},
 * {@code tokens} and {@code hashrange}, key ranges for {@code range}. (For {@code mod}, {@code jump}
 * and {@code rendezvous} there is no structure to compare; count keys with {@link KeyMoves}.)
 */
public final class PlacementDiff {

  /** One slot that changes owner. */
  public record SlotMove(int slot, int from, int to) {}

  /** One hash range {@code [first, last]} (unsigned) that changes owner. */
  public record HashRangeMove(long first, long last, int from, int to) {
    /** The number of hash values moved. */
    public double width() {
      return new OwnedHashRange(first, last, to).width();
    }
  }

  /** One partition-key range that changes owner. */
  public record KeyRangeMove(KeyRange range, int from, int to) {}

  private PlacementDiff() {}

  /**
   * Slots whose owner differs, in slot order.
   *
   * @throws IllegalArgumentException if the slot counts differ (a key would change slot)
   */
  public static List<SlotMove> slots(SlotPartitioner before, SlotPartitioner after) {
    if (before.shardCount() != after.shardCount()) {
      throw new IllegalArgumentException(
          "slot counts differ (" + before.shardCount() + " vs " + after.shardCount() + "); slot tables are comparable only at one count");
    }
    List<SlotMove> moves = new ArrayList<>();
    for (int slot = 0; slot < before.shardCount(); slot++) {
      int from = before.nodeOfShard(slot);
      int to = after.nodeOfShard(slot);
      if (from != to) {
        moves.add(new SlotMove(slot, from, to));
      }
    }
    return moves;
  }

  /**
   * Hash ranges whose owner differs, ascending, adjacent ranges with the same move coalesced.
   *
   * @throws IllegalArgumentException if the two placements cover different hash spaces
   */
  public static List<HashRangeMove> hashRanges(HashSpaceOwnership before, HashSpaceOwnership after) {
    if (before.spaceMax() != after.spaceMax()) {
      throw new IllegalArgumentException("the placements hash into different spaces");
    }
    List<OwnedHashRange> a = before.ownership();
    List<OwnedHashRange> b = after.ownership();
    List<HashRangeMove> moves = new ArrayList<>();
    int i = 0;
    int j = 0;
    long cursor = 0;
    while (i < a.size() && j < b.size()) {
      OwnedHashRange ra = a.get(i);
      OwnedHashRange rb = b.get(j);
      long last = Long.compareUnsigned(ra.last(), rb.last()) <= 0 ? ra.last() : rb.last();
      if (ra.node() != rb.node()) {
        addMove(moves, new HashRangeMove(cursor, last, ra.node(), rb.node()));
      }
      if (ra.last() == last) {
        i++;
      }
      if (rb.last() == last) {
        j++;
      }
      cursor = last + 1;
    }
    return moves;
  }

  private static void addMove(List<HashRangeMove> moves, HashRangeMove move) {
    if (!moves.isEmpty()) {
      HashRangeMove prev = moves.get(moves.size() - 1);
      if (prev.last() + 1 == move.first() && prev.from() == move.from() && prev.to() == move.to()) {
        moves.set(moves.size() - 1, new HashRangeMove(prev.first(), move.last(), move.from(), move.to()));
        return;
      }
    }
    moves.add(move);
  }

  /** The fraction of the hash space that the moves cover: the expected moved fraction of keys. */
  public static double hashSpaceFraction(List<HashRangeMove> moves, HashSpaceOwnership space) {
    double total = new OwnedHashRange(0, space.spaceMax(), 0).width();
    return moves.stream().mapToDouble(HashRangeMove::width).sum() / total;
  }

  /** Partition-key ranges whose owner differs, ascending. */
  public static List<KeyRangeMove> keyRanges(RangePartitioner before, RangePartitioner after) {
    List<OwnedKeyRange> a = before.ownership();
    List<OwnedKeyRange> b = after.ownership();
    List<KeyRangeMove> moves = new ArrayList<>();
    int i = 0;
    int j = 0;
    byte[] cursor = new byte[0];
    while (i < a.size() && j < b.size()) {
      OwnedKeyRange ra = a.get(i);
      OwnedKeyRange rb = b.get(j);
      byte[] endA = ra.range().end();
      byte[] endB = rb.range().end();
      byte[] end = endA == null ? endB : endB == null ? endA : Arrays.compareUnsigned(endA, endB) <= 0 ? endA : endB;
      if (ra.node() != rb.node()) {
        moves.add(new KeyRangeMove(KeyRange.of(cursor, end), ra.node(), rb.node()));
      }
      if (Arrays.equals(endA, end)) {
        i++;
      }
      if (Arrays.equals(endB, end)) {
        j++;
      }
      cursor = end;
    }
    return moves;
  }
}
