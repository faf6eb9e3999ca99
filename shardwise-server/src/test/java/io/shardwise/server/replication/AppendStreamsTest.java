package io.shardwise.server.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.shardwise.proto.v1.AppendRequest;
import io.shardwise.proto.v1.AppendResponse;
import io.shardwise.proto.v1.ReplicationServiceGrpc;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A leader's append streams ({@link GrpcReplication.AppendStreams}) against follower servers on
 * real sockets: messages answered in order on one stream, a stream that goes silent cancelled at the
 * deadline with every message on it lost and the next one on a new stream, an idle stream ended, a node that serves only
 * the unary call used by calls, a stopping follower that ends its streams at once, and an address
 * that refuses every stream as it opens, whose messages are each lost once (answers taken on the
 * network thread or on gRPC's executor).
 */
class AppendStreamsTest {

  @org.junit.jupiter.api.io.TempDir
  java.nio.file.Path tempDir;

  private final List<Server> servers = new ArrayList<>();
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  @AfterEach
  void stop() {
    channels.values().forEach(ManagedChannel::shutdownNow);
    servers.forEach(Server::shutdownNow);
  }

  private String serve(io.grpc.BindableService service) throws Exception {
    Server s = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service).build().start();
    servers.add(s);
    return "127.0.0.1:" + s.getPort();
  }

  private io.grpc.Channel channel(String address) {
    return channels.computeIfAbsent(address, a -> NettyChannelBuilder.forTarget(a).usePlaintext().build());
  }

  /** A follower's answer naming the message it answers (its echo token, as sent nanos). */
  private static AppendResponse echo(AppendRequest r) {
    return AppendResponse.newBuilder().setSentNanos(r.getEchoToken()).build();
  }

  private static AppendRequest request(long n) {
    return AppendRequest.newBuilder().setLeader("n1").setEchoToken(n).build();
  }

  /** What a send heard: the answer's echo of the request, or the failure. */
  private static final class Heard implements BiConsumer<AppendResponse, Throwable> {
    final List<Object> outcomes = new CopyOnWriteArrayList<>();

    @Override
    public void accept(AppendResponse r, Throwable t) {
      outcomes.add(t != null ? t : r.getSentNanos());
    }
  }

  /** Answers each message with its echo token as sent nanos, and counts the streams and the unary calls it took. */
  private static final class Follower extends ReplicationServiceGrpc.ReplicationServiceImplBase {
    final AtomicInteger streams = new AtomicInteger();
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger ended = new AtomicInteger(); // streams the leader ended
    volatile boolean silent;

    @Override
    public StreamObserver<AppendRequest> appendStream(StreamObserver<AppendResponse> out) {
      streams.incrementAndGet();
      return new StreamObserver<>() {
        @Override
        public void onNext(AppendRequest r) {
          if (!silent) {
            out.onNext(echo(r));
          }
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          ended.incrementAndGet();
          out.onCompleted();
        }
      };
    }

    @Override
    public void append(AppendRequest r, StreamObserver<AppendResponse> out) {
      calls.incrementAndGet();
      out.onNext(echo(r));
      out.onCompleted();
    }
  }

  @Test
  void messagesToOneNodeShareOneStreamAndAreAnsweredInOrder() throws Exception {
    Follower follower = new Follower();
    String address = serve(follower);
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 5_000);
    Heard heard = new Heard();
    for (long n = 1; n <= 200; n++) {
      assertThat(streams.send(address, request(n), heard)).isTrue();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> heard.outcomes.size() == 200);
    List<Object> expected = new ArrayList<>();
    for (long n = 1; n <= 200; n++) {
      expected.add(n);
    }
    assertThat(heard.outcomes).containsExactlyElementsOf(expected);
    assertThat(follower.streams.get()).isEqualTo(1);
    assertThat(follower.calls.get()).isZero();
  }

  @Test
  void aStreamIdleForItsLimitIsEndedAndTheNextMessageOpensAnother() throws Exception {
    Follower follower = new Follower();
    String address = serve(follower);
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 5_000, 300, true);
    Heard heard = new Heard();
    long sent = System.nanoTime();
    for (long n = 1; n <= 3; n++) {
      streams.send(address, request(n), heard);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> follower.ended.get() == 1);
    assertThat(Duration.ofNanos(System.nanoTime() - sent)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    assertThat(heard.outcomes).containsExactly(1L, 2L, 3L);
    assertThat(streams.open()).isZero();
    streams.send(address, request(4), heard);
    await().atMost(Duration.ofSeconds(5)).until(() -> heard.outcomes.size() == 4);
    assertThat(heard.outcomes).last().isEqualTo(4L);
    assertThat(follower.streams.get()).isEqualTo(2);
    assertThat(streams.open()).isEqualTo(1);
  }

  @Test
  void aSilentStreamIsCancelledAtTheDeadlineAndTheNextMessageOpensAnother() throws Exception {
    Follower follower = new Follower();
    String address = serve(follower);
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 2_000);
    Heard first = new Heard();
    streams.send(address, request(1), first);
    await().atMost(Duration.ofSeconds(5)).until(() -> first.outcomes.size() == 1);
    follower.silent = true;
    Heard lost = new Heard();
    long sent = System.nanoTime();
    streams.send(address, request(2), lost);
    streams.send(address, request(3), lost);
    await().atMost(Duration.ofSeconds(5)).until(() -> lost.outcomes.size() == 2);
    assertThat(Duration.ofNanos(System.nanoTime() - sent)).isGreaterThanOrEqualTo(Duration.ofMillis(2_000));
    assertThat(lost.outcomes).allSatisfy(o -> assertThat(o).isInstanceOf(Throwable.class));

    follower.silent = false;
    Heard again = new Heard();
    streams.send(address, request(4), again);
    await().atMost(Duration.ofSeconds(5)).until(() -> again.outcomes.size() == 1);
    assertThat(again.outcomes).containsExactly(4L);
    assertThat(follower.streams.get()).isEqualTo(2);
  }

  @Test
  void aNodeThatServesOnlyTheCallGetsACallPerMessage() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    String address = serve(new ReplicationServiceGrpc.ReplicationServiceImplBase() {
      @Override
      public void append(AppendRequest r, StreamObserver<AppendResponse> out) {
        calls.incrementAndGet();
        out.onNext(echo(r));
        out.onCompleted();
      }
    });
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 5_000);
    Heard refused = new Heard();
    assertThat(streams.send(address, request(1), refused)).isTrue();
    await().atMost(Duration.ofSeconds(5)).until(() -> refused.outcomes.size() == 1);
    assertThat(io.grpc.Status.fromThrowable((Throwable) refused.outcomes.get(0)).getCode()).isEqualTo(io.grpc.Status.Code.UNIMPLEMENTED);
    assertThat(streams.send(address, request(2), new Heard())).as("later messages go as calls").isFalse();
  }

  @Test
  void aStoppingFollowerEndsItsStreamsSoItsServerStopsAtOnce() throws Exception {
    java.nio.file.Path dir = tempDir;
    java.util.concurrent.Executor inline = Runnable::run;
    Replicator replicator = new Replicator(io.shardwise.core.map.NodeId.of("n2"), new io.shardwise.server.move.MemoryEngine(),
        new Replicator.Transport() {
          @Override
          public void send(io.shardwise.core.map.NodeId to, Messages.AppendBatch batch, BiConsumer<Messages.AppendReply, Throwable> done) {}

          @Override
          public void sendSnapshot(io.shardwise.core.map.NodeId to, io.shardwise.core.map.NodeId from, Messages.SnapshotOffer offer,
              java.nio.file.Path file, BiConsumer<Messages.ShardReply, Throwable> done) {}
        }, (change, done) -> { }, inline, inline, dir.resolve("snapshots"), System::nanoTime, ReplicationConfig.DEFAULT);
    GrpcReplication.Service service = GrpcReplication.service(replicator, (table, number) -> null, dir.resolve("in"));
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service).build().start();
    servers.add(server);
    String address = "127.0.0.1:" + server.getPort();
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 5_000);
    Heard heard = new Heard();
    streams.send(address, request(1), heard); // no shards: answered at once, and the stream stays open
    await().atMost(Duration.ofSeconds(5)).until(() -> heard.outcomes.size() == 1);
    assertThat(heard.outcomes.get(0)).isNotInstanceOf(Throwable.class);

    long start = System.nanoTime();
    service.closeStreams();
    server.shutdown();
    assertThat(server.awaitTermination(3, TimeUnit.SECONDS)).as("stopped without waiting for the leader's stream").isTrue();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
    Heard after = new Heard();
    streams.send(address, request(2), after); // the follower is gone: lost, not left waiting
    await().atMost(Duration.ofSeconds(5)).until(() -> after.outcomes.size() == 1);
    assertThat(after.outcomes.get(0)).isInstanceOf(Throwable.class);
  }

  @ParameterizedTest(name = "answers on the network thread: {0}")
  @ValueSource(booleans = {true, false})
  void eachMessageToAnAddressThatRefusesStreamsIsLostOnce(boolean answersOnNetworkThread) throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort(); // closed again: nothing listens there
    }
    String address = "127.0.0.1:" + port;
    GrpcReplication.AppendStreams streams = new GrpcReplication.AppendStreams(this::channel, 5_000, 60_000, answersOnNetworkThread);
    for (int i = 1; i <= 5; i++) { // the later ones find the channel failing already, and their streams fail as they open
      Heard heard = new Heard();
      assertThat(streams.send(address, request(i), heard)).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() -> heard.outcomes.size() == 1);
      assertThat(heard.outcomes.get(0)).as("message %d", i).isInstanceOf(Throwable.class);
      assertThat(heard.outcomes).hasSize(1);
    }
    assertThat(streams.open()).isLessThanOrEqualTo(1);
  }
}
