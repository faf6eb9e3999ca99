package io.shardwise.core.key;

import io.shardwise.core.key.Counters.CounterException;
import io.shardwise.core.key.Counters.Refusal;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Lists that take appends, as stored values, and the operations on them: the other kind of value
 * that merges, beside {@link Counters}, so a write-hot list is salted by the same protocol (salt,
 * seal each sub-key, fold each sealed sub-key into the key once). Every operation is a pure
 * function of the key's current value ({@code null}: absent) and its arguments, so an owner applies
 * it atomically with the key's version and write id, and a replicated shard's leader ships only
 * the result.
 *
 * <p><b>The order reads reproduce.</b> Each element is stamped by the owner that appends it: a
 * timestamp in microseconds ({@code max(now, the list's last stamp + 1)}, so one list's stamps only
 * grow) and its origin (the sub-key's index, or {@link #KEY} for the key itself). A list is kept in
 * stamp order; a salted list's elements are its own and its unfolded sub-keys', merged by stamp, and
 * at equal stamps the key's own before sub-key 0's before sub-key 1's. A fold merges a sealed
 * sub-key into the key by the same rule, so folding never changes the order a reader sees: two
 * reads agree on the order of every element both return, and an element appended after another to
 * the same list comes after it. Between sub-keys the order is the owners' clocks' order (nodes with
 * synchronised clocks: the order the appends were made, within the skew).
 *
 * <p>Three shapes of value, each starting with its own marker: a list; a salted list (generation,
 * fanout, folded set, and its own elements); a sealed sub-key (its final elements).
 */
public final class Lists {

  private Lists() {}

  /** The origin of an element appended to the key itself rather than to one of its sub-keys. */
  public static final int KEY = 0xFFFF;

  private static final byte[] LIST = {0x00, (byte) 0xFF, 'S', 'W', 'l', 'i'};
  private static final byte[] SALTED = {0x00, (byte) 0xFF, 'S', 'W', 'l', 's'};
  private static final byte[] SEALED = {0x00, (byte) 0xFF, 'S', 'W', 'l', 'z'};
  private static final int MARKER = LIST.length;
  private static final int SALTED_HEADER = MARKER + 4 + 2 + 8;
  /** Bytes an element costs besides its value: stamp, origin, length. */
  public static final int ELEMENT_OVERHEAD = 8 + 2 + 4;

  /** One element: its value and the stamp that orders it. */
  public record Element(long micros, int origin, byte[] value) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Element e && e.micros == micros && e.origin == origin && Arrays.equals(e.value, value);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(micros) * 31 + origin * 17 + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
      return "Element[" + micros + "/" + origin + ", " + value.length + " bytes]";
    }
  }

  /** The order of elements: by stamp, then origin. Sorts of lists are stable, so ties keep their sources' order. */
  public static final Comparator<Element> ORDER = Comparator.comparingLong(Element::micros).thenComparingInt(Element::origin);

  /** A key's value read as a list. */
  public sealed interface Value permits Plain, Salted, Sealed {}

  /** A list. */
  public record Plain(List<Element> elements) implements Value {}

  /** A salted list: its own elements; sub-key {@code i} of {@code generation} is folded in if bit {@code i} of {@code folded} is set. */
  public record Salted(int generation, int fanout, long folded, List<Element> elements) implements Value {
    public boolean isFolded(int index) {
      return (folded & (1L << index)) != 0;
    }

    boolean allFolded() {
      return folded == (fanout == 64 ? -1L : (1L << fanout) - 1);
    }
  }

  /** A sealed sub-key and its final elements. */
  public record Sealed(List<Element> elements) implements Value {}

  /** Whether a stored value is one of the three shapes of a list (a caller tells lists from counters by it). */
  public static boolean isList(byte[] value) {
    return value != null && value.length >= MARKER
        && (startsWith(value, LIST) || startsWith(value, SALTED) || startsWith(value, SEALED));
  }

  /**
   * Reads a stored value as a list (absent: empty).
   *
   * @throws CounterException ({@link Refusal#NOT_A_LIST}) if it is none of the three shapes
   */
  public static Value decode(byte[] value) {
    if (value == null) {
      return new Plain(List.of());
    }
    if (!isList(value)) {
      throw new CounterException(Refusal.NOT_A_LIST, "the key holds a value of " + value.length + " bytes that is not a list");
    }
    ByteBuffer b = ByteBuffer.wrap(value);
    b.position(MARKER);
    if (startsWith(value, LIST)) {
      return new Plain(elements(b));
    }
    if (startsWith(value, SEALED)) {
      return new Sealed(elements(b));
    }
    int generation = b.getInt();
    int fanout = b.getShort() & 0xFFFF;
    long folded = b.getLong();
    return new Salted(generation, fanout, folded, elements(b));
  }

  public static byte[] encode(Value v) {
    List<Element> elements = v instanceof Plain p ? p.elements() : v instanceof Salted s ? s.elements() : ((Sealed) v).elements();
    int size = (v instanceof Salted ? SALTED_HEADER : MARKER) + bytes(elements);
    ByteBuffer b = ByteBuffer.allocate(size);
    if (v instanceof Salted s) {
      b.put(SALTED).putInt(s.generation()).putShort((short) s.fanout()).putLong(s.folded());
    } else {
      b.put(v instanceof Plain ? LIST : SEALED);
    }
    for (Element e : elements) {
      b.putLong(e.micros()).putShort((short) e.origin()).putInt(e.value().length).put(e.value());
    }
    return b.array();
  }

  /**
   * The value after appending {@code element}, stamped {@code nowMicros} (or just after the list's
   * last stamp) with origin {@code origin}: to a list, to a salted list's own elements, or to an
   * unsealed sub-key.
   *
   * @throws CounterException {@link Refusal#SEALED} for a sealed sub-key, {@link Refusal#TOO_LARGE}
   *     if the value would pass {@code maxBytes}, {@link Refusal#NOT_A_LIST} for any other value
   */
  public static byte[] append(byte[] current, byte[] element, long nowMicros, int origin, int maxBytes) {
    byte[] base = current == null ? LIST : current;
    if (!isList(base)) {
      throw new CounterException(Refusal.NOT_A_LIST, "the key holds a value of " + base.length + " bytes that is not a list");
    }
    if (startsWith(base, SEALED)) {
      throw new CounterException(Refusal.SEALED, "this sub-key is sealed: its key is being demoted");
    }
    long last = lastStamp(base, startsWith(base, SALTED) ? SALTED_HEADER : MARKER);
    long stamp = last == Long.MIN_VALUE ? nowMicros : Math.max(nowMicros, last + 1);
    long size = (long) base.length + ELEMENT_OVERHEAD + element.length;
    if (size > maxBytes) {
      throw new CounterException(Refusal.TOO_LARGE, "the list would be " + size + " bytes, past the value limit of " + maxBytes
          + " bytes; nothing was appended");
    }
    // The elements stay as they are: the new one goes after them, in stamp order by construction.
    return ByteBuffer.allocate((int) size).put(base).putLong(stamp).putShort((short) origin).putInt(element.length).put(element).array();
  }

  /** The stamp of the last element of a list stored in {@code value} from {@code at} (MIN_VALUE: none), checking each element's frame. */
  private static long lastStamp(byte[] value, int at) {
    long last = Long.MIN_VALUE;
    ByteBuffer b = ByteBuffer.wrap(value);
    int position = at;
    while (position < value.length) {
      if (value.length - position < ELEMENT_OVERHEAD) {
        throw new CounterException(Refusal.NOT_A_LIST, "the list's last element is cut short");
      }
      last = b.getLong(position);
      int length = b.getInt(position + 10);
      if (length < 0 || length > value.length - position - ELEMENT_OVERHEAD) {
        throw new CounterException(Refusal.NOT_A_LIST, "an element of the list claims " + length + " bytes, past the value's end");
      }
      position += ELEMENT_OVERHEAD + length;
    }
    return last;
  }

  /** The key salted into {@code fanout} sub-keys of {@code generation}, its elements so far its own; the same if it is already. */
  public static byte[] salt(byte[] current, int generation, int fanout) {
    Counters.checkFanout(fanout);
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(new Salted(generation, fanout, 0, p.elements()));
    }
    if (v instanceof Salted s) {
      if (s.generation() == generation && s.fanout() == fanout) {
        return current;
      }
      throw new CounterException(Refusal.NOT_A_LIST, "the list is salted already, at generation " + s.generation());
    }
    throw new CounterException(Refusal.NOT_A_LIST, "the key is a sealed sub-key");
  }

  /** The sub-key sealed with its elements (none if absent); the same if it is already. */
  public static byte[] seal(byte[] current) {
    Value v = decode(current);
    if (v instanceof Plain p) {
      return encode(new Sealed(p.elements()));
    }
    if (v instanceof Sealed) {
      return current;
    }
    throw new CounterException(Refusal.NOT_A_LIST, "a salted list is not a sub-key");
  }

  /** A sealed sub-key's elements, as a fold carries them. */
  public static List<Element> sealedElements(byte[] stored) {
    if (!(decode(stored) instanceof Sealed s)) {
      throw new CounterException(Refusal.NOT_A_LIST, "the sub-key is not sealed");
    }
    return s.elements();
  }

  /**
   * The salted list with sealed sub-key {@code index}'s elements merged into its own, once: a
   * sub-key folded already changes nothing. Once every sub-key is folded the key is a list again.
   * A fold is never refused for size: the key then holds what its sub-keys held (up to fanout + 1
   * times the value limit) and takes appends again once it is under the limit.
   */
  public static byte[] fold(byte[] current, int generation, int index, List<Element> sealed) {
    Value v = decode(current);
    if (v instanceof Plain) {
      return current; // every sub-key folded already
    }
    if (!(v instanceof Salted s)) {
      throw new CounterException(Refusal.NOT_A_LIST, "the key is a sealed sub-key");
    }
    if (s.generation() != generation) {
      throw new CounterException(Refusal.NOT_A_LIST, "the list is salted at generation " + s.generation() + ", not " + generation);
    }
    if (index < 0 || index >= s.fanout()) {
      throw new CounterException(Refusal.NOT_A_LIST, "sub-key " + index + " is not one of the list's " + s.fanout());
    }
    if (s.isFolded(index)) {
      return current;
    }
    Salted folded = new Salted(s.generation(), s.fanout(), s.folded() | (1L << index), merge(List.of(s.elements(), sealed)));
    return encode(folded.allFolded() ? new Plain(folded.elements()) : folded);
  }

  /**
   * A salted list's elements in order: its own, and those of each unfolded sub-key ({@code
   * subKeys[i]}: sub-key i's stored value, null if absent).
   */
  public static List<Element> merged(Salted key, byte[][] subKeys) {
    List<List<Element>> sources = new ArrayList<>();
    sources.add(key.elements());
    for (int i = 0; i < key.fanout(); i++) {
      if (!key.isFolded(i) && subKeys[i] != null) {
        Value v = decode(subKeys[i]);
        if (v instanceof Salted) {
          throw new CounterException(Refusal.NOT_A_LIST, "sub-key " + i + " holds a salted list");
        }
        sources.add(v instanceof Plain p ? p.elements() : ((Sealed) v).elements());
      }
    }
    return merge(sources);
  }

  /** Sorted lists merged by {@link #ORDER}; at equal stamps, an earlier source's element first. */
  static List<Element> merge(List<List<Element>> sources) {
    List<Element> all = new ArrayList<>();
    sources.forEach(all::addAll);
    all.sort(ORDER); // stable: ties keep the sources' order
    return all;
  }

  /** The values of {@code elements}, in order. */
  public static List<byte[]> values(List<Element> elements) {
    List<byte[]> out = new ArrayList<>(elements.size());
    elements.forEach(e -> out.add(e.value()));
    return out;
  }

  private static List<Element> elements(ByteBuffer b) {
    List<Element> out = new ArrayList<>();
    while (b.hasRemaining()) {
      if (b.remaining() < ELEMENT_OVERHEAD) {
        throw new CounterException(Refusal.NOT_A_LIST, "the list's last element is cut short");
      }
      long micros = b.getLong();
      int origin = b.getShort() & 0xFFFF;
      int length = b.getInt();
      if (length < 0 || length > b.remaining()) {
        throw new CounterException(Refusal.NOT_A_LIST, "an element of the list claims " + length + " bytes, past the value's end");
      }
      byte[] value = new byte[length];
      b.get(value);
      out.add(new Element(micros, origin, value));
    }
    return out;
  }

  private static int bytes(List<Element> elements) {
    long n = 0;
    for (Element e : elements) {
      n += ELEMENT_OVERHEAD + e.value().length;
    }
    if (n > Integer.MAX_VALUE - SALTED_HEADER) {
      throw new CounterException(Refusal.TOO_LARGE, "the list would pass 2 GiB");
    }
    return (int) n;
  }

  private static boolean startsWith(byte[] value, byte[] prefix) {
    return Arrays.equals(value, 0, prefix.length, prefix, 0, prefix.length);
  }
}
