package io.shardwise.server.node;

import io.shardwise.core.map.NodeId;
import io.shardwise.server.coordination.Coordinator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;

/**
 * Which cluster a node's data directory belongs to (design rule 6). The cluster id is made once in
 * ZooKeeper and written into each node's data directory when it first joins; from then on the
 * node starts only against a ZooKeeper that holds the same id. This is what keeps a node started
 * against the wrong (or an empty) ZooKeeper — a typo in {@code --zk} — from taking that cluster's
 * empty map as the truth and trashing everything it holds.
 *
 * <ul>
 *   <li>directory and ZooKeeper agree: start;
 *   <li>directory names a cluster and ZooKeeper holds another, or none: refuse;
 *   <li>directory holds no id and no data: join (making the cluster id if ZooKeeper has none);
 *   <li>directory holds data but no id (made before cluster ids existed): join a ZooKeeper that
 *       has a map and knows this node id, or one that has a map and no cluster id yet (an upgrade);
 *       refuse anything else unless {@code --adopt-cluster}.
 * </ul>
 */
final class ClusterIdentity {

  static final String FILE = "cluster-id";

  private ClusterIdentity() {}

  /**
   * Checks the data directory against ZooKeeper, records the id and the membership, and returns
   * the cluster id.
   *
   * @throws IllegalStateException with one line naming both ids and what resolves it
   */
  static String establish(Coordinator coordinator, String zk, Path dataDir, NodeId node, boolean holdsData, boolean adopt) {
    Optional<String> mine = read(dataDir);
    Optional<String> theirs = coordinator.clusterId();
    String id;
    if (mine.isPresent()) {
      if (theirs.isEmpty()) {
        throw new IllegalStateException("data directory " + dataDir + " belongs to cluster " + mine.get() + ", but ZooKeeper at " + zk
            + " holds no cluster; start the node with --zk pointing at cluster " + mine.get() + "'s ZooKeeper");
      }
      if (!mine.get().equals(theirs.get())) {
        throw new IllegalStateException("data directory " + dataDir + " belongs to cluster " + mine.get() + ", but ZooKeeper at " + zk
            + " holds cluster " + theirs.get() + "; point --zk at cluster " + mine.get()
            + "'s ZooKeeper, or start with an empty --data-dir to join cluster " + theirs.get());
      }
      id = mine.get();
    } else if (!holdsData) {
      id = theirs.orElseGet(() -> coordinator.createClusterIdIfAbsent(UUID.randomUUID().toString()));
    } else {
      boolean known = theirs.isPresent() && coordinator.isMember(node);
      boolean upgrade = theirs.isEmpty() && coordinator.hasMap();
      if (!known && !upgrade && !adopt) {
        throw new IllegalStateException("data directory " + dataDir + " holds data but no cluster id, and ZooKeeper at " + zk + " holds "
            + theirs.map(t -> "cluster " + t + ", which node " + node + " never joined").orElse("no cluster")
            + "; start it against the ZooKeeper it ran with, or pass --adopt-cluster to join (shards it does not own go to its trash)");
      }
      id = theirs.orElseGet(() -> coordinator.createClusterIdIfAbsent(UUID.randomUUID().toString()));
    }
    write(dataDir, id);
    coordinator.addMember(node);
    return id;
  }

  static Optional<String> read(Path dataDir) {
    Path file = dataDir.resolve(FILE);
    try {
      return Files.exists(file) ? Optional.of(Files.readString(file, StandardCharsets.UTF_8).strip()) : Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  private static void write(Path dataDir, String id) {
    Path file = dataDir.resolve(FILE);
    try {
      if (read(dataDir).filter(id::equals).isEmpty()) {
        Path tmp = dataDir.resolve(FILE + ".tmp");
        Files.writeString(tmp, id + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }
}
