package io.shardwise.bench;

import io.shardwise.server.storage.RocksDbLibrary;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The storage engine's limit: one RocksDB in this process, the same data and operations, no
 * routing, no RPC, no versions. Opened with the options a Shardwise node uses (WAL on, no fsync per
 * write), in a directory of its own that is deleted on close.
 */
public final class RocksDbTarget implements Target {

  static {
    RocksDbLibrary.load();
  }

  private final Path directory;
  private final Options options;
  private final WriteOptions writes;
  private RocksDB db;

  public RocksDbTarget(Path directory) {
    this.directory = directory;
    this.options = new Options().setCreateIfMissing(true);
    this.writes = new WriteOptions();
  }

  @Override
  public String name() {
    return "rocksdb";
  }

  @Override
  public void prepare() {
    if (db != null) {
      db.close();
      db = null;
    }
    try {
      Directories.delete(directory);
      Files.createDirectories(directory);
      db = RocksDB.open(options, directory.toString());
    } catch (RocksDBException | java.io.IOException e) {
      throw new IllegalStateException("cannot open RocksDB in " + directory + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void load(List<Map.Entry<String, byte[]>> batch) {
    try (WriteBatch b = new WriteBatch()) {
      for (Map.Entry<String, byte[]> e : batch) {
        b.put(bytes(e.getKey()), e.getValue());
      }
      db.write(writes, b);
    } catch (RocksDBException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  @Override
  public boolean read(String key) {
    try {
      return db.get(bytes(key)) != null;
    } catch (RocksDBException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  @Override
  public void update(String key, byte[] value) {
    put(key, value);
  }

  @Override
  public void insert(String key, byte[] value) {
    put(key, value);
  }

  private void put(String key, byte[] value) {
    try {
      db.put(writes, bytes(key), value);
    } catch (RocksDBException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  @Override
  public int scan(String startKey, int count) {
    int rows = 0;
    try (RocksIterator it = db.newIterator()) {
      for (it.seek(bytes(startKey)); it.isValid() && rows < count; it.next()) {
        it.value();
        rows++;
      }
    }
    return rows;
  }

  private static byte[] bytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    if (db != null) {
      db.close();
      db = null;
    }
    writes.close();
    options.close();
    try {
      Directories.delete(directory);
    } catch (java.io.IOException e) {
      // a leftover benchmark directory is not worth failing the report for
    }
  }
}
