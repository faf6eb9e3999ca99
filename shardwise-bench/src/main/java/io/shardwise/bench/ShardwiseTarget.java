package io.shardwise.bench;

import com.google.protobuf.ByteString;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A Shardwise cluster through the Java client, in any routing mode. The table is a {@code range}
 * table split evenly over the key space ({@link KeySpace#splitPoints}), so scans read rows in key
 * order from the shards that hold them, and point operations route like on any other table.
 */
public final class ShardwiseTarget implements Target {

  /** YCSB's table name, so YCSB's driver can run against the same data. */
  public static final String TABLE = "usertable";

  private final ShardwiseClient client;
  private final String table;
  private final int shards;
  private final int replicas;
  private final String strategy;

  public ShardwiseTarget(ShardwiseClient client, String table, int shards) {
    this(client, table, shards, 1);
  }

  /** A table of {@code shards} range shards, each kept on {@code replicas} nodes. */
  public ShardwiseTarget(ShardwiseClient client, String table, int shards, int replicas) {
    this(client, table, shards, replicas, "range");
  }

  /**
   * A table of {@code shards} shards of {@code strategy}: {@code range} (split where the key space
   * divides evenly) or {@code hashrange}, each shard kept on {@code replicas} nodes.
   */
  public ShardwiseTarget(ShardwiseClient client, String table, int shards, int replicas, String strategy) {
    if (!strategy.equals("range") && !strategy.equals("hashrange")) {
      throw new IllegalArgumentException("the benchmark's table is range or hashrange, not '" + strategy + "'");
    }
    this.strategy = strategy;
    this.replicas = replicas;
    this.client = client;
    this.table = table;
    this.shards = shards;
  }

  public String table() {
    return table;
  }

  @Override
  public String name() {
    return "shardwise";
  }

  /**
   * Creates the table.
   *
   * @throws IllegalStateException if it exists: a benchmark never drops data it did not make
   */
  @Override
  public void prepare() {
    if (client.listTables().stream().anyMatch(t -> t.name().equals(table))) {
      throw new IllegalStateException("table " + table + " already exists; drop it first (shardwise table drop " + table
          + ") or name another with --table");
    }
    TableSpec.Builder spec = shards == 1 || strategy.equals("hashrange") ? TableSpec.builder(strategy).shards(shards)
        : TableSpec.builder("range").splitPoints(KeySpace.splitPoints(shards).toArray(String[]::new));
    client.createTable(table, spec.replicas(replicas).build());
  }

  @Override
  public void load(List<Map.Entry<String, byte[]>> batch) {
    List<Map.Entry<Key, byte[]>> entries = new ArrayList<>(batch.size());
    for (Map.Entry<String, byte[]> e : batch) {
      entries.add(Map.entry(Key.of(e.getKey()), e.getValue()));
    }
    client.batchPut(table, entries);
  }

  @Override
  public boolean read(String key) {
    return client.get(table, Key.of(key)).isPresent();
  }

  @Override
  public void increment(String key, long delta) {
    client.increment(table, Key.of(Target.counterKey(key)), delta);
  }

  @Override
  public long counter(String key) {
    return client.counter(table, Key.of(Target.counterKey(key)));
  }

  @Override
  public void update(String key, byte[] value) {
    client.put(table, Key.of(key), value);
  }

  @Override
  public void insert(String key, byte[] value) {
    client.put(table, Key.of(key), value);
  }

  @Override
  public int scan(String startKey, int count) {
    return client.scanFrom(table, startKey.getBytes(StandardCharsets.UTF_8), count).size();
  }


  @Override
  public void close() {
    client.close();
  }
}
