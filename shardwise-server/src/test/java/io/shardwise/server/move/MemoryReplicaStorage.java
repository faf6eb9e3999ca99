package io.shardwise.server.move;

import io.shardwise.server.storage.LogEntry;
import io.shardwise.server.storage.ReplicaStorage;
import io.shardwise.server.storage.ShardRef;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@link ReplicaStorage} in memory, beside {@link MemoryEngine}'s data: what a crash of its node
 * keeps, as RocksDB keeps its column families through kill -9. Applying writes the effects into
 * the engine's data and the applied position here in one step. Every write is synced but an
 * apply that appends nothing, as in RocksDB ({@link MemoryEngine#losePower}). Not thread-safe.
 */
public final class MemoryReplicaStorage implements ReplicaStorage {

  private final MemoryEngine engine;
  private final Map<ShardRef, TreeMap<Long, LogEntry>> logs = new HashMap<>();
  private final Map<ShardRef, LogState> states = new HashMap<>();

  MemoryReplicaStorage(MemoryEngine engine) {
    this.engine = engine;
  }

  @Override
  public LogState state(ShardRef shard) {
    return states.getOrDefault(shard, LogState.EMPTY);
  }

  private TreeMap<Long, LogEntry> log(ShardRef shard) {
    return logs.computeIfAbsent(shard, s -> new TreeMap<>());
  }

  @Override
  public void append(ShardRef shard, List<LogEntry> entries) {
    appendAndApply(shard, entries, List.of());
  }

  @Override
  public void appendAndApply(ShardRef shard, List<LogEntry> entries, List<LogEntry> applied) {
    if (entries.isEmpty() && applied.isEmpty()) {
      return;
    }
    LogState before = state(shard);
    LogState after = entries.isEmpty() ? before : before.appended(shard, entries);
    after = applied.isEmpty() ? after : after.applied(shard, applied);
    entries.forEach(e -> log(shard).put(e.offset(), e));
    List<io.shardwise.server.storage.ShardEngine.StoredValue> effects = new ArrayList<>();
    applied.forEach(e -> effects.addAll(e.effects()));
    Runnable undo = engine.write(effects);
    states.put(shard, after);
    if (entries.isEmpty()) {
      engine.unsynced(() -> {
        undo.run();
        states.put(shard, before);
      });
    } else {
      engine.synced();
    }
  }

  @Override
  public void truncateAfter(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset >= s.lastOffset()) {
      return;
    }
    LogState after = s.truncated(shard, offset, epochOf(shard, offset));
    log(shard).tailMap(offset, false).clear();
    states.put(shard, after);
    engine.synced();
  }

  @Override
  public List<LogEntry> read(ShardRef shard, long fromOffset, int maxEntries, long maxBytes) {
    List<LogEntry> out = new ArrayList<>();
    long bytes = 0;
    for (LogEntry e : log(shard).tailMap(fromOffset, true).values()) {
      if (out.size() == maxEntries || (!out.isEmpty() && bytes >= maxBytes)) {
        break;
      }
      out.add(e);
      bytes += e.bytes();
    }
    return out;
  }

  @Override
  public long epochOf(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset == s.baseOffset()) {
      return s.baseEpoch();
    }
    LogEntry e = log(shard).get(offset);
    return e == null ? -1 : e.epoch();
  }

  @Override
  public void apply(ShardRef shard, List<LogEntry> entries) {
    appendAndApply(shard, List.of(), entries);
  }

  @Override
  public void trim(ShardRef shard, long offset) {
    LogState s = state(shard);
    if (offset <= s.baseOffset()) {
      return;
    }
    LogState after = s.trimmed(shard, offset, epochOf(shard, offset));
    log(shard).headMap(offset, true).clear();
    states.put(shard, after);
    engine.synced();
  }

  @Override
  public void reset(ShardRef shard, long baseOffset, long baseEpoch) {
    log(shard).clear();
    states.put(shard, LogState.at(baseOffset, baseEpoch));
    engine.synced();
  }

  @Override
  public void forget(ShardRef shard) {
    logs.remove(shard);
    states.remove(shard);
    engine.synced();
  }
}
