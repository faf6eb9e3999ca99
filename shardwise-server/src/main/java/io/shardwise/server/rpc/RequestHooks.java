package io.shardwise.server.rpc;

import io.shardwise.server.storage.ShardRef;

/**
 * Points on a node's request path where a test parks or fails a request, to force an
 * interleaving that timing alone would hit once in a million runs. Production nodes run with
 * {@link #NONE}; a node with hooks serves every data call off the network thread, so a hook may
 * block.
 */
public interface RequestHooks {

  RequestHooks NONE = new RequestHooks() {};

  /**
   * A keyed request (get, put, delete, partition scan) has been routed to this node's {@code
   * shard} by the map it applied, and is about to be served.
   */
  default void routedHere(ShardRef shard, boolean write) {}

  /**
   * A write to {@code shard} has been applied here and its answer is about to leave. A hook that
   * throws here is a reply lost after the write.
   */
  default void written(ShardRef shard) {}

  /**
   * This node, as a move's source, has just stored the cutover of {@code shard} in ZooKeeper. A
   * hook that throws here is a reply lost after the compare-and-set was applied.
   */
  default void cutOverStored(ShardRef shard) {}

  /**
   * A transaction this node coordinates has every item prepared, and its commit is about to be
   * written. A hook that throws here is a coordinator that dies holding its intents, undecided.
   */
  default void txnPrepared(String txnId) {}

  /**
   * A transaction this node coordinates is committed (its record says so), and its intents are
   * about to be resolved. A hook that throws here is a coordinator that dies after the decision.
   */
  default void txnCommitted(String txnId) {}
}
