package io.shardwise.cli;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.server.coordination.Coordinator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What the commands of one command line — or of a whole {@code shardwise shell} — share: one
 * ZooKeeper session per connect string and one client (with its shard map) per ZooKeeper and
 * routing mode, opened on first use and closed when the command line or the shell ends. Commands
 * use them and never close them.
 */
final class Session {

  private static final Session CURRENT = new Session();

  private final Map<String, Coordinator> coordinators = new LinkedHashMap<>();
  private final Map<String, ShardwiseClient> clients = new LinkedHashMap<>();

  private Session() {}

  static Session current() {
    return CURRENT;
  }

  /** The ZooKeeper session for {@code zk}, opened with {@code open} the first time. */
  synchronized Coordinator coordinator(String zk, Supplier<Coordinator> open) {
    Coordinator c = coordinators.get(zk);
    if (c == null) {
      c = open.get();
      coordinators.put(zk, c);
    }
    return c;
  }

  /** The client for {@code zk} and {@code routing}, opened with {@code open} the first time. */
  synchronized ShardwiseClient client(String zk, Routing routing, Supplier<ShardwiseClient> open) {
    return client(zk + " " + routing, open);
  }

  /** The client opened under {@code key} (the cluster and every option it was built with), opened now if there is none. */
  synchronized ShardwiseClient client(String key, Supplier<ShardwiseClient> open) {
    ShardwiseClient c = clients.get(key);
    if (c == null) {
      c = open.get();
      clients.put(key, c);
    }
    return c;
  }

  /** How many connections are open (for the shell's {@code \status}). */
  synchronized String describe() {
    return Output.count(coordinators.size(), "ZooKeeper session") + " (" + String.join(", ", coordinators.keySet()) + "), "
        + Output.count(clients.size(), "client");
  }

  /** Closes everything opened; the next use opens again. */
  synchronized void close() {
    List<AutoCloseable> all = new ArrayList<>(clients.values());
    all.addAll(coordinators.values());
    clients.clear();
    coordinators.clear();
    for (AutoCloseable c : all) {
      try {
        c.close();
      } catch (Exception e) {
        // closing: nothing to do about it
      }
    }
  }
}
