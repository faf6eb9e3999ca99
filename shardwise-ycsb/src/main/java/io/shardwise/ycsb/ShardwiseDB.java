package io.shardwise.ycsb;

import com.google.protobuf.ByteString;
import io.shardwise.bench.KeySpace;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.TableSpec;
import io.shardwise.client.ShardwiseException;
import io.shardwise.core.key.Key;
import io.shardwise.core.map.NodeId;
import io.shardwise.client.KeyValue;
import io.shardwise.proto.v1.NodeInfo;
import io.shardwise.server.coordination.Coordinator;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB's {@link DB} over the Shardwise Java client. A record's fields are stored as one value
 * (field name and bytes, length-prefixed), so a read is one get and an update of every field is one
 * put; an update of some fields reads, merges and writes.
 *
 * <p>Properties: {@code shardwise.zk} (default 127.0.0.1:2181) finds the live nodes or routers, or
 * {@code shardwise.seeds} names them ({@code host:port,…}); {@code shardwise.via} is client
 * (default), router or node; {@code shardwise.shards} is the shard count of the table made at the
 * first load when it is missing (a {@code range} table split evenly over YCSB's hashed keys, as
 * {@code shardwise bench} makes; default 12). YCSB's {@code fieldcount} tells whether an update
 * writes every field.
 *
 * <p>One client serves every YCSB thread of the process (the client is thread-safe and holds one
 * channel per node); it is closed when the last thread cleans up.
 */
public final class ShardwiseDB extends DB {

  private static final Object LOCK = new Object();
  private static ShardwiseClient shared;
  private static int users;

  private ShardwiseClient client;
  private int fieldCount;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    fieldCount = Integer.parseInt(p.getProperty("fieldcount", "10"));
    synchronized (LOCK) {
      if (shared == null) {
        try {
          shared = connect(p);
        } catch (RuntimeException e) {
          throw new DBException("cannot reach the Shardwise cluster: " + e.getMessage(), e);
        }
      }
      users++;
      client = shared;
    }
    String table = p.getProperty("table", "usertable");
    ensureTable(table, Integer.parseInt(p.getProperty("shardwise.shards", "12")));
  }

  private static ShardwiseClient connect(Properties p) {
    Routing routing = switch (p.getProperty("shardwise.via", "client")) {
      case "client" -> Routing.CLIENT;
      case "router" -> Routing.ROUTER;
      case "node" -> Routing.NODE;
      default -> throw new IllegalArgumentException("shardwise.via must be client, router or node");
    };
    List<String> seeds = new ArrayList<>();
    String listed = p.getProperty("shardwise.seeds");
    if (listed != null && !listed.isBlank()) {
      seeds.addAll(List.of(listed.split(",")));
    } else {
      String zk = p.getProperty("shardwise.zk", "127.0.0.1:2181");
      try (Coordinator c = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        Map<NodeId, NodeInfo> live = routing == Routing.ROUTER ? c.liveRoutersNow() : c.liveNodesNow();
        live.values().forEach(n -> seeds.add(n.getAddress()));
      }
      if (seeds.isEmpty()) {
        throw new IllegalStateException("no live " + (routing == Routing.ROUTER ? "router" : "node") + " in ZooKeeper at " + zk);
      }
    }
    return ShardwiseClient.builder().routing(routing).seeds(seeds).build();
  }

  /** Makes the table at the first load: range shards split evenly over YCSB's hashed keys, as the bench does. */
  private void ensureTable(String table, int shards) throws DBException {
    synchronized (LOCK) {
      if (client.listTables().stream().anyMatch(t -> t.name().equals(table))) {
        return;
      }
      TableSpec spec = TableSpec.builder("range").splitPoints(KeySpace.splitPoints(shards).toArray(String[]::new)).build();
      try {
        client.createTable(table, spec);
      } catch (ShardwiseException e) {
        if (client.listTables().stream().noneMatch(t -> t.name().equals(table))) {
          throw new DBException("cannot create table " + table + ": " + e.getMessage(), e);
        }
      }
    }
  }

  @Override
  public void cleanup() {
    synchronized (LOCK) {
      if (--users == 0 && shared != null) {
        shared.close();
        shared = null;
      }
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      var found = client.get(table, Key.of(key));
      if (found.isEmpty()) {
        return Status.NOT_FOUND;
      }
      decode(found.get().value(), fields, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startKey, int count, Set<String> fields, Vector<HashMap<String, ByteIterator>> result) {
    try {
      for (KeyValue row : client.scanFrom(table, startKey.getBytes(StandardCharsets.UTF_8), count)) {
        HashMap<String, ByteIterator> values = new HashMap<>();
        decode(row.value(), fields, values);
        result.add(values);
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return write(table, key, values, values.size() < fieldCount);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return write(table, key, values, false);
  }

  /** Writes the fields; with {@code merge}, over the record's other fields (one read first). */
  private Status write(String table, String key, Map<String, ByteIterator> values, boolean merge) {
    try {
      Map<String, byte[]> record = new LinkedHashMap<>();
      if (merge) {
        var current = client.get(table, Key.of(key));
        if (current.isEmpty()) {
          return Status.NOT_FOUND;
        }
        decodeRaw(current.get().value(), record);
      }
      values.forEach((f, v) -> record.put(f, v.toArray()));
      client.put(table, Key.of(key), encode(record));
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      return client.delete(table, Key.of(key)) ? Status.OK : Status.NOT_FOUND;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  /** Fields as (name length, name, value length, value), in order. */
  static byte[] encode(Map<String, byte[]> record) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      for (Map.Entry<String, byte[]> e : record.entrySet()) {
        byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
        out.writeInt(name.length);
        out.write(name);
        out.writeInt(e.getValue().length);
        out.write(e.getValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  static void decodeRaw(byte[] stored, Map<String, byte[]> into) {
    try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(stored))) {
      while (in.available() > 0) {
        byte[] name = new byte[in.readInt()];
        in.readFully(name);
        byte[] value = new byte[in.readInt()];
        in.readFully(value);
        into.put(new String(name, StandardCharsets.UTF_8), value);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("a stored record is not in the binding's format: " + e.getMessage(), e);
    }
  }

  private static void decode(byte[] stored, Set<String> fields, Map<String, ByteIterator> result) {
    Map<String, byte[]> all = new LinkedHashMap<>();
    decodeRaw(stored, all);
    all.forEach((f, v) -> {
      if (fields == null || fields.contains(f)) {
        result.put(f, new ByteArrayByteIterator(v));
      }
    });
  }
}
