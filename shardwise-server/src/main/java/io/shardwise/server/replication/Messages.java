package io.shardwise.server.replication;

import io.shardwise.core.map.NodeId;
import io.shardwise.server.storage.LogEntry;
import io.shardwise.server.storage.ShardRef;
import java.util.List;

/**
 * What leaders and followers say to each other, as the protocol sees it (the gRPC edge turns these
 * into protobuf and back). One message from a leader node to a follower node carries every shard
 * that leader leads and that follower follows, so a node pays one round trip per follower node,
 * not per shard.
 */
final class Messages {

  private Messages() {}

  /**
   * One shard's part of an append: the entries after {@code prevOffset} (none: a heartbeat that
   * carries the commit), which the follower takes only if its entry at {@code prevOffset} has
   * {@code prevEpoch} — then its log equals the leader's up to there (Raft's log-matching check).
   *
   * @param epoch the leader's epoch for the shard (its shard epoch in the map)
   * @param commit the leader's commit offset: the follower applies its log up to it
   * @param leaderLast the leader's last offset when it sent this: an append that reaches it tells
   *     the follower that any older leader's entries it holds after {@link #end} are in no log
   *     that can commit any more, so it drops them ({@link #reachesLeaderEnd})
   * @param leaderReady the leader had committed its whole inherited log when it sent this, so
   *     {@code commit} covers every write acknowledged before then, by it or any earlier leader
   *     (what a follower's freshness for follower reads rests on)
   */
  record ShardAppend(ShardRef shard, long epoch, long prevOffset, long prevEpoch, List<LogEntry> entries, long commit,
      long leaderLast, boolean leaderReady) {
    ShardAppend {
      entries = List.copyOf(entries);
    }

    /** The offset of the last entry this append makes the follower hold in the leader's order. */
    long end() {
      return prevOffset + entries.size();
    }

    /** Whether it brings the follower to the end of the leader's log as it was when sent. */
    boolean reachesLeaderEnd() {
      return end() >= leaderLast;
    }
  }

  /**
   * A leader's snapshot of one shard, for a follower whose next entry the leader's log no longer
   * holds: the shard's data as applied up to {@code offset} (of epoch {@code offsetEpoch}), sent as
   * a file beside this. The follower replaces its data with it and starts its log there.
   *
   * @param epoch the leader's epoch for the shard
   */
  record SnapshotOffer(ShardRef shard, long epoch, long offset, long offsetEpoch) {}

  /**
   * A leader node's message to one follower node.
   *
   * @param echoToken, echoNanos the follower's {@link AppendReply#token} and {@link AppendReply#sentNanos}
   *     of the last reply the leader had received when it built this message (0, 0: none yet). The
   *     commits in this message were read after that reply arrived, so they cover every write
   *     acknowledged before the follower sent it — a time on the follower's own clock, which is
   *     how a follower bounds its staleness without comparing clocks.
   */
  record AppendBatch(NodeId leader, List<ShardAppend> shards, long echoToken, long echoNanos) {
    AppendBatch {
      shards = List.copyOf(shards);
    }
  }

  /** How a follower took one shard's append. */
  enum Outcome {
    /** Taken: the follower's log equals the leader's up to {@code matched}. */
    OK,
    /** Refused: the follower knows a newer epoch of the shard ({@code knownEpoch}); the sender no longer leads it. */
    STALE_EPOCH,
    /** Refused: the entry at {@code prevOffset} differs or is missing; send again from {@code matched + 1}. */
    MISMATCH,
    /** Refused: the follower has no replica of the shard (it has not applied the map that gives it one yet). */
    NOT_REPLICA,
    /** Refused: the follower lacks entries the leader's log no longer holds; it needs the data as a snapshot. */
    NEEDS_SNAPSHOT
  }

  /**
   * A follower's answer for one shard.
   *
   * @param matched OK: the offset up to which its log equals the leader's; MISMATCH: an offset below
   *     the conflict, where the leader tries again
   */
  record ShardReply(ShardRef shard, Outcome outcome, long matched, long knownEpoch) {}

  /**
   * A follower node's answer to an {@link AppendBatch}, with the map epoch it had applied when it
   * answered, and when it answered on its own clock ({@code sentNanos}) in this process ({@code
   * token}: a random number per process, since a restarted node's clock starts over), and the id
   * of its store ({@code store}: another one than before means its data directory was replaced,
   * and nothing it said before about its log holds).
   */
  record AppendReply(NodeId follower, long mapEpoch, List<ShardReply> shards, long token, long sentNanos, String store) {
    AppendReply {
      shards = List.copyOf(shards);
    }
  }
}
