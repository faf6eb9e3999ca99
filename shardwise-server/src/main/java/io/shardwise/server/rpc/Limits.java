package io.shardwise.server.rpc;

import io.shardwise.proto.Errors;

/**
 * Request limits, checked before anything of a request is written. Defaults: key ≤ 8 KiB
 * (partition key plus sort key), value ≤ 4 MiB, batch ≤ 1000 keys and ≤ 16 MiB of keys and
 * values, scan page ≤ 1000 rows.
 */
public record Limits(int maxKeyBytes, int maxValueBytes, int maxBatchKeys, long maxBatchBytes, int maxScanLimit) {

  public static final Limits DEFAULT = new Limits(8 * 1024, 4 * 1024 * 1024, 1000, 16L * 1024 * 1024, 1000);

  public Limits {
    if (maxKeyBytes < 1 || maxValueBytes < 0 || maxBatchKeys < 1 || maxBatchBytes < 1 || maxScanLimit < 1) {
      throw new IllegalArgumentException("limits must be positive");
    }
  }

  /** The largest gRPC message a node must accept: a full batch plus framing. */
  public int maxMessageBytes() {
    return (int) Math.min(Integer.MAX_VALUE, maxBatchBytes + maxValueBytes + (1 << 20));
  }

  void checkKey(int partitionKeyBytes, int sortKeyBytes) {
    if (partitionKeyBytes == 0) {
      throw Errors.invalid("the partition key is empty");
    }
    int size = partitionKeyBytes + sortKeyBytes;
    if (size > maxKeyBytes) {
      throw Errors.limit("key is " + size + " bytes; the limit is " + maxKeyBytes + " bytes (partition key plus sort key)");
    }
  }

  /** The longest client write id (RequestHeader.request_id) a node accepts. */
  public static final int MAX_REQUEST_ID_BYTES = 64;

  void checkRequestId(int bytes) {
    if (bytes > MAX_REQUEST_ID_BYTES) {
      throw Errors.limit("write id is " + bytes + " bytes; the limit is " + MAX_REQUEST_ID_BYTES + " bytes");
    }
  }

  void checkValue(int valueBytes) {
    if (valueBytes > maxValueBytes) {
      throw Errors.limit("value is " + valueBytes + " bytes; the limit is " + maxValueBytes + " bytes");
    }
  }

  void checkBatch(int keys, long bytes) {
    if (keys == 0) {
      throw Errors.invalid("the batch is empty");
    }
    if (keys > maxBatchKeys) {
      throw Errors.limit("batch has " + keys + " keys; the limit is " + maxBatchKeys + " keys");
    }
    if (bytes > maxBatchBytes) {
      throw Errors.limit("batch is " + bytes + " bytes; the limit is " + maxBatchBytes + " bytes");
    }
  }
}
