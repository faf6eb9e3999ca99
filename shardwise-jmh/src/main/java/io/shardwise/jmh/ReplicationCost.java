package io.shardwise.jmh;

import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import io.shardwise.server.coordination.EmbeddedZooKeeper;
import io.shardwise.server.node.ShardwiseNode;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.netty.NettyConfigKeys;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.rpc.SupportedRpcType;

/**
 * What a replica costs per shard, for the choice between a Raft group per shard (Apache Ratis)
 * and Shardwise's own replication (leader and in-sync replicas on the map, one log per shard in the
 * node's RocksDB, one message stream per pair of nodes). The same run, one JVM, three servers on
 * loopback: for {@code SHARDS} shards of 3 replicas each, the JVM's threads and heap once they are
 * up and quiet, the time to set them up, and small writes per second from {@code CLIENTS} threads
 * spread over the shards.
 *
 * <p>Ratis runs each group as a division with its own log, state machine updater and leader or
 * follower threads; its state machine here is a counter, so the figures show the protocol's cost
 * alone (Shardwise's also writes RocksDB).
 *
 * <pre>java [-Dsystems=ratis,shardwise] -cp shardwise-jmh/target/benchmarks.jar io.shardwise.jmh.ReplicationCost [SHARDS...]</pre>
 */
public final class ReplicationCost {

  private static final int CLIENTS = 8;
  private static final int WRITES = 20_000;

  private ReplicationCost() {}

  public static void main(String[] args) throws Exception {
    java.util.logging.Logger.getLogger("org.apache.ratis").setLevel(java.util.logging.Level.WARNING); // its netty logs every bind
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    List<Integer> sizes = new ArrayList<>();
    for (String a : args.length == 0 ? new String[] {"16", "256"} : args) {
      sizes.add(Integer.parseInt(a));
    }
    System.out.printf(Locale.ROOT, "%-10s %7s %9s %9s %10s %12s%n", "system", "shards", "threads", "heap MB", "setup s", "writes/s");
    List<String> systems = List.of(System.getProperty("systems", "ratis,shardwise").split(","));
    for (int shards : sizes) {
      if (systems.contains("ratis")) {
        measure("ratis", shards, ReplicationCost::ratis);
      }
      if (systems.contains("shardwise")) {
        measure("shardwise", shards, ReplicationCost::shardwise);
      }
    }
  }

  /** One setup: started, measured quiet, loaded, stopped. */
  private interface System3 extends AutoCloseable {
    /** Writes one small value to shard {@code shard} (any key of it), blocking. */
    void write(int shard, int i) throws Exception;
  }

  @FunctionalInterface
  private interface Setup {
    System3 start(int shards, Path dir) throws Exception;
  }

  private static void measure(String name, int shards, Setup setup) throws Exception {
    Path dir = Files.createTempDirectory("shardwise-replication-cost");
    int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
    long heapBefore = heapAfterGc();
    long start = System.nanoTime();
    try (System3 system = setup.start(shards, dir)) {
      double setupSeconds = (System.nanoTime() - start) / 1e9;
      Thread.sleep(2_000); // elections, heartbeats settle
      int threads = ManagementFactory.getThreadMXBean().getThreadCount() - threadsBefore;
      long heap = heapAfterGc() - heapBefore;
      AtomicLong next = new AtomicLong();
      long t0 = System.nanoTime();
      List<Thread> workers = new ArrayList<>();
      List<Exception> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
      for (int c = 0; c < CLIENTS; c++) {
        Thread t = new Thread(() -> {
          long i;
          while ((i = next.getAndIncrement()) < WRITES) {
            try {
              system.write((int) (i % shards), (int) i);
            } catch (Exception e) {
              failures.add(e);
            }
          }
        });
        t.start();
        workers.add(t);
      }
      for (Thread t : workers) {
        t.join();
      }
      double writesPerSecond = WRITES / ((System.nanoTime() - t0) / 1e9);
      System.out.printf(Locale.ROOT, "%-10s %7d %9d %9.1f %10.2f %12.0f%s%n", name, shards, threads, heap / 1e6, setupSeconds, writesPerSecond,
          failures.isEmpty() ? "" : "  (" + failures.size() + " failed: " + failures.get(0) + ")");
    } finally {
      Dirs.deleteTree(dir);
    }
  }

  private static long heapAfterGc() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
    }
    Runtime r = Runtime.getRuntime();
    return r.totalMemory() - r.freeMemory();
  }

  // ------------------------------------------------------------------ Shardwise

  private static System3 shardwise(int shards, Path dir) throws Exception {
    EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(0, dir.resolve("zk"));
    List<ShardwiseNode> nodes = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      nodes.add(RebalanceLoad.node(dir, zk, i));
    }
    ShardwiseClient client = ShardwiseClient.builder().routing(Routing.CLIENT).seeds(List.of(nodes.get(0).address())).build();
    client.createTable("r", TableSpec.builder("mod").shards(shards).replicas(3).build());
    // Keys that land on each shard: mod places by hash, so find one key per shard.
    io.shardwise.core.map.Table t = nodes.get(0).map().table("r").orElseThrow();
    Key[] keyOf = new Key[shards];
    int found = 0;
    for (int i = 0; found < shards; i++) {
      Key k = Key.of(("k" + i).getBytes(StandardCharsets.UTF_8));
      int position = t.positionOf(t.shardFor(k.partitionKey()).id());
      if (keyOf[position] == null) {
        keyOf[position] = k;
        found++;
      }
    }
    byte[] value = new byte[100];
    return new System3() {
      @Override
      public void write(int shard, int i) {
        client.put("r", keyOf[shard], value);
      }

      @Override
      public void close() throws Exception {
        client.close();
        for (int i = nodes.size() - 1; i >= 0; i--) {
          nodes.get(i).close();
        }
        zk.close();
      }
    };
  }

  // ------------------------------------------------------------------ Ratis

  /** The least state machine: it counts what it applies. */
  static final class Counter extends BaseStateMachine {
    private final AtomicLong applied = new AtomicLong();

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
      updateLastAppliedTermIndex(trx.getLogEntry().getTerm(), trx.getLogEntry().getIndex());
      return CompletableFuture.completedFuture(Message.valueOf(Long.toString(applied.incrementAndGet())));
    }
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static System3 ratis(int shards, Path dir) throws Exception {
    List<RaftPeer> peers = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      peers.add(RaftPeer.newBuilder().setId("p" + i).setAddress("127.0.0.1:" + freePort()).build());
    }
    List<RaftServer> servers = new ArrayList<>();
    for (RaftPeer p : peers) {
      RaftProperties props = new RaftProperties();
      RaftConfigKeys.Rpc.setType(props, SupportedRpcType.NETTY);
      NettyConfigKeys.Server.setPort(props, Integer.parseInt(p.getAddress().split(":")[1]));
      RaftServerConfigKeys.setStorageDir(props, List.of(new File(dir.toFile(), p.getId().toString())));
      RaftServer s = RaftServer.newBuilder().setServerId(p.getId()).setProperties(props).setStateMachineRegistry(gid -> new Counter())
          .build();
      s.start();
      servers.add(s);
    }
    List<RaftGroup> groups = new ArrayList<>();
    for (int g = 0; g < shards; g++) {
      groups.add(RaftGroup.valueOf(RaftGroupId.valueOf(UUID.nameUUIDFromBytes(("shard-" + g).getBytes(StandardCharsets.UTF_8))), peers));
    }
    RaftProperties clientProps = new RaftProperties();
    RaftConfigKeys.Rpc.setType(clientProps, SupportedRpcType.NETTY);
    for (RaftGroup group : groups) {
      try (RaftClient admin = RaftClient.newBuilder().setProperties(clientProps).setRaftGroup(group).build()) {
        for (RaftPeer p : peers) {
          admin.getGroupManagementApi(p.getId()).add(group);
        }
      }
    }
    List<RaftClient> clients = new ArrayList<>();
    for (RaftGroup group : groups) {
      clients.add(RaftClient.newBuilder().setProperties(clientProps).setRaftGroup(group).build());
    }
    Message payload = Message.valueOf(new String(new byte[100], StandardCharsets.ISO_8859_1));
    return new System3() {
      @Override
      public void write(int shard, int i) throws Exception {
        RaftClientReply reply = clients.get(shard).io().send(payload);
        if (!reply.isSuccess()) {
          throw new IllegalStateException("ratis write failed: " + reply);
        }
      }

      @Override
      public void close() throws Exception {
        for (RaftClient c : clients) {
          c.close();
        }
        for (RaftServer s : servers) {
          s.close();
        }
      }
    };
  }
}
