package io.shardwise.server.storage;

import java.util.List;

/**
 * The replication logs of the shards an engine keeps, and how far each shard's data has applied
 * its log. The replication protocol ({@code io.shardwise.server.replication}) is the only user; the
 * engine only stores.
 *
 * <p>A shard's log holds entries {@code base+1 … last}, without gaps. {@code base} is where the log
 * starts: 0 for a new shard, or the offset a snapshot of the data was taken at (or the log was trimmed
 * to); its epoch is kept with it, so the entry before the first one held can still be checked.
 * {@code applied} is the last entry whose effects are in the shard's data; it is written in the same
 * atomic write as those effects, so after a crash the data is exactly the log applied up to it.
 *
 * <p>Thread-safe for different shards; the protocol calls it for one shard from one place at a time.
 */
public interface ReplicaStorage {

  /** Where a shard's log and data stand. */
  record LogState(long baseOffset, long baseEpoch, long lastOffset, long lastEpoch, long appliedOffset, long appliedEpoch) {

    /** The log of a shard nothing was ever written to. */
    public static final LogState EMPTY = new LogState(0, 0, 0, 0, 0, 0);

    /**
     * The state after appending {@code entries} (not empty), checked: each follows the last.
     * Every implementation's rules, in one place.
     */
    public LogState appended(ShardRef shard, List<LogEntry> entries) {
      long expected = lastOffset + 1;
      for (LogEntry e : entries) {
        if (e.offset() != expected++) {
          throw new IllegalArgumentException("shard " + shard + ": entry " + e.offset() + " does not follow " + (expected - 2));
        }
      }
      LogEntry last = entries.get(entries.size() - 1);
      return new LogState(baseOffset, baseEpoch, last.offset(), last.epoch(), appliedOffset, appliedEpoch);
    }

    /** The state after applying {@code entries} (not empty), checked: held, and each the next to apply. */
    public LogState applied(ShardRef shard, List<LogEntry> entries) {
      long expected = appliedOffset + 1;
      for (LogEntry e : entries) {
        if (e.offset() != expected++ || e.offset() > lastOffset) {
          throw new IllegalArgumentException("shard " + shard + ": entry " + e.offset() + " is not the next to apply after "
              + appliedOffset + " (the log ends at " + lastOffset + ")");
        }
        for (ShardEngine.StoredValue v : e.effects()) {
          if (!shard.contains(v.storeKey())) {
            throw new IllegalArgumentException("entry " + e.offset() + " writes a key outside shard " + shard);
          }
        }
      }
      LogEntry last = entries.get(entries.size() - 1);
      return new LogState(baseOffset, baseEpoch, lastOffset, lastEpoch, last.offset(), last.epoch());
    }

    /** The state after removing the entries after {@code offset} (whose epoch is {@code epoch}), checked: none applied. */
    public LogState truncated(ShardRef shard, long offset, long epoch) {
      if (offset < appliedOffset || offset < baseOffset) {
        throw new IllegalArgumentException("shard " + shard + ": cannot truncate the log after " + offset + ", entries up to "
            + appliedOffset + " are applied (the log starts after " + baseOffset + ")");
      }
      return new LogState(baseOffset, baseEpoch, offset, epoch, appliedOffset, appliedEpoch);
    }

    /** The state after dropping the entries up to {@code offset} (whose epoch is {@code epoch}), checked: all applied. */
    public LogState trimmed(ShardRef shard, long offset, long epoch) {
      if (offset > appliedOffset) {
        throw new IllegalArgumentException("shard " + shard + ": entries after " + appliedOffset + " are not applied; not trimmed to " + offset);
      }
      return new LogState(offset, epoch, Math.max(offset, lastOffset), offset >= lastOffset ? epoch : lastEpoch, appliedOffset, appliedEpoch);
    }

    /** A log started over at a base: empty, and the data applied up to it. */
    public static LogState at(long baseOffset, long baseEpoch) {
      return new LogState(baseOffset, baseEpoch, baseOffset, baseEpoch, baseOffset, baseEpoch);
    }
  }

  /** The shard's log and applied position ({@link LogState#EMPTY} for a shard without a log here). */
  LogState state(ShardRef shard);

  /**
   * Appends entries that follow the last one held, durably, before it returns.
   *
   * @throws IllegalArgumentException if the first does not follow the last offset, or they skip one
   */
  void append(ShardRef shard, List<LogEntry> entries);

  /**
   * Removes the entries after {@code offset} (a suffix that the leader's log does not have).
   *
   * @throws IllegalArgumentException if that would remove an applied entry
   */
  void truncateAfter(ShardRef shard, long offset);

  /** Entries from {@code fromOffset} on, at most {@code maxEntries} and about {@code maxBytes} (at least one). */
  List<LogEntry> read(ShardRef shard, long fromOffset, int maxEntries, long maxBytes);

  /** The epoch of entry {@code offset}: its own, the base's at the base, 0 at 0, or -1 if the log does not hold it. */
  long epochOf(ShardRef shard, long offset);

  /**
   * Writes the effects of the entries (held in the log, following the applied one) into the shard's
   * data, and the last one as applied, atomically.
   */
  void apply(ShardRef shard, List<LogEntry> entries);

  /**
   * {@link #append} of {@code entries}, then {@link #apply} of {@code applied} (the entries after the
   * applied one, held or among {@code entries}; either list may be empty), as one atomic write where
   * the storage can: a follower takes a leader's new entries and applies the ones the leader's
   * commit covers in one step.
   */
  default void appendAndApply(ShardRef shard, List<LogEntry> entries, List<LogEntry> applied) {
    append(shard, entries);
    apply(shard, applied);
  }

  /** Drops entries up to {@code offset} (applied ones only): the log then starts after it. */
  void trim(ShardRef shard, long offset);

  /**
   * Starts the shard's log over, empty, at {@code baseOffset}/{@code baseEpoch} with the data
   * counted as applied up to it: for a replica whose data was just installed from a snapshot taken
   * there, or a shard that starts a log of its own (a new table, a split's halves).
   */
  void reset(ShardRef shard, long baseOffset, long baseEpoch);

  /** Removes the shard's log and state (not its data): it is not replicated here any more. */
  void forget(ShardRef shard);
}
