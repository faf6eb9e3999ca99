package io.shardwise.jmh;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/** Per benchmark thread: its own random keys, and write ids that never repeat. */
@State(Scope.Thread)
public class WriterThread {
  final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
  private long written;

  /** A write id unique to this thread and write. */
  byte[] nextWriteId() {
    return ("w" + Thread.currentThread().getId() + "-" + written++).getBytes(StandardCharsets.UTF_8);
  }
}
