package io.shardwise.server.node;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.core.key.Key;
import io.shardwise.server.rpc.Limits;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A shard-aware client asks every seed and known node for the map at once: a seed that accepts
 * connections and never answers (a stopped process, a stalled machine) does not hold it up.
 */
@Tag("integration")
class ClientMapRefreshTest {

  @TempDir Path dir;

  /** Accepts TCP connections and never says a word, like a process stopped with SIGSTOP. */
  private static final class BlackHole implements AutoCloseable {
    final ServerSocket socket;
    final List<Socket> accepted = new ArrayList<>();
    final Thread acceptor;

    BlackHole() throws java.io.IOException {
      socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      acceptor = new Thread(() -> {
        try {
          while (true) {
            Socket s = socket.accept();
            synchronized (accepted) {
              accepted.add(s);
            }
          }
        } catch (Exception closed) {
          // closed by the test
        }
      }, "black-hole");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    String address() {
      return "127.0.0.1:" + socket.getLocalPort();
    }

    @Override
    public void close() throws java.io.IOException {
      socket.close();
      synchronized (accepted) {
        for (Socket s : accepted) {
          s.close();
        }
      }
    }
  }

  @Test
  void aSeedThatNeverAnswersDoesNotDelayTheMapAndOneThatIsAllThereIsIsAClearError() throws Exception {
    try (TestCluster cluster = new TestCluster(dir, 1, Limits.DEFAULT); BlackHole hole = new BlackHole()) {
      cluster.client(io.shardwise.client.Routing.CLIENT).createTable("t", TableSpec.builder("hashrange").shards(2).build());
      long started = System.nanoTime();
      try (ShardwiseClient client = ShardwiseClient.builder().seeds(List.of(hole.address(), cluster.node("n1").address())).build()) {
        long millis = (System.nanoTime() - started) / 1_000_000;
        assertThat(millis).as("the map came from n1 while the first seed stayed silent (it has 3 s)").isLessThan(2_500);
        client.put("t", Key.of("k"), "v".getBytes(StandardCharsets.UTF_8));
        started = System.nanoTime();
        client.refreshMap();
        assertThat((System.nanoTime() - started) / 1_000_000).isLessThan(2_500);
        assertThat(client.get("t", Key.of("k"))).isPresent();
      }
      assertThatThrownBy(() -> ShardwiseClient.builder().seeds(List.of(hole.address())).build())
          .isInstanceOf(ShardwiseException.class).hasMessageContaining("no node answered for the map within 3 s")
          .hasMessageContaining(hole.address());
    }
  }
}
