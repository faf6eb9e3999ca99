package io.shardwise.client;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * What a scan reads, one page at a time ({@link ShardwiseClient#scan}): one partition (its rows in
 * sort-key order, optionally a sort-key range), a partition-key range of a {@code range} table, or
 * every row of a table. Immutable: each {@code with} method returns a new scan.
 *
 * <pre>{@code
 * Scan scan = Scan.partition("events", "bob").limit(50);
 * ScanPage page = client.scan(scan);
 * while (page.hasMore()) {
 *   page = client.scan(scan.after(page));
 * }
 * }</pre>
 */
public final class Scan {

  /** Rows per page, at most. */
  public static final int MAX_LIMIT = 1000;

  /** What a scan covers. */
  public enum Scope { PARTITION, RANGE, ALL }

  private final String table;
  private final Scope scope;
  private final byte[] from; // PARTITION: the partition key; RANGE: the first partition key
  private final byte[] to; // PARTITION: unused; RANGE: the end (null: unbounded)
  private final byte[] sortFrom;
  private final byte[] sortTo; // null: to the end of the partition
  private final int limit;
  private final byte[] pageToken;

  private Scan(String table, Scope scope, byte[] from, byte[] to, byte[] sortFrom, byte[] sortTo, int limit, byte[] pageToken) {
    this.table = table;
    this.scope = scope;
    this.from = from;
    this.to = to;
    this.sortFrom = sortFrom;
    this.sortTo = sortTo;
    this.limit = limit;
    this.pageToken = pageToken;
  }

  /** The rows of one partition key, in sort-key order. */
  public static Scan partition(String table, byte[] partitionKey) {
    return new Scan(table, Scope.PARTITION, partitionKey.clone(), null, new byte[0], null, 100, new byte[0]);
  }

  public static Scan partition(String table, String partitionKey) {
    return partition(table, partitionKey.getBytes(StandardCharsets.UTF_8));
  }

  /** Rows whose partition key is in [{@code from}, {@code to}) ({@code to} null: to the end), in key order; range tables only. */
  public static Scan range(String table, byte[] from, byte[] to) {
    return new Scan(table, Scope.RANGE, from.clone(), to == null ? null : to.clone(), new byte[0], null, 100, new byte[0]);
  }

  /** Every row of the table, from every shard. */
  public static Scan all(String table) {
    return new Scan(table, Scope.ALL, new byte[0], null, new byte[0], null, 100, new byte[0]);
  }

  /** Only sort keys in [{@code from}, {@code to}) ({@code to} null: to the end); partition scans only. */
  public Scan sortKeys(byte[] from, byte[] to) {
    if (scope != Scope.PARTITION) {
      throw new IllegalArgumentException("a sort-key range needs a partition scan");
    }
    return new Scan(table, scope, this.from, this.to, from.clone(), to == null ? null : to.clone(), limit, pageToken);
  }

  /** Rows per page, 1 to {@value #MAX_LIMIT} (default 100). */
  public Scan limit(int rows) {
    if (rows < 1 || rows > MAX_LIMIT) {
      throw new IllegalArgumentException("a scan's limit must be between 1 and " + MAX_LIMIT + ", not " + rows);
    }
    return new Scan(table, scope, from, to, sortFrom, sortTo, rows, pageToken);
  }

  /** The same scan, continued after {@code page}. */
  public Scan after(ScanPage page) {
    return after(page.nextPageToken().orElseThrow(() -> new IllegalArgumentException("that page was the last")));
  }

  /** The same scan, continued from a page token a previous page gave. */
  public Scan after(byte[] pageToken) {
    return new Scan(table, scope, from, to, sortFrom, sortTo, limit, pageToken.clone());
  }

  public String table() {
    return table;
  }

  public Scope scope() {
    return scope;
  }

  /** The partition key of a partition scan, or the start of a range scan. */
  public byte[] from() {
    return from.clone();
  }

  /** The end of a range scan; empty: unbounded. */
  public Optional<byte[]> to() {
    return Optional.ofNullable(to).map(byte[]::clone);
  }

  public byte[] sortFrom() {
    return sortFrom.clone();
  }

  /** The end of a partition scan's sort keys; empty: to the end of the partition. */
  public Optional<byte[]> sortTo() {
    return Optional.ofNullable(sortTo).map(byte[]::clone);
  }

  public int limit() {
    return limit;
  }

  /** Empty: the first page. */
  public byte[] pageToken() {
    return pageToken.clone();
  }
}
