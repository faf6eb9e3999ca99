package io.shardwise.bench;

import java.util.List;
import java.util.Map;

/**
 * What a benchmark drives: a Shardwise cluster, or a baseline (one in-process RocksDB, a Redis
 * Cluster). Implementations are used by many threads at once. A failed operation throws; a read of
 * a missing key is not a failure (it returns false).
 */
public interface Target extends AutoCloseable {

  /** A short name for reports: shardwise, rocksdb, redis-cluster. */
  String name();

  /** Prepares the empty keyspace (a table, a database) for a run. */
  void prepare();

  /** Writes records in bulk for the load phase. */
  void load(List<Map.Entry<String, byte[]>> batch);

  /** True if the key was found. */
  boolean read(String key);

  void update(String key, byte[] value);

  void insert(String key, byte[] value);

  /** Reads up to {@code count} records from {@code startKey} on, in key order; returns how many. */
  int scan(String startKey, int count);

  /** Adds {@code delta} to the counter beside record {@code key} (workload k). */
  default void increment(String key, long delta) {
    throw new UnsupportedOperationException(name() + " has no counters here");
  }

  /** Reads the counter beside record {@code key} (workload k). */
  default long counter(String key) {
    throw new UnsupportedOperationException(name() + " has no counters here");
  }

  /** The key of the counter beside record {@code key}: its own key, so that a counter is never a record's value. */
  static String counterKey(String key) {
    return key + "#count";
  }

  @Override
  void close();
}
