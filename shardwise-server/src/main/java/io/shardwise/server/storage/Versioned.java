package io.shardwise.server.storage;

/**
 * A stored value and its version. Versions of one key start at 1 and only rise, across deletes
 * too, so a conditional write made against a version can never succeed against a later life of
 * the same key.
 */
public record Versioned(byte[] value, long version) {}
