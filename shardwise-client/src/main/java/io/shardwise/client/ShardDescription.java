package io.shardwise.client;

import java.util.List;
import java.util.Optional;

/**
 * One shard of a table as the cluster reports it: who owns it, at which ownership epoch, the part
 * of the key space it holds, and (when asked for) its size and how much it served.
 *
 * @param number the shard's number within its table ({@code table/number} in the CLI and logs)
 * @param epoch the ownership epoch: raised each time the shard changes owner
 * @param start range tables: the first partition key it holds (empty: from the start)
 * @param end range tables: the first partition key it does not hold (empty: to the end)
 * @param hashFirst hashrange: the first hash value it holds; ring and tokens: unused
 * @param hashLast hashrange and rings of hash ranges: the last hash value; a ring of whole arcs: the arc's point
 * @param keys keys stored, when measured (0 otherwise)
 * @param bytes bytes stored, when measured (0 otherwise)
 * @param reads keys read from it since its owner started
 * @param writes keys written to it since its owner started
 * @param followers the shard's other replicas (its owner leads them); empty for a table of one replica
 * @param inSync the followers that have every acknowledged write
 * @param leaderEpoch the map epoch at which the owner took the shard over
 */
public record ShardDescription(String table, long number, int position, String owner, long epoch, Optional<byte[]> start,
    Optional<byte[]> end, long hashFirst, long hashLast, long keys, long bytes, long reads, long writes, List<String> followers,
    List<String> inSync, long leaderEpoch) {

  public ShardDescription {
    followers = List.copyOf(followers);
    inSync = List.copyOf(inSync);
  }
}
