package io.shardwise.server.storage;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HexFormat;
import java.util.List;
import org.rocksdb.RocksDB;
import org.rocksdb.util.Environment;

/**
 * Loads RocksDB's native library from one stable place per library build and user, reused by every
 * process: {@code <dir>/shardwise-rocksdbjni-<user>-<sha-256 prefix>/librocksdbjni-….so}, where {@code
 * <dir>} is {@code -Dshardwise.native.dir}, else {@code $SHARDWISE_NATIVE_DIR}, else
 * {@code java.io.tmpdir}.
 *
 * <p>RocksDB's own loader copies the 15 MB library to a fresh temporary file in every process and
 * deletes it only at a clean exit: each node killed with {@code kill -9} (or by the OOM killer, or a
 * power cut) left one behind — 397 MB after one fault campaign. Here the library is extracted once,
 * to a temporary file in the same directory moved into place atomically, so processes starting at
 * the same time never load a half-written file, and a later process finds it and loads it as is.
 */
public final class RocksDbLibrary {

  private static volatile boolean loaded;

  private RocksDbLibrary() {}

  /** Loads the library once per process (later calls return at once). */
  public static synchronized void load() {
    if (loaded) {
      return;
    }
    String name = Environment.getJniLibraryFileName("rocksdb"); // librocksdbjni-linux64.so, as the jar holds it
    byte[] library;
    try (InputStream in = RocksDB.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        RocksDB.loadLibrary(); // not in the jar (another platform's build): RocksDB's own search
        loaded = true;
        return;
      }
      library = in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + name + " from the RocksDB jar: " + e.getMessage(), e);
    }
    // Per user: the file is private to its owner, and another user could not replace it.
    Path dir = base().resolve("shardwise-rocksdbjni-" + System.getProperty("user.name", "user") + "-" + digest(library));
    Path file = dir.resolve(name);
    try {
      if (!Files.exists(file) || Files.size(file) != library.length) {
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, name, ".tmp");
        try {
          Files.write(tmp, library);
          Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
          Files.deleteIfExists(tmp);
        }
      }
      // RocksDB.loadLibrary(paths) looks for getJniLibraryFileName("rocksdbjni") in each directory
      // (librocksdbjnijni-linux64.so in 10.10): a link by that name lets it find the file.
      Path expected = dir.resolve(Environment.getJniLibraryFileName("rocksdbjni"));
      if (!expected.equals(file) && !Files.exists(expected)) {
        Path link = dir.resolve(expected.getFileName() + "." + ProcessHandle.current().pid() + ".link");
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, file.getFileName());
        Files.move(link, expected, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot place RocksDB's native library in " + dir + " (set -Dshardwise.native.dir or "
          + "SHARDWISE_NATIVE_DIR to a writable directory): " + e.getMessage(), e);
    }
    RocksDB.loadLibrary(List.of(dir.toString()));
    loaded = true;
  }

  static Path base() {
    String dir = System.getProperty("shardwise.native.dir");
    if (dir == null || dir.isBlank()) {
      dir = System.getenv("SHARDWISE_NATIVE_DIR");
    }
    if (dir == null || dir.isBlank()) {
      dir = System.getProperty("java.io.tmpdir");
    }
    return Path.of(dir);
  }

  private static String digest(byte[] bytes) {
    try {
      byte[] sha = java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
      return HexFormat.of().formatHex(sha, 0, 8);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }
}
