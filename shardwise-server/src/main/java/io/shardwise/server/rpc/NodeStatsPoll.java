package io.shardwise.server.rpc;

import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.proto.v1.NodeStatsRequest;
import io.shardwise.proto.v1.NodeStatsResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Asks nodes for the stats of the shards they own ({@code AdminService.NodeStats}), one after
 * another, each within a deadline: the one way cluster status, the balancer's planner, the console
 * and the bench read per-shard keys, bytes and served requests. A node that does not answer in time
 * is left out and named, never waited for longer.
 */
public final class NodeStatsPoll {

  /** The answers, and the ids of the nodes that gave none. */
  public record Answers(List<NodeStatsResponse> answers, Set<String> unreachable) {}

  private NodeStatsPoll() {}

  /**
   * @param sizes whether to count keys and bytes (a scan of every shard) or only read the cheap
   *     request counters
   */
  public static Answers ask(Peers peers, Collection<NodeInfo> nodes, boolean sizes, Duration deadline) {
    return ask(peers, nodes, sizes, 0, deadline);
  }

  /** {@link #ask}, with up to {@code hotKeys} hot keys per shard. */
  public static Answers ask(Peers peers, Collection<NodeInfo> nodes, boolean sizes, int hotKeys, Duration deadline) {
    return ask(peers, nodes, NodeStatsRequest.newBuilder().setSkipSizes(!sizes).setHotKeys(hotKeys).build(), deadline);
  }

  /** Asks every node in {@code nodes} the same {@code request}. */
  public static Answers ask(Peers peers, Collection<NodeInfo> nodes, NodeStatsRequest request, Duration deadline) {
    List<NodeStatsResponse> answers = new ArrayList<>();
    Set<String> unreachable = new TreeSet<>();
    for (NodeInfo node : nodes) {
      try {
        answers.add(peers.admin(node.getAddress()).withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS).nodeStats(request));
      } catch (RuntimeException slowOrUnreachable) {
        unreachable.add(node.getId());
      }
    }
    return new Answers(answers, unreachable);
  }
}
