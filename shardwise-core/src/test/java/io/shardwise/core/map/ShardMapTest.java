package io.shardwise.core.map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.partition.KeySample;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.ShardLayout;
import io.shardwise.core.partition.Strategy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class ShardMapTest {

  private static final NodeId N1 = NodeId.of("n1");
  private static final NodeId N2 = NodeId.of("n2");
  private static final NodeId N3 = NodeId.of("n3");
  private static final List<NodeId> NODES = List.of(N1, N2, N3);

  private static ShardMap withTable(ShardMap map, String name, Strategy strategy, int shards) {
    PartitionerSpec spec = PartitionerSpec.builder(strategy).hash(HashFunctions.murmur3_128()).vnodes(4).build();
    ShardLayout.Initial initial = ShardLayout.initial(spec, shards, NODES.size(), KeySample.empty());
    List<NodeId> owners = new ArrayList<>();
    for (int owner : initial.owners()) {
      owners.add(NODES.get(owner));
    }
    return map.apply(ShardMapDelta.on(map).createTable(name, spec, initial.layout(), owners).build());
  }

  @Test
  void creatingATableRaisesTheEpochAndStampsEveryShard() {
    ShardMap map = withTable(ShardMap.EMPTY, "orders", Strategy.MOD, 6);
    assertThat(map.epoch()).isEqualTo(1);
    Table t = map.table("orders").orElseThrow();
    assertThat(t.shards()).hasSize(6).allMatch(s -> s.epoch() == 1);
    assertThat(t.id()).isEqualTo(1);
    assertThat(t.shards()).extracting(ShardAssignment::owner).containsExactly(N1, N1, N2, N2, N3, N3);
    assertThat(map.localChanges(N2, ShardMap.EMPTY).open()).containsExactly(new ShardId("orders", 2), new ShardId("orders", 3));
    assertThat(ShardMap.EMPTY.epoch()).isZero(); // images never change
  }

  @Test
  void aRecreatedTableGetsANewId() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    ShardMap dropped = map.apply(ShardMapDelta.on(map).dropTable("a").build());
    ShardMap again = withTable(dropped, "a", Strategy.MOD, 3);
    assertThat(again.table("a").orElseThrow().id()).isEqualTo(3).isNotEqualTo(map.table("a").orElseThrow().id());
  }

  @Test
  void aDroppedTableComesBackWithItsIdAndOwnersAtTheNewEpoch() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    Table old = map.table("a").orElseThrow();
    ShardMap dropped = map.apply(ShardMapDelta.on(map).dropTable("a").build());
    ShardMap back = dropped.apply(ShardMapDelta.on(dropped).restoreTable(old).build());
    Table t = back.table("a").orElseThrow();
    assertThat(t.id()).isEqualTo(old.id());
    assertThat(t.shards()).extracting(ShardAssignment::owner).containsExactlyElementsOf(old.shards().stream().map(ShardAssignment::owner).toList());
    assertThat(t.shards()).allMatch(s -> s.epoch() == back.epoch());
    // not while a table has the name, nor twice
    ShardMap recreated = withTable(dropped, "a", Strategy.MOD, 3);
    assertThatThrownBy(() -> recreated.apply(ShardMapDelta.on(recreated).restoreTable(old).build()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("drop it first");
    assertThatThrownBy(() -> back.apply(ShardMapDelta.on(back).restoreTable(old).build())).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void shardsAreFoundByTableIdSoARecreatedTableNeverMatchesTheOldOne() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    long oldId = map.table("a").orElseThrow().id();
    ShardAssignment s1 = map.shard(oldId, 1).orElseThrow();
    assertThat(s1.id()).isEqualTo(new ShardId("a", 1));
    assertThat(map.owns(s1.owner(), oldId, 1)).isTrue();
    assertThat(map.shard(oldId, 3)).isEmpty();
    assertThat(map.shard(oldId, -1)).isEmpty();
    ShardMap again = withTable(map.apply(ShardMapDelta.on(map).dropTable("a").build()), "a", Strategy.MOD, 3);
    assertThat(again.shard(oldId, 1)).isEmpty();
    assertThat(again.owns(s1.owner(), oldId, 1)).isFalse();
    assertThat(again.shard(again.table("a").orElseThrow().id(), 1)).isPresent();
  }

  @Test
  void aDeltaAgainstAnotherEpochIsRefused() {
    ShardMap one = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    ShardMapDelta stale = ShardMapDelta.on(ShardMap.EMPTY).dropTable("a").build();
    assertThatThrownBy(() -> one.apply(stale))
        .isInstanceOf(StaleDeltaException.class)
        .hasMessage("delta was computed against map epoch 0 but the map is at epoch 1");
  }

  @Test
  void aDeltaThatDoesNotFitChangesNothing() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    ShardMapDelta bad = ShardMapDelta.on(map).dropTable("a").moveShard(new ShardId("a", 0), N1, N2).build();
    assertThatThrownBy(() -> map.apply(bad)).hasMessage("shard a/0 does not exist");
    assertThat(map.table("a")).isPresent();
    assertThatThrownBy(() -> map.apply(ShardMapDelta.on(map).moveShard(new ShardId("a", 0), N2, N3).build()))
        .hasMessage("shard a/0 belongs to n1, not n2; re-plan the move");
    assertThatThrownBy(() -> withTable(map, "a", Strategy.MOD, 3)).hasMessage("table a already exists");
  }

  @Test
  void movingAShardRaisesOnlyItsEpoch() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    ShardMap moved = map.apply(ShardMapDelta.on(map).moveShard(new ShardId("a", 1), N2, N3).build());
    assertThat(moved.epoch()).isEqualTo(2);
    Table t = moved.table("a").orElseThrow();
    assertThat(t.shards().get(1)).isEqualTo(new ShardAssignment(new ShardId("a", 1), N3, 2));
    assertThat(t.shards().get(0).epoch()).isEqualTo(1);
    assertThat(moved.localChanges(N2, map)).isEqualTo(new ShardMap.LocalChanges(List.of(), List.of(new ShardId("a", 1))));
    assertThat(moved.localChanges(N3, map).open()).containsExactly(new ShardId("a", 1));
  }

  @Test
  void routeServesOnlyTheOwnerAndNeverWithAnOlderMapThanTheCaller() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    byte[] key = ByteStrings.utf8("user-1");
    ShardAssignment shard = map.table("a").orElseThrow().shardFor(key);
    NodeId other = NODES.stream().filter(n -> !n.equals(shard.owner())).findFirst().orElseThrow();

    assertThat(map.route(shard.owner(), "a", key, 1)).isEqualTo(new Route.Serve(1, shard));
    assertThat(map.route(shard.owner(), "a", key, 0)).isInstanceOf(Route.Serve.class); // caller behind: fine
    assertThat(map.route(other, "a", key, 1)).isEqualTo(new Route.WrongShard(1, shard.id(), shard.owner()));
    assertThat(map.route(shard.owner(), "a", key, 2)).isEqualTo(new Route.MapBehind(1, 2));
    assertThat(map.route(shard.owner(), "b", key, 1)).isEqualTo(new Route.NoSuchTable(1, "b"));
  }

  /** Random moves: one owner per shard, epochs only rise, and local changes add up. */
  @Property(tries = 200, seed = "20261129")
  void randomMovesKeepTheInvariants(@ForAll @Size(max = 40) List<@IntRange(min = 0, max = 1000) Integer> moves) {
    ShardMap map = withTable(ShardMap.EMPTY, "t", Strategy.SLOTS, 0);
    for (int m : moves) {
      Table t = map.table("t").orElseThrow();
      ShardAssignment s = t.shards().get(m % t.shards().size());
      NodeId to = NODES.get((NODES.indexOf(s.owner()) + 1 + m % 2) % NODES.size());
      ShardMap next = map.apply(ShardMapDelta.on(map).moveShard(s.id(), s.owner(), to).build());

      assertThat(next.epoch()).isEqualTo(map.epoch() + 1);
      Map<ShardId, ShardAssignment> before = new HashMap<>();
      map.table("t").orElseThrow().shards().forEach(x -> before.put(x.id(), x));
      int changed = 0;
      for (ShardAssignment after : next.table("t").orElseThrow().shards()) {
        ShardAssignment was = before.get(after.id());
        assertThat(after.epoch()).isLessThanOrEqualTo(next.epoch());
        if (!was.owner().equals(after.owner())) {
          changed++;
          assertThat(after.epoch()).isEqualTo(next.epoch());
        } else {
          assertThat(after.epoch()).isEqualTo(was.epoch());
        }
      }
      assertThat(changed).isEqualTo(1);
      int opened = 0;
      int closed = 0;
      for (NodeId n : NODES) {
        opened += next.localChanges(n, map).open().size();
        closed += next.localChanges(n, map).close().size();
      }
      assertThat(opened).isEqualTo(1);
      assertThat(closed).isEqualTo(1);
      map = next;
    }
    int owned = 0;
    for (NodeId n : NODES) {
      owned += map.shardsOf(n).size();
    }
    assertThat(owned).isEqualTo(1024);
  }

  @Test
  void restoringValidatesTheStoredMap() {
    ShardMap map = withTable(ShardMap.EMPTY, "a", Strategy.MOD, 3);
    Table t = map.table("a").orElseThrow();
    assertThat(ShardMap.restore(1, List.of(t)).table("a")).isPresent();
    assertThatThrownBy(() -> ShardMap.restore(0, List.of(t))).hasMessageContaining("above the map epoch");
    assertThatThrownBy(() -> ShardMap.restore(1, List.of(t, t))).hasMessageContaining("appears twice");
  }

  @Test
  void namesAreValidated() {
    assertThatThrownBy(() -> NodeId.of("no spaces")).hasMessageContaining("must be 1 to 64 characters");
    assertThatThrownBy(() -> new ShardId("9lives", 0)).hasMessageContaining("must start with a letter");
  }
}
