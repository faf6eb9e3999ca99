package io.shardwise.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.shardwise.client.Routing;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.ShardwiseException;
import io.shardwise.client.TableSpec;
import io.shardwise.core.doc.ValueFormat;
import io.shardwise.core.key.Key;
import io.shardwise.core.txn.TxnItem;
import io.shardwise.server.rpc.Limits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.AbstractMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tables of JSON documents on a real cluster: every write path (put, batch, transaction, counter
 * operations) refuses a value that is not one JSON object, names the byte where it goes wrong, and
 * writes nothing of the request; tables of bytes take anything, as before.
 */
@Tag("integration")
class DocumentTest {

  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyWriteOfADocumentTableMustBeADocument() {
    try (TestCluster cluster = new TestCluster(dir, 2, Limits.DEFAULT)) {
      for (Routing routing : Routing.values()) {
        ShardwiseClient client = cluster.client(routing);
        String docs = "docs_" + routing.name().toLowerCase(java.util.Locale.ROOT);
        client.createTable(docs, TableSpec.builder("hashrange").shards(4).replicas(1).format(ValueFormat.JSON).build());
        assertThat(client.describeTable(docs, false).spec().format()).isEqualTo(ValueFormat.JSON);

        assertThat(client.put(docs, Key.of("car-1"), b("{\"color\": \"red\", \"owner\": {\"id\": 7}}"))).isEqualTo(1);
        assertThatThrownBy(() -> client.put(docs, Key.of("car-2"), b("{\"color\": \"red\",}")))
            .isInstanceOfSatisfying(ShardwiseException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.INVALID_ARGUMENT))
            .hasMessageContaining("the value is not a JSON document at byte 16").hasMessageContaining("nothing was written");
        assertThatThrownBy(() -> client.put(docs, Key.of("car-2"), b("[1, 2]"))).hasMessageContaining("a JSON object, not an array");
        assertThat(client.get(docs, Key.of("car-2"))).isEmpty();

        // A batch over several shards with one bad entry: none of it is written.
        List<Map.Entry<Key, byte[]>> batch = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) {
          batch.add(new AbstractMap.SimpleEntry<>(Key.of("batch-" + i), b(i == 13 ? "{\"n\": 13" : "{\"n\": " + i + "}")));
        }
        assertThatThrownBy(() -> client.batchPut(docs, batch)).hasMessageContaining("entry 13 is not a JSON document at byte 8");
        for (int i = 0; i < 20; i++) {
          assertThat(client.get(docs, Key.of("batch-" + i))).as("batch-" + i).isEmpty();
        }

        // A transaction with a bad item: refused whole, before anything is locked or written.
        assertThatThrownBy(() -> client.transact(List.of(TxnItem.put(docs, Key.of("t-1"), b("{}")),
            TxnItem.put(docs, Key.of("t-2"), b("not json"))))).hasMessageContaining("item 1 is not a JSON document at byte 0");
        assertThat(client.get(docs, Key.of("t-1"))).isEmpty();

        assertThatThrownBy(() -> client.increment(docs, Key.of("hits"), 1)).hasMessageContaining("holds JSON documents");
      }

      // A table of bytes takes anything.
      ShardwiseClient client = cluster.client(Routing.CLIENT);
      client.createTable("raw", TableSpec.builder("hashrange").shards(2).replicas(1).build());
      assertThat(client.describeTable("raw", false).spec().format()).isEqualTo(ValueFormat.BYTES);
      assertThat(client.put("raw", Key.of("k"), b("{\"not\": closed"))).isEqualTo(1);
    }
  }
}
