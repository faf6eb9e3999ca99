package io.shardwise.core.key;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Counters and salted counters, as stored values, and the operations on them. Every operation is
 * a pure function of the key's current value ({@code null}: absent) to its next one, so an owner
 * applies it atomically with the key's version and write id, and a replicated shard's leader ships
 * only the result.
 *
 * <p>Three shapes of value:
 * <ul>
 *   <li><b>a counter</b>: 8 bytes, a signed big-endian integer (an absent key counts 0);
 *   <li><b>a salted key</b>: the key of a hot counter split into {@code fanout} sub-keys of a
 *       {@code generation}: its own total (increments that still reach it, and folded sub-keys) and
 *       which sub-keys are folded in. Its value is the total plus every unfolded sub-key;
 *   <li><b>a sealed sub-key</b>: a sub-key of a salted key being demoted, with its final value; it
 *       takes no more increments.
 * </ul>
 * A salted key's sub-keys are keys of the same table: the partition key followed by {@link
 * #MARKER}, the generation and the index ({@link #subKey}), so that they hash to other shards. The
 * data API refuses partition keys that end like a sub-key's ({@link #isSubKey}).
 */
public final class Counters {

  private Counters() {}

  /** The most sub-keys a key is salted into. */
  public static final int MAX_FANOUT = 64;

  /** What follows a salted key's partition key in its sub-keys' (then 4 bytes of generation, 2 of index). */
  private static final byte[] MARKER = {0x00, (byte) 0xFF, 's', 'a', 'l', 't'};

  private static final int SUFFIX = MARKER.length + 6;

  private static final byte[] SALTED = {0x00, (byte) 0xFF, 'S', 'W', 's', 'k'};
  private static final byte[] SEALED = {0x00, (byte) 0xFF, 'S', 'W', 's', 's'};
  private static final int SALTED_LENGTH = SALTED.length + 4 + 2 + 8 + 8;
  private static final int SEALED_LENGTH = SEALED.length + 8;

  /** Why a counter operation is refused. */
  public enum Refusal {
    /** The key holds something other than the operation needs (not a counter, another generation). */
    NOT_A_COUNTER,
    /** A sealed sub-key takes no increments or appends: its key is being demoted; write to the key itself. */
    SEALED,
    /** The key holds something other than a list ({@link Lists}), or a list of another generation. */
    NOT_A_LIST,
    /** The value would pass the value limit; nothing is written. */
    TOO_LARGE
  }

  /** A counter or list operation that cannot apply to the key's value; nothing is written. */
  public static final class CounterException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Refusal refusal;

    public CounterException(Refusal refusal, String message) {
      super(message);
      this.refusal = refusal;
    }

    public Refusal refusal() {
      return refusal;
    }
  }

  /** A key's value read as a counter. */
  public sealed interface Value permits Plain, Salted, Sealed {}

  /** A counter. */
  public record Plain(long value) implements Value {}

  /** A salted key: its own {@code total}; sub-key {@code i} of {@code generation} is folded in if bit {@code i} of {@code folded} is set. */
  public record Salted(int generation, int fanout, long folded, long total) implements Value {
    public boolean isFolded(int index) {
      return (folded & (1L << index)) != 0;
    }

    boolean allFolded() {
      return folded == (fanout == 64 ? -1L : (1L << fanout) - 1);
    }
  }

  /** A sealed sub-key and its final value. */
  public record Sealed(long value) implements Value {}

  /**
   * Reads a stored value as a counter.
   *
   * @throws CounterException ({@link Refusal#NOT_A_COUNTER}) if it is none of the three shapes
   */
  public static Value decode(byte[] value) {
    if (value == null) {
      return new Plain(0);
    }
    if (value.length == 8) {
      return new Plain(ByteBuffer.wrap(value).getLong());
    }
    if (value.length == SALTED_LENGTH && startsWith(value, SALTED)) {
      ByteBuffer b = ByteBuffer.wrap(value, SALTED.length, SALTED_LENGTH - SALTED.length);
      return new Salted(b.getInt(), b.getShort() & 0xFFFF, b.getLong(), b.getLong());
    }
    if (value.length == SEALED_LENGTH && startsWith(value, SEALED)) {
      return new Sealed(ByteBuffer.wrap(value, SEALED.length, 8).getLong());
    }
    throw new CounterException(Refusal.NOT_A_COUNTER, "the key holds a value of " + value.length + " bytes, not a counter (8 bytes)");
  }

  public static byte[] encode(Value v) {
    if (v instanceof Plain p) {
      return ByteBuffer.allocate(8).putLong(p.value()).array();
    }
    if (v instanceof Salted s) {
      return ByteBuffer.allocate(SALTED_LENGTH).put(SALTED).putInt(s.generation()).putShort((short) s.fanout())
          .putLong(s.folded()).putLong(s.total()).array();
    }
    return ByteBuffer.allocate(SEALED_LENGTH).put(SEALED).putLong(((Sealed) v).value()).array();
  }

  /** The value after adding {@code delta}: to a counter, or to a salted key's own total. */
  public static byte[] increment(byte[] current, long delta) {
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(new Plain(add(p.value(), delta)));
    }
    if (v instanceof Salted s) {
      return encode(new Salted(s.generation(), s.fanout(), s.folded(), add(s.total(), delta)));
    }
    throw new CounterException(Refusal.SEALED, "this sub-key is sealed: its key is being demoted");
  }

  /** The key salted into {@code fanout} sub-keys of {@code generation}, its value so far its total; the same if it is already. */
  public static byte[] salt(byte[] current, int generation, int fanout) {
    checkFanout(fanout);
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(new Salted(generation, fanout, 0, p.value()));
    }
    if (v instanceof Salted s) {
      if (s.generation() == generation && s.fanout() == fanout) {
        return encode(s);
      }
      throw new CounterException(Refusal.NOT_A_COUNTER, "the key is salted already, at generation " + s.generation());
    }
    throw new CounterException(Refusal.NOT_A_COUNTER, "the key is a sealed sub-key");
  }

  /** The sub-key sealed at its value (0 if absent); the same if it is already. */
  public static byte[] seal(byte[] current) {
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(new Sealed(p.value()));
    }
    if (v instanceof Sealed s) {
      return encode(s);
    }
    throw new CounterException(Refusal.NOT_A_COUNTER, "a salted key is not a sub-key");
  }

  /**
   * The salted key with sealed sub-key {@code index}'s final {@code value} added to its total, once:
   * a sub-key folded already changes nothing. Once every sub-key is folded the key is a counter
   * again (and a fold of it is still nothing).
   */
  public static byte[] fold(byte[] current, int generation, int index, long value) {
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(p); // every sub-key folded already
    }
    if (!(v instanceof Salted s)) {
      throw new CounterException(Refusal.NOT_A_COUNTER, "the key is a sealed sub-key");
    }
    if (s.generation() != generation) {
      throw new CounterException(Refusal.NOT_A_COUNTER, "the key is salted at generation " + s.generation() + ", not " + generation);
    }
    if (index < 0 || index >= s.fanout()) {
      throw new CounterException(Refusal.NOT_A_COUNTER, "sub-key " + index + " is not one of the key's " + s.fanout());
    }
    if (s.isFolded(index)) {
      return encode(s);
    }
    Salted folded = new Salted(s.generation(), s.fanout(), s.folded() | (1L << index), add(s.total(), value));
    return encode(folded.allFolded() ? new Plain(folded.total()) : folded);
  }

  /** Sub-key {@code index} of {@code key} salted at {@code generation}: same sort key, the partition key with the suffix. */
  public static Key subKey(Key key, int generation, int index) {
    byte[] pk = key.partitionKey();
    byte[] sub = ByteBuffer.allocate(pk.length + SUFFIX).put(pk).put(MARKER).putInt(generation).putShort((short) index).array();
    return Key.of(sub, key.sortKey());
  }

  /** The index of a sub-key ({@link #isSubKey} must hold). */
  public static int subKeyIndex(byte[] partitionKey) {
    return ByteBuffer.wrap(partitionKey, partitionKey.length - 2, 2).getShort() & 0xFFFF;
  }

  /** Whether {@code partitionKey} is a sub-key's (ends with the marker, a generation and an index). */
  public static boolean isSubKey(byte[] partitionKey) {
    int at = partitionKey.length - SUFFIX;
    return at >= 0 && Arrays.equals(partitionKey, at, at + MARKER.length, MARKER, 0, MARKER.length);
  }

  /** The sum of a salted key's total and its unfolded sub-keys' values ({@code subKeys[i]}: sub-key i's value, null if absent). */
  public static long merged(Salted key, byte[][] subKeys) {
    long sum = key.total();
    for (int i = 0; i < key.fanout(); i++) {
      if (!key.isFolded(i) && subKeys[i] != null) {
        Value v = decode(subKeys[i]);
        if (v instanceof Salted) {
          throw new CounterException(Refusal.NOT_A_COUNTER, "sub-key " + i + " holds a salted key");
        }
        sum = add(sum, v instanceof Plain p ? p.value() : ((Sealed) v).value());
      }
    }
    return sum;
  }

  public static void checkFanout(int fanout) {
    if (fanout < 2 || fanout > MAX_FANOUT) {
      throw new IllegalArgumentException("a key is salted into 2 to " + MAX_FANOUT + " sub-keys, not " + fanout);
    }
  }

  private static long add(long a, long b) {
    try {
      return Math.addExact(a, b);
    } catch (ArithmeticException e) {
      throw new CounterException(Refusal.NOT_A_COUNTER, "the counter would overflow a signed 64-bit integer");
    }
  }

  private static boolean startsWith(byte[] value, byte[] prefix) {
    return Arrays.equals(value, 0, prefix.length, prefix, 0, prefix.length);
  }
}
