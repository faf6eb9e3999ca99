package io.shardwise.server.rpc;

import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Serving the hot data calls (get, put and their batches) on the network thread that read them,
 * without handing each call to an executor thread and back: on few cores those two thread switches
 * are much of a small call's cost.
 *
 * <p>The rule that makes it safe: code on the network thread never blocks. Every place in the data
 * service that could wait — for a newer map, for a shard paused by a move, for a forwarded call —
 * first calls {@link #mayBlock()}, which on the network thread throws {@link MustBlock}; {@link
 * DataServiceImpl#respond} then runs the whole handler again from the start on {@link #BLOCKING}.
 * Each such place is reached before anything was written, so the second run is the only one that
 * has any effect. Replication's append messages are taken on the network thread too (they never
 * wait: see {@link #REPLICATION_APPENDS}). Other calls, routers (which always forward) and nodes
 * that fsync every write run on gRPC's default executor as before.
 */
final class Inline {

  private static final Set<String> HOT = Set.of("Get", "Put", "BatchGet", "BatchPut");

  /**
   * A follower's end of replication: an append message is taken (its entries written to RocksDB,
   * unsynced on these nodes, under its replica's short lock) and answered where it was read, never
   * waiting on anything else — it is half of every replicated write's round, paid per follower.
   */
  private static final Set<String> REPLICATION_APPENDS = Set.of(
      io.shardwise.proto.v1.ReplicationServiceGrpc.getAppendMethod().getFullMethodName(),
      io.shardwise.proto.v1.ReplicationServiceGrpc.getAppendStreamMethod().getFullMethodName());
  private static final ThreadLocal<Boolean> ACTIVE = ThreadLocal.withInitial(() -> false);

  /** Where handlers that must block run: unbounded, like gRPC's default (forwards wait on forwards). */
  static final ExecutorService BLOCKING = Executors.newCachedThreadPool(new java.util.concurrent.ThreadFactory() {
    private final AtomicInteger next = new AtomicInteger();

    @Override
    public Thread newThread(Runnable r) {
      Thread t = new Thread(r, "shardwise-data-" + next.incrementAndGet());
      t.setDaemon(true);
      return t;
    }
  });

  /** Thrown on the network thread where a handler would block; never leaves the data service. */
  static final class MustBlock extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final MustBlock INSTANCE = new MustBlock();

    private MustBlock() {
      super("must block", null, false, false);
    }
  }

  private static final Executor ON_NETWORK_THREAD = task -> {
    ACTIVE.set(true);
    try {
      task.run();
    } finally {
      ACTIVE.set(false);
    }
  };

  private Inline() {}

  /** Throws {@link MustBlock} when running on the network thread. */
  static void mayBlock() {
    if (ACTIVE.get()) {
      throw MustBlock.INSTANCE;
    }
  }

  /** The executor per call: the network thread for hot data calls, gRPC's default for the rest. */
  static ServerCallExecutorSupplier callExecutors(boolean enabled) {
    return new ServerCallExecutorSupplier() {
      @Override
      public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, io.grpc.Metadata metadata) {
        if (!enabled) {
          return null;
        }
        var method = call.getMethodDescriptor();
        if (REPLICATION_APPENDS.contains(method.getFullMethodName())) {
          return com.google.common.util.concurrent.MoreExecutors.directExecutor();
        }
        return "shardwise.v1.DataService".equals(method.getServiceName()) && HOT.contains(method.getBareMethodName())
            ? ON_NETWORK_THREAD : null;
      }
    };
  }
}
