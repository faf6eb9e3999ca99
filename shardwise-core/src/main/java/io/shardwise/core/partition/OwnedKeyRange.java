package io.shardwise.core.partition;

import io.shardwise.core.key.KeyRange;

/** A range of partition keys owned by one node. */
public record OwnedKeyRange(KeyRange range, int node) {}
