package io.shardwise.bench;

/** The operations of the core workloads, named as in reports. */
public enum OpType {
  READ("read"),
  UPDATE("update"),
  INSERT("insert"),
  SCAN("scan"),
  READ_MODIFY_WRITE("read-modify-write"),
  INCREMENT("increment"),
  COUNTER_READ("counter-read");

  private final String id;

  OpType(String id) {
    this.id = id;
  }

  public String id() {
    return id;
  }
}
