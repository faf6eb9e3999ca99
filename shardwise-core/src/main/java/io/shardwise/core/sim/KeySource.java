package io.shardwise.core.sim;

/**
 * A re-readable sequence of partition keys: every {@link #iterator()} yields the same keys in the
 * same order, so a simulation can take a sample in one pass and place keys in the next without
 * holding them all. Keys are byte strings; generated ones are UTF-8 text.
 */
public interface KeySource extends Iterable<byte[]> {

  /** A short human description, for reports ("user-%06d from 0", "keys.txt"). */
  String description();
}
