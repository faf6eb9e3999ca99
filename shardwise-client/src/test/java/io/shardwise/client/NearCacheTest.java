package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The near-cache's rules, on a clock the test moves: what is cached, for how long, and what a write of this client does. */
class NearCacheTest {

  private final AtomicLong nanos = new AtomicLong();
  private final NearCache cache = new NearCache(Duration.ofMillis(100), 1_000, nanos::get);
  private final AtomicInteger fetches = new AtomicInteger();

  private Optional<Versioned> fetch(String value, long version) {
    fetches.incrementAndGet();
    return Optional.of(new Versioned(value.getBytes(StandardCharsets.UTF_8), version));
  }

  private static String text(Optional<Versioned> v) {
    return new String(v.orElseThrow().value(), StandardCharsets.UTF_8);
  }

  @Test
  void aReadIsAnsweredFromTheCacheUntilTheTtlEnds() {
    Key k = Key.of("hot");
    assertThat(text(cache.get("t", k, () -> fetch("v1", 1)))).isEqualTo("v1");
    assertThat(text(cache.get("t", k, () -> fetch("v2", 2)))).as("cached").isEqualTo("v1");
    nanos.addAndGet(Duration.ofMillis(99).toNanos());
    assertThat(text(cache.get("t", k, () -> fetch("v2", 2)))).as("still within the TTL").isEqualTo("v1");
    nanos.addAndGet(Duration.ofMillis(2).toNanos());
    assertThat(text(cache.get("t", k, () -> fetch("v2", 2)))).as("expired: fetched again").isEqualTo("v2");
    assertThat(fetches).hasValue(2);
    assertThat(cache.stats()).isEqualTo(new NearCacheStats(2, 2, 1));
    assertThat(cache.stats().hitRate()).isEqualTo(0.5);
  }

  @Test
  void absentKeysAreCachedAsAbsentAndTablesAreApart() {
    Key k = Key.of("nobody");
    assertThat(cache.get("t", k, () -> { fetches.incrementAndGet(); return Optional.empty(); })).isEmpty();
    assertThat(cache.get("t", k, () -> fetch("late", 1))).isEmpty();
    assertThat(text(cache.get("other", k, () -> fetch("there", 1)))).isEqualTo("there");
    cache.forgetTable("t");
    assertThat(text(cache.get("t", k, () -> fetch("now", 2)))).isEqualTo("now");
    assertThat(text(cache.get("other", k, () -> fetch("never", 9)))).as("another table is not forgotten").isEqualTo("there");
  }

  @Test
  void aWriteOfThisClientIsReadByItsNextRead() {
    Key k = Key.of("mine");
    cache.get("t", k, () -> fetch("old", 1));
    cache.written("t", k);
    assertThat(text(cache.get("t", k, () -> fetch("new", 2)))).isEqualTo("new");
    assertThat(text(cache.get("t", k, () -> fetch("newer", 3)))).as("what that read fetched is cached").isEqualTo("new");
  }

  @Test
  void aReadInFlightAcrossAWriteDoesNotCacheWhatItFetched() {
    Key k = Key.of("raced");
    NearCache.Lookup missed = cache.lookup("t", k);
    assertThat(missed.hit()).isFalse();
    cache.written("t", k); // the write is sent while the read is on its way
    cache.store(missed, fetch("before the write", 1));
    assertThat(text(cache.get("t", k, () -> fetch("after the write", 2)))).isEqualTo("after the write");

    NearCache.Lookup second = cache.lookup("u", k);
    cache.written("u", k);
    NearCache.Lookup third = cache.lookup("u", k); // a read that starts after the mark, before the answer
    cache.written("u", k); // the write is answered
    cache.store(third, fetch("fetched before the answer", 3));
    cache.store(second, fetch("older still", 2));
    assertThat(text(cache.get("u", k, () -> fetch("after both marks", 4)))).isEqualTo("after both marks");
  }

  @Test
  void limitsAreNamed() {
    assertThatThrownBy(() -> new NearCache(Duration.ZERO, 10)).hasMessageContaining("above 0 and at most 10 s");
    assertThatThrownBy(() -> new NearCache(Duration.ofSeconds(11), 10)).hasMessageContaining("above 0 and at most 10 s");
    assertThatThrownBy(() -> new NearCache(Duration.ofSeconds(1), 0)).hasMessageContaining("at least 1 key");
    assertThatThrownBy(() -> ShardwiseClient.builder().nearCache(Duration.ofSeconds(11), 10)).hasMessageContaining("at most 10 s");
    assertThat(new NearCache(Duration.ofSeconds(10), 1).stats().hitRate()).isZero();
  }
}
