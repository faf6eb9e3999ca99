package io.shardwise.cli;

/** How a command prints its result on stdout. */
public enum OutputFormat {
  table,
  json,
  csv
}
