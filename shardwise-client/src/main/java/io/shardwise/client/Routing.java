package io.shardwise.client;

/** How a client reaches the owner of a key's shard. */
public enum Routing {
  /** Shard-aware: the client keeps the map and calls each key's owner directly. */
  CLIENT,
  /** Through a router, which holds no data and forwards. */
  ROUTER,
  /** Through any node, which forwards to the owner when it is not the owner itself. */
  NODE
}
