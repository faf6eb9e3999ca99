package io.shardwise.server.storage;

/** A key of a shard (without the shard prefix), its value and its version. */
public record StoredEntry(byte[] key, byte[] value, long version) {}
