package io.shardwise.history;

/**
 * One operation on one key as a client saw it: what it asked, when it was invoked and when it
 * completed (nanoTime), and its outcome.
 *
 * <ul>
 *   <li>{@code OK}: it happened, with the result given ({@code version}, {@code value},
 *       {@code found}/{@code deleted});
 *   <li>{@code FAILED}: it definitely did not happen (for a conditional put: the versions did not
 *       match, and {@code version} is the current version the owner reported);
 *   <li>{@code UNKNOWN}: the client cannot tell (a timeout, a lost connection): it may have
 *       happened at any moment after its invocation, or never.
 * </ul>
 *
 * @param value the value written (put) or read (get, {@code null} if absent)
 * @param expected the expected version of a conditional put (0: absent)
 */
public record Op(int client, Kind kind, String value, long expected, long invoked, long completed, Outcome outcome, long version,
    boolean found) {

  public enum Kind { PUT, PUT_IF_VERSION, DELETE, GET }

  public enum Outcome { OK, FAILED, UNKNOWN }

  public static Op put(int client, String value, long invoked, long completed, Outcome outcome, long version) {
    return new Op(client, Kind.PUT, value, 0, invoked, completed, outcome, version, false);
  }

  public static Op putIfVersion(int client, String value, long expected, long invoked, long completed, Outcome outcome, long version) {
    return new Op(client, Kind.PUT_IF_VERSION, value, expected, invoked, completed, outcome, version, false);
  }

  /** {@code found}: the delete reported that the key was live. */
  public static Op delete(int client, long invoked, long completed, Outcome outcome, boolean found) {
    return new Op(client, Kind.DELETE, null, 0, invoked, completed, outcome, 0, found);
  }

  /** {@code value == null}: absent. */
  public static Op get(int client, String value, long version, long invoked, long completed) {
    return new Op(client, Kind.GET, value, 0, invoked, completed, Outcome.OK, version, value != null);
  }

  /** An operation whose effect must be placed somewhere: it completed, or it may have happened. */
  boolean mustLinearize() {
    return outcome != Outcome.UNKNOWN;
  }

  /** Completion time for ordering: an unknown outcome never completes. */
  long returned() {
    return outcome == Outcome.UNKNOWN ? Long.MAX_VALUE : completed;
  }

  @Override
  public String toString() {
    String what = switch (kind) {
      case PUT -> "put(" + value + ")";
      case PUT_IF_VERSION -> "putIfVersion(" + value + ", expected " + expected + ")";
      case DELETE -> "delete()";
      case GET -> "get()";
    };
    String result = switch (outcome) {
      case UNKNOWN -> "unknown";
      case FAILED -> kind == Kind.PUT_IF_VERSION ? "mismatch (current " + version + ")" : "failed";
      case OK -> switch (kind) {
        case PUT, PUT_IF_VERSION -> "ok v" + version;
        case DELETE -> "ok " + (found ? "deleted" : "was absent");
        case GET -> found ? "ok " + value + " v" + version : "ok absent";
      };
    };
    return "client " + client + " " + what + " -> " + result + " [" + invoked + ", " + (outcome == Outcome.UNKNOWN ? "?" : completed) + "]";
  }
}
