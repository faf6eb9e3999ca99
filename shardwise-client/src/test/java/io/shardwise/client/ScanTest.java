package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.shardwise.core.key.Key;
import io.shardwise.proto.v1.ResponseHeader;
import io.shardwise.proto.v1.ScanRequest;
import io.shardwise.proto.v1.ScanResponse;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ScanTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aPartitionScanWithASortKeyRangeGoesOnTheWireAsOnePartition() {
    ScanRequest r = Protos.scan(Scan.partition("events", "bob").sortKeys(b("a"), b("m")).limit(50));
    assertThat(r.getTable()).isEqualTo("events");
    assertThat(r.getLimit()).isEqualTo(50);
    assertThat(r.getPartition().getPartitionKey().toStringUtf8()).isEqualTo("bob");
    assertThat(r.getPartition().getSortFrom().toStringUtf8()).isEqualTo("a");
    assertThat(r.getPartition().getSortTo().toStringUtf8()).isEqualTo("m");
    assertThat(r.getPageToken()).isEmpty();
  }

  @Test
  void aRangeScanWithoutAnEndIsUnbounded() {
    ScanRequest open = Protos.scan(Scan.range("events", b("h"), null));
    assertThat(open.getPartitionRange().getFrom().toStringUtf8()).isEqualTo("h");
    assertThat(open.getPartitionRange().getHasTo()).isFalse();
    ScanRequest closed = Protos.scan(Scan.range("events", b("h"), b("p")));
    assertThat(closed.getPartitionRange().getHasTo()).isTrue();
    assertThat(closed.getPartitionRange().getTo().toStringUtf8()).isEqualTo("p");
    assertThat(Protos.scan(Scan.all("events")).getAll()).isTrue();
    assertThat(Protos.scan(Scan.all("events")).getLimit()).as("the default page").isEqualTo(100);
  }

  @Test
  void aPageCarriesRowsInDomainTypesAndTheNextPageContinuesTheSameScan() {
    ScanResponse wire = ScanResponse.newBuilder().setHeader(ResponseHeader.newBuilder().setShardsTouched(2))
        .addRows(io.shardwise.proto.v1.KeyValue.newBuilder().setKey(Protos.key(Key.of("bob", 7L))).setValue(ByteString.copyFromUtf8("x"))
            .setVersion(3))
        .setNextPageToken(ByteString.copyFromUtf8("token")).build();
    ScanPage page = Protos.page(wire);
    assertThat(page.shardsTouched()).isEqualTo(2);
    assertThat(page.rows()).singleElement().satisfies(row -> {
      assertThat(row.key()).isEqualTo(Key.of("bob", 7L));
      assertThat(row.valueAsString()).isEqualTo("x");
      assertThat(row.version()).isEqualTo(3);
    });
    assertThat(page.hasMore()).isTrue();
    Scan next = Scan.all("events").limit(10).after(page);
    assertThat(Protos.scan(next).getPageToken().toStringUtf8()).isEqualTo("token");
    assertThat(next.limit()).isEqualTo(10);

    ScanPage last = Protos.page(ScanResponse.getDefaultInstance());
    assertThat(last.hasMore()).isFalse();
    assertThat(last.nextPageToken()).isEqualTo(Optional.empty());
    assertThatThrownBy(() -> Scan.all("events").after(last)).hasMessage("that page was the last");
  }

  @Test
  void aLimitOutsideOneToAThousandAndASortRangeOutsideAPartitionAreRefused() {
    assertThatThrownBy(() -> Scan.all("t").limit(0)).hasMessage("a scan's limit must be between 1 and 1000, not 0");
    assertThatThrownBy(() -> Scan.all("t").limit(1001)).hasMessage("a scan's limit must be between 1 and 1000, not 1001");
    assertThatThrownBy(() -> Scan.all("t").sortKeys(b("a"), null)).hasMessage("a sort-key range needs a partition scan");
  }
}
