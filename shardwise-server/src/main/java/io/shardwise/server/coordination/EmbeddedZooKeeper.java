package io.shardwise.server.coordination;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.zookeeper.server.embedded.ExitHandler;
import org.apache.zookeeper.server.embedded.ZooKeeperServerEmbedded;

/**
 * ZooKeeper's own embedded single server, for {@code shardwise dev} and tests. Production runs
 * against an ensemble instead. Close it to stop the server.
 */
public final class EmbeddedZooKeeper implements AutoCloseable {

  private final ZooKeeperServerEmbedded server;
  private final String connectString;

  private EmbeddedZooKeeper(ZooKeeperServerEmbedded server, String connectString) {
    this.server = server;
    this.connectString = connectString;
  }

  /**
   * Starts a server on {@code 127.0.0.1:port} (0: a port chosen by the OS) keeping its data in
   * {@code dataDir}.
   */
  public static EmbeddedZooKeeper start(int port, Path dataDir) {
    try {
      Files.createDirectories(dataDir);
      Properties config = new Properties();
      config.setProperty("clientPort", Integer.toString(port));
      config.setProperty("clientPortAddress", "127.0.0.1");
      config.setProperty("admin.enableServer", "false");
      // A session expires at the first tick past its timeout: a short tick keeps failover close to
      // the session timeout (a 500 ms tick added up to half a second to it).
      config.setProperty("tickTime", "200");
      config.setProperty("minSessionTimeout", "1000");
      config.setProperty("maxSessionTimeout", "60000");
      ZooKeeperServerEmbedded server =
          ZooKeeperServerEmbedded.builder().baseDir(dataDir).configuration(config).exitHandler(ExitHandler.LOG_ONLY).build();
      server.start();
      return new EmbeddedZooKeeper(server, server.getConnectionString().replace("localhost", "127.0.0.1"));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start ZooKeeper in " + dataDir + ": " + e.getMessage(), e);
    } catch (Exception e) {
      throw new IllegalStateException("cannot start ZooKeeper on port " + port + ": " + e.getMessage(), e);
    }
  }

  /** {@code host:port} to connect to. */
  public String connectString() {
    return connectString;
  }

  @Override
  public void close() {
    server.close();
  }
}
