package io.shardwise.core.map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * Splits, merges and moves against a model: any sequence of them keeps exact coverage of the key
 * space (every key in exactly the shard the model says), one owner per shard, shard numbers never
 * reused, and epochs raised exactly on the shards a change touches. Refused changes (a split point
 * outside its shard, a merge of two owners' shards) change nothing.
 */
class SplitMergePropertyTest {

  private static final List<NodeId> NODES = List.of(NodeId.of("n1"), NodeId.of("n2"), NodeId.of("n3"));

  /** The model: shard starts in order (partition keys, or hashes as unsigned longs) to numbers, and owners. */
  private static final class Model<B> {
    final TreeMap<B, Long> starts;
    final Map<Long, NodeId> owners = new java.util.HashMap<>();
    final Set<Long> everIssued = new HashSet<>();

    Model(java.util.Comparator<B> order) {
      starts = new TreeMap<>(order);
    }

    /** The model of table {@code t} as created, the shard at position i starting at {@code start.apply(i)}. */
    static <B> Model<B> of(Table t, java.util.Comparator<B> order, java.util.function.IntFunction<B> start) {
      Model<B> model = new Model<>(order);
      for (int i = 0; i < t.shards().size(); i++) {
        long number = t.shards().get(i).id().number();
        model.starts.put(start.apply(i), number);
        model.owners.put(number, t.shards().get(i).owner());
        model.everIssued.add(number);
      }
      return model;
    }

    List<Long> numbersInOrder() {
      return new ArrayList<>(starts.values());
    }
  }

  @Property(tries = 300)
  void rangeTablesStayExactThroughAnySequence(@ForAll long seed, @ForAll @IntRange(min = 1, max = 60) int steps) {
    Random random = new Random(seed);
    ShardMap map = create(Strategy.RANGE, 1 + random.nextInt(3), random);
    Table t = map.table("t").orElseThrow();
    List<byte[]> points = t.layout().splitPoints();
    Model<byte[]> model = Model.of(t, Arrays::compareUnsigned, i -> i == 0 ? new byte[0] : points.get(i - 1));
    for (int step = 0; step < steps; step++) {
      ShardMap before = map;
      map = step(map, model, random, true);
      checkEpochs(before, map);
      check(map, model, random, true);
    }
  }

  @Property(tries = 300)
  void hashRangeTablesStayExactThroughAnySequence(@ForAll long seed, @ForAll @IntRange(min = 1, max = 60) int steps) {
    Random random = new Random(seed);
    ShardMap map = create(Strategy.HASHRANGE, 1 + random.nextInt(4), random);
    Table t = map.table("t").orElseThrow();
    long[] starts = t.layout().hashValues();
    Model<Long> model = Model.of(t, Long::compareUnsigned, i -> starts[i]);
    for (int step = 0; step < steps; step++) {
      ShardMap before = map;
      map = step(map, model, random, false);
      checkEpochs(before, map);
      check(map, model, random, false);
    }
  }

  @Test
  void hashCutPointsCutAShardIntoEqualRangesAndFewerWhenItHoldsFewerHashes() {
    var hash = HashFunctions.murmur3_128();
    ShardLayout whole = ShardLayout.of(Strategy.HASHRANGE, hash, 1, List.of(), new long[] {0});
    assertThat(whole.hashCutPoints(0, 4)).containsExactly(1L << 62, 1L << 63, 3L << 62); // the full 64-bit space in quarters
    ShardLayout small = ShardLayout.of(Strategy.HASHRANGE, hash, 4, List.of(), new long[] {0, 1, 3, -2});
    assertThat(small.hashCutPoints(0, 4)).as("[0, 0] holds one hash").isEmpty();
    assertThat(small.hashCutPoints(1, 4)).as("[1, 2]: two hashes, at most one cut").containsExactly(2L);
    assertThat(small.hashCutPoints(3, 2)).as("[max - 1, max] in two").containsExactly(-1L);
  }

  @Test
  void theHashMidpointOfAShardLiesAboveItsFirstHashAndAtMostItsLast() {
    var hash = HashFunctions.murmur3_128();
    ShardLayout layout = ShardLayout.of(Strategy.HASHRANGE, hash, 4, List.of(), new long[] {0, 1, 3, -2});
    assertThat(layout.hashMidpoint(0)).as("[0, 0] holds one hash").isEmpty();
    assertThat(layout.hashMidpoint(1)).as("[1, 2]").hasValue(2);
    assertThat(layout.hashMidpoint(3)).as("[max - 1, max]").hasValue(-1L);
    long mid = layout.hashMidpoint(2).getAsLong();
    assertThat(Long.compareUnsigned(mid, 3)).isPositive();
    assertThat(Long.compareUnsigned(mid, -3L)).isLessThanOrEqualTo(0);
    assertThat(layout.splitAtHash(1, 2).hashValues()).containsExactly(0, 1, 2, 3, -2);
  }

  @Test
  void otherStrategiesRefuseToSplitOrMerge() {
    for (Strategy s : new Strategy[] {Strategy.MOD, Strategy.JUMP, Strategy.RENDEZVOUS, Strategy.SLOTS, Strategy.RING, Strategy.TOKENS}) {
      ShardMap map = s == Strategy.RING || s == Strategy.TOKENS ? wholeArcs(s) : create(s, 2, new Random(1));
      Table t = map.table("t").orElseThrow();
      ShardId first = t.shards().get(0).id();
      assertThatThrownBy(() -> map.apply(ShardMapDelta.on(map).splitShard(ShardMapDelta.SplitShard.atHash(first, 12345)).build()))
          .as(s.id()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(ShardLayout.SPLITTABLE);
      assertThatThrownBy(() -> map.apply(ShardMapDelta.on(map).mergeShards(first, t.shards().get(1).id()).build()))
          .as(s.id()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(ShardLayout.SPLITTABLE);
    }
  }

  /** A ring of whole arcs, as tables were stored before rings were hash ranges. */
  private static ShardMap wholeArcs(Strategy strategy) {
    PartitionerSpec spec = PartitionerSpec.builder(strategy).hash(HashFunctions.murmur3_128()).build();
    ShardLayout layout = ShardLayout.of(strategy, spec.hash(), 3, List.of(), new long[] {10, 1L << 40, 1L << 62});
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", spec, layout, NODES).build());
  }

  /**
   * A ring of hash ranges splits, merges and moves exactly as a hashrange table does, and a node
   * that joins cuts the ranges its points fall in without changing any key's owner: the ranges it
   * cuts become new shards of the same owner, every other shard keeps its number and epoch, and
   * each of its points ends a range.
   */
  @Property(tries = 200)
  void ringTablesOfRangesStayExactThroughAnySequenceWithJoins(@ForAll long seed, @ForAll @IntRange(min = 1, max = 40) int steps) {
    Random random = new Random(seed);
    Strategy strategy = random.nextBoolean() ? Strategy.RING : Strategy.TOKENS;
    ShardMap map = create(strategy, 0, random);
    Table t = map.table("t").orElseThrow();
    long[] starts = t.layout().hashValues();
    Model<Long> model = Model.of(t, Long::compareUnsigned, i -> starts[i]);
    int joined = 0;
    for (int step = 0; step < steps; step++) {
      ShardMap before = map;
      if (random.nextInt(4) == 0 && joined < 3) {
        NodeId node = NodeId.of("j" + joined++);
        map = map.apply(ShardMapDelta.on(map).joinRing("t", node).build());
        Table was = before.table("t").orElseThrow();
        Table now = map.table("t").orElseThrow();
        // A replicated ring joins the same way in two steps: splits at the join's cuts, then a join
        // that cuts nothing (RingJoins). Both end at the same ranges.
        ShardMap presplit = before;
        for (long at : io.shardwise.core.partition.RingRanges.joinCuts(was.spec(), was.layout())) {
          Table p = presplit.table("t").orElseThrow();
          presplit = presplit.apply(ShardMapDelta.on(presplit).splitShard(ShardMapDelta.SplitShard.atHash(
              p.shards().get(p.layout().shardForHash(at)).id(), at)).build());
        }
        Table cut = presplit.table("t").orElseThrow();
        assertThat(io.shardwise.core.partition.RingRanges.joinCuts(cut.spec(), cut.layout())).as("cuts left after the splits").isEmpty();
        Table joinedAfterCuts = presplit.apply(ShardMapDelta.on(presplit).joinRing("t", node).build()).table("t").orElseThrow();
        assertThat(joinedAfterCuts.layout().hashValues()).as("ranges: split then joined, or joined at once").isEqualTo(now.layout().hashValues());
        assertThat(joinedAfterCuts.shards()).as("a join after its cuts changes no shard").isEqualTo(cut.shards());
        assertThat(now.layout().ringMembers()).endsWith(node.value()).hasSize(was.layout().ringMembers().size() + 1);
        for (int i = 0; i < 200; i++) {
          long h = random.nextLong();
          assertThat(now.shards().get(now.layout().shardForHash(h)).owner()).as("a join changes no key's owner")
              .isEqualTo(was.shards().get(was.layout().shardForHash(h)).owner());
        }
        List<Long> nowStarts = new ArrayList<>();
        for (long v : now.layout().hashValues()) {
          nowStarts.add(v);
        }
        long max = now.spec().hash().maxValue();
        for (long p : io.shardwise.core.partition.RingRanges.pointsOf(now.spec(), now.layout().ringMembers().size() - 1)) {
          assertThat(p == max || nowStarts.contains(p + 1)).as("point %s ends a range", Long.toUnsignedString(p)).isTrue();
        }
        checkEpochs(before, map);
        Model<Long> next = Model.of(now, Long::compareUnsigned, i -> nowStarts.get(i));
        for (ShardAssignment s : now.shards()) {
          if (was.shard(s.id().number()).isEmpty()) {
            assertThat(model.everIssued.add(s.id().number())).as("a join issues numbers never used before").isTrue();
          }
        }
        next.everIssued.addAll(model.everIssued);
        model = next;
      } else {
        map = step(map, model, random, false);
        checkEpochs(before, map);
      }
      check(map, model, random, false);
    }
  }

  private static ShardMap create(Strategy strategy, int shards, Random random) {
    PartitionerSpec.Builder spec = PartitionerSpec.builder(strategy).hash(HashFunctions.murmur3_128()).vnodes(2).tokensPerNode(2).slots(8);
    if (strategy == Strategy.RANGE && shards > 1) {
      List<byte[]> points = new ArrayList<>();
      TreeMap<byte[], Boolean> distinct = new TreeMap<>(Arrays::compareUnsigned);
      while (distinct.size() < shards - 1) {
        distinct.put(randomKey(random), true);
      }
      points.addAll(distinct.keySet());
      spec.splitPoints(points);
    }
    PartitionerSpec built = spec.build();
    ShardLayout.Initial initial = ShardLayout.initial(built, shards, NODES.stream().map(NodeId::value).toList(), KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int owner : initial.owners()) {
      owners.add(NODES.get(owner));
    }
    return ShardMap.EMPTY.apply(ShardMapDelta.on(ShardMap.EMPTY).createTable("t", built, initial.layout(), owners).build());
  }

  /** Partition keys from a small alphabet, so splits land on, next to and between each other. */
  private static byte[] randomKey(Random random) {
    byte[] key = new byte[1 + random.nextInt(3)];
    for (int i = 0; i < key.length; i++) {
      key[i] = (byte) (random.nextInt(5) * 60); // 0x00, 0x3c, 0x78, 0xb4, 0xf0: escapes and high bytes too
    }
    return key;
  }

  @SuppressWarnings("unchecked")
  private static <B> ShardMap step(ShardMap map, Model<B> model, Random random, boolean range) {
    Table t = map.table("t").orElseThrow();
    int position = random.nextInt(t.shards().size());
    ShardAssignment shard = t.shards().get(position);
    int op = random.nextInt(3);
    if (op == 0) { // split, at a point that may or may not lie inside the shard
      ShardMapDelta.SplitShard split;
      B at;
      if (range) {
        byte[] key = randomKey(random);
        split = ShardMapDelta.SplitShard.atKey(shard.id(), key);
        at = (B) key;
      } else {
        boolean midpoint = random.nextBoolean() && t.layout().hashMidpoint(position).isPresent();
        long h = midpoint ? t.layout().hashMidpoint(position).getAsLong() : random.nextLong();
        split = ShardMapDelta.SplitShard.atHash(shard.id(), h);
        at = (B) Long.valueOf(h);
        if (midpoint) {
          B start = model.starts.floorKey(at);
          assertThat(model.starts.get(start) == shard.id().number() && Long.compareUnsigned(h, (Long) start) > 0)
              .as("the midpoint of shard %s lies inside it", shard.id()).isTrue();
        }
      }
      B start = model.starts.floorKey(at);
      boolean inside = start != null && model.starts.get(start) == shard.id().number()
          && model.starts.comparator().compare(at, start) > 0;
      if (!inside) {
        ShardMap before = map;
        assertThatThrownBy(() -> before.apply(ShardMapDelta.on(before).splitShard(split).build()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot split shard");
        return map;
      }
      ShardMap next = map.apply(ShardMapDelta.on(map).splitShard(split).build());
      long lower = t.nextShardNumber();
      B shardStart = model.starts.floorKey(at);
      model.starts.put(shardStart, lower);
      model.starts.put(at, lower + 1);
      NodeId owner = model.owners.remove(shard.id().number());
      model.owners.put(lower, owner);
      model.owners.put(lower + 1, owner);
      assertThat(model.everIssued.add(lower) && model.everIssued.add(lower + 1)).as("a split issues numbers never used before").isTrue();
      return next;
    }
    if (op == 1 && position + 1 < t.shards().size()) { // merge with the next shard, moving it first if owners differ
      ShardAssignment right = t.shards().get(position + 1);
      if (!right.owner().equals(shard.owner())) {
        ShardMap before = map;
        assertThatThrownBy(() -> before.apply(ShardMapDelta.on(before).mergeShards(shard.id(), right.id()).build()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("move one to the other's owner first");
        map = map.apply(ShardMapDelta.on(map).moveShard(right.id(), right.owner(), shard.owner()).build());
        model.owners.put(right.id().number(), shard.owner());
        t = map.table("t").orElseThrow();
      }
      long merged = t.nextShardNumber();
      ShardMap next = map.apply(ShardMapDelta.on(map).mergeShards(shard.id(), right.id()).build());
      B leftStart = null;
      B rightStart = null;
      for (Map.Entry<B, Long> e : model.starts.entrySet()) {
        if (e.getValue() == shard.id().number()) {
          leftStart = e.getKey();
        } else if (e.getValue() == right.id().number()) {
          rightStart = e.getKey();
        }
      }
      model.starts.remove(rightStart);
      model.starts.put(leftStart, merged);
      model.owners.remove(right.id().number());
      model.owners.put(merged, model.owners.remove(shard.id().number()));
      assertThat(model.everIssued.add(merged)).as("a merge issues a number never used before").isTrue();
      return next;
    }
    NodeId to = NODES.get((NODES.indexOf(shard.owner()) + 1 + random.nextInt(NODES.size() - 1)) % NODES.size());
    model.owners.put(shard.id().number(), to);
    return map.apply(ShardMapDelta.on(map).moveShard(shard.id(), shard.owner(), to).build());
  }

  /** A shard that stays keeps its epoch unless it moved; a new shard has the new map's epoch. */
  private static void checkEpochs(ShardMap before, ShardMap after) {
    Table was = before.table("t").orElseThrow();
    for (ShardAssignment s : after.table("t").orElseThrow().shards()) {
      var old = was.shard(s.id().number());
      if (old.isEmpty()) {
        assertThat(s.epoch()).as("new shard " + s.id()).isEqualTo(after.epoch());
      } else if (!old.get().owner().equals(s.owner())) {
        assertThat(s.epoch()).as("moved shard " + s.id()).isEqualTo(after.epoch());
      } else {
        assertThat(s.epoch()).as("untouched shard " + s.id()).isEqualTo(old.get().epoch());
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static <B> void check(ShardMap map, Model<B> model, Random random, boolean range) {
    Table t = map.table("t").orElseThrow();
    List<Long> numbers = new ArrayList<>();
    for (ShardAssignment s : t.shards()) {
      numbers.add(s.id().number());
      assertThat(s.owner()).as("owner of " + s.id()).isEqualTo(model.owners.get(s.id().number()));
      assertThat(s.epoch()).isLessThanOrEqualTo(map.epoch());
      assertThat(t.shard(s.id().number())).contains(s);
      assertThat(t.nextShardNumber()).isGreaterThan(s.id().number());
    }
    assertThat(numbers).as("shards in key order").isEqualTo(model.numbersInOrder());
    for (long retired : model.everIssued) {
      if (!model.owners.containsKey(retired)) {
        assertThat(t.shard(retired)).as("retired shard " + retired).isEmpty();
      }
    }
    for (int i = 0; i < 50; i++) {
      long expected;
      long actual;
      if (range) {
        byte[] key = randomKey(random);
        expected = model.starts.floorEntry((B) key).getValue();
        actual = t.shardFor(key).id().number();
      } else {
        long h = random.nextLong();
        expected = model.starts.floorEntry((B) Long.valueOf(h)).getValue();
        actual = t.shards().get(t.layout().shardForHash(h)).id().number();
      }
      assertThat(actual).isEqualTo(expected);
    }
    if (!range) { // the ends of every shard too, where an off-by-one would show
      for (Map.Entry<B, Long> e : model.starts.entrySet()) {
        long start = (Long) e.getKey();
        assertThat(t.shards().get(t.layout().shardForHash(start)).id().number()).isEqualTo(e.getValue());
        if (start != 0) {
          assertThat(t.shards().get(t.layout().shardForHash(start - 1)).id().number()).isNotEqualTo(e.getValue());
        }
      }
    }
  }
}
