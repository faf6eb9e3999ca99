package io.shardwise.core.partition;

/** Argument checks with messages that name the problem. */
final class Validation {

  private Validation() {}

  static int positiveNodes(int nodes) {
    if (nodes < 1) {
      throw new IllegalArgumentException("node count must be at least 1, not " + nodes);
    }
    return nodes;
  }

  static void checkIndex(int index, int size, String what) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException(what + " " + index + " is not in [0, " + size + ")");
    }
  }
}
