package io.shardwise.server.rpc;

import io.shardwise.proto.v1.RestoredEntry;
import io.shardwise.proto.v1.TrashEntry;
import java.util.List;

/** A node's trash as an operator works with it through the admin API. */
public interface TrashAdmin {

  /** Every entry, oldest first. */
  List<TrashEntry> list();

  /** Merges entry {@code id} into its shard's current owner (newer versions win) and purges it. */
  RestoredEntry restore(long id);

  /** Purges the entries {@code ids}; returns those that existed. */
  List<Long> purge(List<Long> ids);
}
