package io.shardwise.jmh;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/** Temporary directories of benchmark stores. */
final class Dirs {

  private Dirs() {}

  /** Deletes {@code dir} and everything under it. */
  static void deleteTree(Path dir) throws IOException {
    try (var files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
