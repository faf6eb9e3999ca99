package io.shardwise.client;

/** A value read from Shardwise and its version (versions of one key only rise). */
public record Versioned(byte[] value, long version) {}
