package io.shardwise.bench.history;

import io.shardwise.history.LinearizabilityChecker;
import io.shardwise.history.Op;

import io.shardwise.client.ShardwiseClient;
import io.shardwise.client.VersionMismatchException;
import io.shardwise.client.Versioned;
import io.shardwise.core.key.Key;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Runs several clients against a few keys of one table and records every operation's invocation,
 * completion and outcome, for {@link LinearizabilityChecker}. Each client is its own
 * {@link ShardwiseClient} (its own map cache and connections) on its own thread, choosing gets,
 * puts, conditional puts (against the version it last saw) and deletes at random from a seed.
 * Every value written is unique ({@code c<client>-<n>}), so a read names the write it saw.
 *
 * <p>Bounded: it runs for the given duration and stops by itself; {@link #close} stops it early.
 */
public final class HistoryRecorder implements AutoCloseable {

  private final String table;
  private final int keys;
  private final long seed;
  private final List<ShardwiseClient> clients;
  private final Map<String, List<Op>> history = new ConcurrentHashMap<>();
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong acknowledgedWrites = new AtomicLong();
  private final AtomicLong unknownWrites = new AtomicLong();
  private final List<Thread> threads = new ArrayList<>();
  private final List<Throwable> crashes = new CopyOnWriteArrayList<>();
  private final AtomicLong endedNanos = new AtomicLong();
  private volatile long deadlineNanos;

  /**
   * @param newClient makes one client per recording thread (closed by {@link #close})
   */
  public HistoryRecorder(Supplier<ShardwiseClient> newClient, String table, int clientCount, int keys, long seed) {
    this.table = table;
    this.keys = keys;
    this.seed = seed;
    this.clients = new ArrayList<>();
    for (int c = 0; c < clientCount; c++) {
      clients.add(newClient.get());
    }
    for (int k = 0; k < keys; k++) {
      history.put(keyName(k), new CopyOnWriteArrayList<>());
    }
  }

  public static String keyName(int k) {
    return String.format("hist-%03d", k);
  }

  /** Starts the clients; they run until {@code duration} has passed (or another end: {@link #endAt}) or {@link #stop} is called. */
  public HistoryRecorder start(Duration duration) {
    deadlineNanos = System.nanoTime() + duration.toNanos();
    for (int c = 0; c < clients.size(); c++) {
      int client = c;
      Thread t = new Thread(() -> {
        try {
          runClient(client);
        } catch (Throwable e) {
          crashes.add(e);
        } finally {
          endedNanos.accumulateAndGet(System.nanoTime(), Math::max);
        }
      }, "history-client-" + c);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    return this;
  }

  /** Moves the clients' end to {@code nanoTime} ({@link System#nanoTime}), sooner or later than the duration they started with. */
  public void endAt(long nanoTime) {
    deadlineNanos = nanoTime;
  }

  /**
   * When the last client stopped ({@link System#nanoTime}; 0 while one runs): the end of the
   * recording. {@link #finish}'s reads come after it, when the run is over.
   */
  public long endedNanos() {
    return endedNanos.get();
  }

  private void runClient(int client) {
    ShardwiseClient db = clients.get(client);
    SplittableRandom random = new SplittableRandom(seed * 1_000_003L + client);
    Map<String, Long> lastSeen = new TreeMap<>();
    long n = 0;
    while (!stop.get() && System.nanoTime() < deadlineNanos) {
      String k = keyName(random.nextInt(keys));
      Key key = Key.of(k.getBytes(StandardCharsets.UTF_8));
      int dice = random.nextInt(100);
      List<Op> ops = history.get(k);
      long invoked = System.nanoTime();
      if (dice < 40) {
        try {
          Optional<Versioned> v = db.get(table, key);
          long completed = System.nanoTime();
          ops.add(Op.get(client, v.map(x -> new String(x.value(), StandardCharsets.UTF_8)).orElse(null), v.map(Versioned::version).orElse(0L),
              invoked, completed));
          lastSeen.put(k, v.map(Versioned::version).orElse(0L));
        } catch (RuntimeException e) {
          // a read that failed constrains nothing
        }
      } else if (dice < 70) {
        String value = "c" + client + "-" + n++;
        try {
          long version = db.put(table, key, value.getBytes(StandardCharsets.UTF_8));
          ops.add(Op.put(client, value, invoked, System.nanoTime(), Op.Outcome.OK, version));
          acknowledgedWrites.incrementAndGet();
          lastSeen.put(k, version);
        } catch (RuntimeException e) {
          ops.add(Op.put(client, value, invoked, System.nanoTime(), Op.Outcome.UNKNOWN, 0));
          unknownWrites.incrementAndGet();
        }
      } else if (dice < 90) {
        String value = "c" + client + "-" + n++;
        long expected = lastSeen.getOrDefault(k, 0L);
        try {
          long version = db.putIfVersion(table, key, value.getBytes(StandardCharsets.UTF_8), expected);
          ops.add(Op.putIfVersion(client, value, expected, invoked, System.nanoTime(), Op.Outcome.OK, version));
          acknowledgedWrites.incrementAndGet();
          lastSeen.put(k, version);
        } catch (VersionMismatchException e) {
          ops.add(Op.putIfVersion(client, value, expected, invoked, System.nanoTime(), Op.Outcome.FAILED, e.currentVersion()));
          lastSeen.put(k, e.currentVersion());
        } catch (RuntimeException e) {
          ops.add(Op.putIfVersion(client, value, expected, invoked, System.nanoTime(), Op.Outcome.UNKNOWN, 0));
          unknownWrites.incrementAndGet();
        }
      } else {
        try {
          boolean deleted = db.delete(table, key);
          ops.add(Op.delete(client, invoked, System.nanoTime(), Op.Outcome.OK, deleted));
          acknowledgedWrites.incrementAndGet();
        } catch (RuntimeException e) {
          ops.add(Op.delete(client, invoked, System.nanoTime(), Op.Outcome.UNKNOWN, false));
          unknownWrites.incrementAndGet();
        }
      }
    }
  }

  /** Asks the clients to stop and waits for them. */
  public void stop() throws InterruptedException {
    stop.set(true);
    for (Thread t : threads) {
      t.join(Duration.ofSeconds(60).toMillis());
    }
  }

  /** Waits for the clients to finish by themselves (their duration has passed). */
  public void awaitEnd() throws InterruptedException {
    for (Thread t : threads) {
      t.join();
    }
  }

  /**
   * After the run: reads every key once more with client 0 (each read must see the last state of
   * the key, so an acknowledged write that was lost fails the check) and returns the histories.
   */
  /** How long the final read of a key may keep finding its shard unavailable before the run fails. */
  private static final java.time.Duration FINAL_READ_DEADLINE = java.time.Duration.ofSeconds(30);

  public Map<String, List<Op>> finish() {
    if (!crashes.isEmpty()) {
      throw new IllegalStateException("a recording client crashed", crashes.get(0));
    }
    ShardwiseClient db = clients.get(0);
    for (int k = 0; k < keys; k++) {
      String name = keyName(k);
      long deadline = System.nanoTime() + FINAL_READ_DEADLINE.toNanos();
      while (true) {
        long invoked = System.nanoTime();
        try {
          Optional<Versioned> v = db.get(table, Key.of(name.getBytes(StandardCharsets.UTF_8)));
          history.get(name).add(Op.get(0, v.map(x -> new String(x.value(), StandardCharsets.UTF_8)).orElse(null),
              v.map(Versioned::version).orElse(0L), invoked, System.nanoTime()));
          break;
        } catch (io.shardwise.client.ShardwiseException e) {
          // A read that found no owner changes nothing and is not recorded: the key's shard may still
          // be settling after the fault (the campaign reports that gap); only the answer is checked.
          if (e.code() != io.grpc.Status.Code.UNAVAILABLE || System.nanoTime() > deadline) {
            throw e;
          }
        }
      }
    }
    Map<String, List<Op>> out = new TreeMap<>();
    history.forEach((k, ops) -> out.put(k, List.copyOf(ops)));
    return out;
  }

  public long acknowledgedWrites() {
    return acknowledgedWrites.get();
  }

  public long unknownWrites() {
    return unknownWrites.get();
  }

  /** Operations recorded so far. */
  public long operations() {
    return history.values().stream().mapToLong(List::size).sum();
  }

  @Override
  public void close() {
    stop.set(true);
    clients.forEach(ShardwiseClient::close);
  }
}
