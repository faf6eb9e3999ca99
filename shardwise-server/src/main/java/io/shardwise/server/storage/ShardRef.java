package io.shardwise.server.storage;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.Key;
import io.shardwise.core.key.KeyRange;
import io.shardwise.core.map.Table;
import io.shardwise.core.partition.ShardLayout;
import java.util.Arrays;

/**
 * A shard as the store knows it: the table's never-reused id, the shard's never-reused number, and
 * where the shard's keys lie in the stored keyspace — always one contiguous range, its {@linkplain
 * #start() span}.
 *
 * <p><b>Keys in placement order.</b> A stored key is {@code [table id: 8 bytes][placement][key]},
 * big-endian, where the placement is what the table's strategy places by:
 *
 * <pre>
 *   range       [table id][0x01][encoded key]             the key itself
 *   hashrange   [table id][0x01][hash: 8 bytes][encoded key]  the partition key's hash
 *   ring/tokens [table id][0x01][hash: 8 bytes][encoded key]  as hashrange, for rings of hash ranges
 *   other       [table id][shard number: 8 bytes][encoded key]
 * </pre>
 *
 * So a {@code range} or {@code hashrange} shard, and a range of a ring ({@link
 * io.shardwise.core.partition.RingRanges}), is the stretch of the keyspace between its bounds
 * whatever its number, and splitting or merging such shards, or a node joining a ring, changes only
 * the map: no key is rewritten. The strategies that cannot split ({@code mod}, {@code slots},
 * {@code jump}, {@code rendezvous}, and rings of whole arcs created before rings were ranges) keep
 * a shard-number prefix ({@link Layout#BUCKET}), exactly the layout every table had before (format
 * 1), so their data needs no migration. The tag
 * byte 0x01 keeps the two layouts of one table id apart: a shard number's first byte is 0x00.
 *
 * <p><b>Keys the store keeps for itself</b> lie inside the span and are told from user keys by the
 * byte after the escaped partition key ({@link Key#encode}: a user key has 0x00 0x01 there): a
 * write id's record ({@link #recordKey}, 0x02), a transaction's intent on a key ({@link #intentKey},
 * 0x03), the version floor ({@link #floorKey}, 0x04), a transaction's record ({@link
 * #txnRecordKey}, 0x05) and a row's pending marker for its asynchronous global indexes ({@link
 * #pendingKey}, 0x06).
 *
 * <p>Two refs are equal when their table id, number and layout are: a shard's span never changes,
 * since a split or a merge makes new shards with new numbers. Immutable.
 */
public final class ShardRef {

  /** How a shard's keys are placed in the stored keyspace. */
  public enum Layout {
    /** {@code [table id][shard number][key]}: a shard is a key prefix. */
    BUCKET,
    /** {@code [table id][0x01][key]}: a {@code range} table's shard is a range of keys. */
    KEY,
    /** {@code [table id][0x01][hash][key]}: a {@code hashrange} table's shard is a range of hashes. */
    HASH,
    /** Everything stored under a table id that the map does not have: only ever moved to the trash. */
    TABLE
  }

  static final int BUCKET_PREFIX = 16;
  static final byte ORDERED = 0x01;
  private static final byte ESCAPE = 0x00;
  private static final byte ESCAPED_ZERO = (byte) 0xff;
  private static final byte TERMINATOR = 0x01;
  private static final byte RECORD = 0x02;
  private static final byte INTENT = 0x03;
  private static final byte FLOOR = 0x04;
  private static final byte TXN_RECORD = 0x05;
  private static final byte PENDING = 0x06;

  private final long tableId;
  private final long shardNumber;
  private final Layout layout;
  private final HashFunction hash;
  private final byte[] start;
  private final byte[] end;

  private ShardRef(long tableId, long shardNumber, Layout layout, HashFunction hash, byte[] start, byte[] end) {
    this.tableId = tableId;
    this.shardNumber = shardNumber;
    this.layout = layout;
    this.hash = hash;
    this.start = start;
    this.end = end;
  }

  /** A shard whose keys are prefixed with its number ({@link Layout#BUCKET}). */
  public ShardRef(long tableId, long shardNumber) {
    this(tableId, shardNumber, Layout.BUCKET, null, bucketPrefix(tableId, shardNumber), successor(bucketPrefix(tableId, shardNumber)));
  }

  /**
   * The shard numbered {@code number} of {@code table}, laid out as the table's strategy places.
   *
   * @throws IllegalArgumentException if the table has no such shard
   */
  public static ShardRef of(Table table, long number) {
    ShardLayout layout = table.layout();
    if (layout.strategy() == io.shardwise.core.partition.Strategy.RANGE) {
      KeyRange r = layout.keyRangeOf(position(table, number));
      return ofKeyRange(table.id(), number, r.start(), r.end());
    }
    if (layout.hashRanges()) {
      int position = position(table, number);
      return ofHashRange(table.id(), number, layout.hashFunction(), layout.hashRangeFirst(position), layout.hashRangeLast(position));
    }
    return new ShardRef(table.id(), number);
  }

  private static int position(Table table, long number) {
    int position = table.positionOf(number);
    if (position < 0) {
      throw new IllegalArgumentException("table " + table.name() + " has no shard " + number);
    }
    return position;
  }

  /** A {@code range} shard holding the partition keys in {@code [from, to)} ({@code to == null}: to the end). */
  public static ShardRef ofKeyRange(long tableId, long number, byte[] from, byte[] to) {
    byte[] start = concat(orderedPrefix(tableId), escaped(from));
    byte[] end = to == null ? orderedEnd(tableId) : concat(orderedPrefix(tableId), escaped(to));
    return new ShardRef(tableId, number, Layout.KEY, null, start, end);
  }

  /** A {@code hashrange} shard holding the partition keys whose {@code hash} lies in {@code [first, last]}. */
  public static ShardRef ofHashRange(long tableId, long number, HashFunction hash, long first, long last) {
    byte[] start = withLong(orderedPrefix(tableId), first);
    byte[] end = last == hash.maxValue() ? orderedEnd(tableId) : withLong(orderedPrefix(tableId), last + 1);
    return new ShardRef(tableId, number, Layout.HASH, hash, start, end);
  }

  /**
   * Everything stored under {@code tableId} outside the shard-number prefixes (which the store
   * lists shard by shard): the ordered data of a table the map does not have.
   */
  public static ShardRef wholeTable(long tableId) {
    return new ShardRef(tableId, -1, Layout.TABLE, null, orderedPrefix(tableId), successor(withLong(new byte[0], tableId)));
  }

  /** A ref as {@link #encode} wrote it. */
  static ShardRef decode(long tableId, long number, Layout layout, String hashName, byte[] start, byte[] end) {
    return new ShardRef(tableId, number, layout, hashName.isEmpty() ? null : HashFunctions.byName(hashName), start, end);
  }

  public long tableId() {
    return tableId;
  }

  public long shardNumber() {
    return shardNumber;
  }

  public Layout layout() {
    return layout;
  }

  /** The hash function a {@link Layout#HASH} shard places by, or {@code null}. */
  HashFunction hash() {
    return hash;
  }

  /** The smallest stored key of the shard (a copy). */
  public byte[] start() {
    return start.clone();
  }

  /** The smallest stored key above the shard (a copy). */
  public byte[] end() {
    return end.clone();
  }

  byte[] startKey() {
    return start;
  }

  byte[] endKey() {
    return end;
  }

  /** True if this shard's span and {@code other}'s have a stored key in common. */
  public boolean overlaps(ShardRef other) {
    return Arrays.compareUnsigned(start, other.end) < 0 && Arrays.compareUnsigned(other.start, end) < 0;
  }

  /** True if {@code storeKey} lies in this shard's span. */
  public boolean contains(byte[] storeKey) {
    return Arrays.compareUnsigned(storeKey, start) >= 0 && Arrays.compareUnsigned(storeKey, end) < 0;
  }

  /** The key as the store keeps it: behind the table id and the placement. */
  public byte[] storeKey(byte[] key) {
    switch (layout) {
      case BUCKET:
        return concat(start, key);
      case KEY:
        return concat(orderedPrefix(tableId), key);
      case HASH:
        return concat(withLong(orderedPrefix(tableId), hash.hash(partitionKeyOf(key))), key);
      default:
        throw new IllegalStateException("shard " + this + " is a whole table's leftover: it has no keys of its own");
    }
  }

  /**
   * Where a partition key lies in this shard's order, as bytes that compare unsigned: the partition
   * key itself for a {@link Layout#KEY} shard (the stored encoding keeps its order), the 8 big-endian
   * bytes of its hash for a {@link Layout#HASH} shard; {@code null} for a bucket, which has no order.
   */
  public byte[] placementKey(byte[] partitionKey) {
    switch (layout) {
      case KEY:
        return partitionKey;
      case HASH:
        return withLong(new byte[0], hash.hash(partitionKey));
      default:
        return null;
    }
  }

  /** {@link #placementKey} of a stored key of this ordered shard, read from the stored key itself. */
  byte[] placementKeyOfStored(byte[] storeKey) {
    switch (layout) {
      case KEY:
        return partitionKeyOf(userKey(storeKey));
      case HASH:
        return Arrays.copyOfRange(storeKey, 9, prefixLength());
      default:
        throw new IllegalStateException("shard " + this + " has no order to place keys by");
    }
  }

  /** How many bytes precede the key in a stored key of this shard. */
  int prefixLength() {
    switch (layout) {
      case BUCKET:
        return BUCKET_PREFIX;
      case KEY:
        return 9;
      case HASH:
        return 17;
      default:
        return 8;
    }
  }

  /** The key of a stored key of this shard, without the table id and placement. */
  public byte[] userKey(byte[] storeKey) {
    return Arrays.copyOfRange(storeKey, prefixLength(), storeKey.length);
  }

  /**
   * Where the shard keeps the record of write id {@code requestId} sent with a write of {@code key}.
   * In a {@link Layout#BUCKET} shard: {@code 0x00 0x02 + id} at its start. In an ordered layout:
   * {@code escaped partition key, 0x00 0x02, id} beside the key's partition (above its keys, below
   * the next partition's), so the record stays with the key through every split and merge.
   */
  public byte[] recordKey(byte[] key, byte[] requestId) {
    byte[] local;
    if (layout == Layout.BUCKET) {
      local = concat(new byte[] {ESCAPE, RECORD}, requestId);
    } else {
      int end = terminatorAt(key, 0);
      if (end < 0) {
        throw new IllegalArgumentException("a write id needs an encoded key; this one has no partition-key terminator");
      }
      local = new byte[end + 2 + requestId.length];
      System.arraycopy(key, 0, local, 0, end);
      local[end] = ESCAPE;
      local[end + 1] = RECORD;
      System.arraycopy(requestId, 0, local, end + 2, requestId.length);
    }
    return layout == Layout.BUCKET ? concat(start, local) : storeKey(local);
  }

  /**
   * Where the shard keeps a transaction's intent on {@code key} (an encoded key): the key with the
   * tag 0x03 in place of its partition key's terminator, so the intent lies beside the key's
   * partition (above its keys, below the next partition's) and goes with it through every move,
   * split and merge, as a write id's record does. {@code null} if {@code key} is not an encoded user key.
   */
  public byte[] intentKey(byte[] key) {
    return retagged(key, INTENT);
  }

  /**
   * Where the shard keeps the record of transaction {@code txnId} anchored at {@code anchorKey} (an
   * encoded key): beside the anchor's partition, tag 0x05, then the id.
   */
  public byte[] txnRecordKey(byte[] anchorKey, byte[] txnId) {
    int end = terminatorAt(anchorKey, 0);
    if (end < 0) {
      throw new IllegalArgumentException("a transaction's anchor needs an encoded key; this one has no partition-key terminator");
    }
    byte[] local = new byte[end + 2 + txnId.length];
    System.arraycopy(anchorKey, 0, local, 0, end);
    local[end] = ESCAPE;
    local[end + 1] = TXN_RECORD;
    System.arraycopy(txnId, 0, local, end + 2, txnId.length);
    return storeKey(local);
  }

  /**
   * {@code key} with its terminator's second byte replaced by {@code tag}, as this shard stores it;
   * {@code null} for a key that is not an encoded key (none reaches a table: tests of the engine use
   * plain bytes), which no transaction can lock.
   */
  private byte[] retagged(byte[] key, byte tag) {
    int end = terminatorAt(key, 0);
    if (end < 0 || key[end + 1] != TERMINATOR) {
      return null;
    }
    byte[] local = key.clone();
    local[end + 1] = tag;
    return storeKey(local);
  }

  /**
   * Where the intents lie on the keys of {@code bound}'s partition below {@code bound}, as {@code
   * [from, to)} store keys: {@code bound} is an encoded key, or a bound with a partition key and a tag
   * (such as {@link Key#encodedPartitionEnd}, past all the partition's keys). {@code null} if {@code
   * bound} has no partition key (it lies between partitions, so no partition's keys are cut by it).
   */
  public byte[][] intentsBelow(byte[] bound) {
    int end = terminatorAt(bound, 0);
    if (end < 0) {
      return null;
    }
    byte[] first = Arrays.copyOf(bound, end + 2);
    first[end + 1] = INTENT;
    byte[] last;
    if (bound[end + 1] == TERMINATOR) {
      last = bound.clone();
      last[end + 1] = INTENT;
    } else {
      last = first.clone();
      last[end + 1] = bound[end + 1] > TERMINATOR ? INTENT + 1 : INTENT; // past every key, or below all of them
    }
    return new byte[][] {storeKey(first), storeKey(last)};
  }

  /** True if {@code storeKey} (of this shard) is a transaction's record. */
  public boolean isTxnRecord(byte[] storeKey) {
    return tagOf(storeKey, prefixLength()) == TXN_RECORD;
  }

  /**
   * The anchor a transaction record's store key ({@link #txnRecordKey}) lies beside, as an encoded
   * key of its partition key alone (which places the record as the whole anchor key does), and the
   * transaction's id: {@code [anchor, txnId]}.
   */
  public byte[][] ofTxnRecord(byte[] storeKey) {
    byte[] local = userKey(storeKey);
    int end = terminatorAt(local, 0);
    byte[] anchor = java.util.Arrays.copyOf(local, end + 2);
    anchor[end + 1] = TERMINATOR;
    return new byte[][] {anchor, java.util.Arrays.copyOfRange(local, end + 2, local.length)};
  }

  /**
   * Where the shard keeps the pending marker of the row at {@code key} (an encoded key): the key with
   * the tag 0x06 in place of its partition key's terminator, beside the row's partition as an intent
   * is, so it goes with the row through every move, split and merge. {@code null} if {@code key} is
   * not an encoded user key.
   */
  public byte[] pendingKey(byte[] key) {
    return retagged(key, PENDING);
  }

  /** True if {@code storeKey}, a stored key of a table whose keys follow {@code prefixLength} bytes, is a row's pending marker. */
  static boolean isPendingKey(byte[] storeKey, int prefixLength) {
    return storeKey.length > prefixLength && tagOf(storeKey, prefixLength) == PENDING;
  }

  /** The encoded key of the row a pending marker's store key ({@link #pendingKey}) stands for. */
  public byte[] keyOfPending(byte[] storeKey) {
    return keyOfIntent(storeKey);
  }

  /** True if {@code storeKey} (of this shard) is a transaction's intent. */
  public boolean isIntent(byte[] storeKey) {
    return tagOf(storeKey, prefixLength()) == INTENT;
  }

  /** The encoded key an intent's store key ({@link #intentKey}) stands for. */
  public byte[] keyOfIntent(byte[] storeKey) {
    byte[] local = userKey(storeKey);
    int end = terminatorAt(local, 0);
    local[end + 1] = TERMINATOR;
    return local;
  }

  /** Where the shard keeps its version floor: {@code 0x00 0x04} right at its start. */
  byte[] floorKey() {
    return concat(start, new byte[] {ESCAPE, FLOOR});
  }

  /**
   * True for a stored key the store keeps for itself (a write id's record, a version floor): the
   * byte after its escaped partition key is not the terminator 0x01. A key that is not an encoded
   * key at all counts as a user key.
   */
  public boolean isReserved(byte[] storeKey) {
    int tag = tagOf(storeKey, prefixLength());
    return tag >= 0 && tag != TERMINATOR;
  }

  /**
   * True if {@code storeKey}, a stored key of a table whose keys follow {@code prefixLength} bytes
   * ({@link #prefixLength}), is a user's row and not a key the store keeps for itself.
   */
  static boolean isRowKey(byte[] storeKey, int prefixLength) {
    return storeKey.length > prefixLength && tagOf(storeKey, prefixLength) == TERMINATOR;
  }

  /** True if {@code storeKey} (of this shard) is a write id's record. */
  public boolean isRecord(byte[] storeKey) {
    return tagOf(storeKey, prefixLength()) == RECORD;
  }

  /**
   * {@code storeKey}, a stored key of shard {@code from} (a trashed copy, or data of format 1), as
   * this shard stores it; {@code null} for a write id's record of a bucket layout, which names no
   * key to place it beside. A version floor becomes this shard's floor.
   */
  public byte[] rekey(ShardRef from, byte[] storeKey) {
    if (from.equals(this)) {
      return storeKey;
    }
    byte[] user = from.userKey(storeKey);
    int tag = tagOf(user, 0);
    if (tag == FLOOR) {
      return floorKey();
    }
    if (tag == RECORD && from.layout == Layout.BUCKET) {
      return null;
    }
    return storeKey(user);
  }

  /** The byte after the escaped partition key that starts at {@code from} (0x01 for a user key), or -1 if it has none. */
  private static int tagOf(byte[] bytes, int from) {
    int at = terminatorAt(bytes, from);
    return at < 0 ? -1 : bytes[at + 1];
  }

  /** The partition key of an encoded key (or of a bound that ends with 0x00 and any byte but 0xFF). */
  static byte[] partitionKeyOf(byte[] encoded) {
    byte[] out = new byte[encoded.length];
    int n = 0;
    for (int i = 0; i < encoded.length; i++) {
      byte b = encoded[i];
      if (b != ESCAPE) {
        out[n++] = b;
      } else if (i + 1 < encoded.length && encoded[i + 1] == ESCAPED_ZERO) {
        out[n++] = ESCAPE;
        i++;
      } else if (i + 1 < encoded.length) {
        return Arrays.copyOf(out, n);
      } else {
        break;
      }
    }
    throw new IllegalArgumentException("not an encoded key: no partition-key terminator");
  }

  /** Where the escaped partition key starting at {@code from} ends (the 0x00 of its terminator), or -1. */
  private static int terminatorAt(byte[] encoded, int from) {
    for (int i = from; i + 1 < encoded.length; i++) {
      if (encoded[i] == ESCAPE) {
        if (encoded[i + 1] != ESCAPED_ZERO) {
          return i;
        }
        i++;
      }
    }
    return -1;
  }

  private static byte[] escaped(byte[] partitionKey) {
    return partitionKey.length == 0 ? new byte[0] : Key.encodedLowerBound(partitionKey);
  }

  private static byte[] bucketPrefix(long tableId, long number) {
    return withLong(withLong(new byte[0], tableId), number);
  }

  private static byte[] orderedPrefix(long tableId) {
    byte[] out = withLong(new byte[0], tableId);
    out = Arrays.copyOf(out, 9);
    out[8] = ORDERED;
    return out;
  }

  private static byte[] orderedEnd(long tableId) {
    byte[] out = orderedPrefix(tableId);
    out[8] = ORDERED + 1;
    return out;
  }

  private static byte[] withLong(byte[] prefix, long value) {
    byte[] out = Arrays.copyOf(prefix, prefix.length + 8);
    for (int i = 7; i >= 0; i--) {
      out[prefix.length + i] = (byte) value;
      value >>>= 8;
    }
    return out;
  }

  /** The smallest key above every key that starts with {@code prefix}. */
  private static byte[] successor(byte[] prefix) {
    byte[] out = prefix.clone();
    for (int i = out.length - 1; i >= 0; i--) {
      if (++out[i] != 0) {
        return Arrays.copyOf(out, i + 1);
      }
    }
    throw new IllegalStateException("no key above " + Arrays.toString(prefix));
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** The bucket-layout shard a stored key of format 1 belongs to. */
  static ShardRef ofBucketKey(byte[] storeKey) {
    if (storeKey.length < BUCKET_PREFIX) {
      throw new IllegalArgumentException("a stored key has at least " + BUCKET_PREFIX + " bytes");
    }
    long table = 0;
    long number = 0;
    for (int i = 0; i < 8; i++) {
      table = (table << 8) | (storeKey[i] & 0xff);
      number = (number << 8) | (storeKey[8 + i] & 0xff);
    }
    return new ShardRef(table, number);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ShardRef && ((ShardRef) o).tableId == tableId && ((ShardRef) o).shardNumber == shardNumber
        && ((ShardRef) o).layout == layout;
  }

  @Override
  public int hashCode() {
    // Arithmetic, not Objects.hash (which boxes and allocates: this keys every replica lookup of a
    // replicated write); the layout by ordinal, as an enum's own hash differs from run to run.
    return (31 * Long.hashCode(tableId) + Long.hashCode(shardNumber)) * 31 + layout.ordinal();
  }

  @Override
  public String toString() {
    return tableId + "/" + (shardNumber < 0 ? "*" : Long.toString(shardNumber));
  }
}
