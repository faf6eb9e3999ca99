package io.shardwise.bench;

import com.google.protobuf.ByteString;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.PartitionRange;
import io.shardwise.proto.v1.PartitioningSpec;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.ScanResponse;
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

  public static final String TABLE = "usertable";

  private final ShardwiseClient client;
  private final int shards;

  public ShardwiseTarget(ShardwiseClient client, int shards) {
    this.client = client;
    this.shards = shards;
  }

  @Override
  public String name() {
    return "shardwise";
  }

  @Override
  public void prepare() {
    if (client.listTables().stream().anyMatch(t -> t.getName().equals(TABLE))) {
      client.dropTable(TABLE);
    }
    PartitioningSpec.Builder spec = PartitioningSpec.newBuilder().setStrategy("range");
    for (String point : KeySpace.splitPoints(shards)) {
      spec.addSplitPoints(ByteString.copyFromUtf8(point));
    }
    client.createTable(TABLE, spec.build());
  }

  @Override
  public void load(List<Map.Entry<String, byte[]>> batch) {
    List<Map.Entry<Key, byte[]>> entries = new ArrayList<>(batch.size());
    for (Map.Entry<String, byte[]> e : batch) {
      entries.add(Map.entry(Key.of(e.getKey()), e.getValue()));
    }
    client.batchPut(TABLE, entries);
  }

  @Override
  public boolean read(String key) {
    return client.get(TABLE, Key.of(key)).isPresent();
  }

  @Override
  public void update(String key, byte[] value) {
    client.put(TABLE, Key.of(key), value);
  }

  @Override
  public void insert(String key, byte[] value) {
    client.put(TABLE, Key.of(key), value);
  }

  @Override
  public int scan(String startKey, int count) {
    int rows = 0;
    ByteString token = ByteString.EMPTY;
    do {
      ScanResponse page = client.scan(ScanRequest.newBuilder().setTable(TABLE)
          .setPartitionRange(PartitionRange.newBuilder().setFrom(ByteString.copyFrom(startKey, StandardCharsets.UTF_8)))
          .setLimit(count - rows).setPageToken(token).build());
      rows += page.getRowsCount();
      token = page.getNextPageToken();
    } while (rows < count && !token.isEmpty());
    return rows;
  }

  @Override
  public void close() {
    client.close();
  }
}
