package io.shardwise.cli;

import io.shardwise.core.key.ByteStrings;
import io.shardwise.core.sim.KeySource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.NoSuchElementException;

/** Keys from a UTF-8 text file, one per line; empty lines are skipped. Re-read on every pass. */
final class KeysFile implements KeySource {

  private final Path path;

  private KeysFile(Path path) {
    this.path = path;
  }

  /**
   * @throws IllegalArgumentException naming the file when it cannot be read
   */
  static KeysFile open(Path path) {
    if (!Files.isRegularFile(path)) {
      throw new IllegalArgumentException("cannot read keys file '" + path + "': no such file");
    }
    if (!Files.isReadable(path)) {
      throw new IllegalArgumentException("cannot read keys file '" + path + "': permission denied");
    }
    return new KeysFile(path);
  }

  @Override
  public String description() {
    return path.getFileName().toString();
  }

  @Override
  public Iterator<byte[]> iterator() {
    BufferedReader reader;
    try {
      reader = Files.newBufferedReader(path, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read keys file '" + path + "': " + e.getMessage(), e);
    }
    return new Iterator<>() {
      private String next = advance();

      private String advance() {
        try {
          String line;
          while ((line = reader.readLine()) != null) {
            if (!line.isEmpty()) {
              return line;
            }
          }
          reader.close();
          return null;
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read keys file '" + path + "': " + e.getMessage(), e);
        }
      }

      @Override
      public boolean hasNext() {
        return next != null;
      }

      @Override
      public byte[] next() {
        if (next == null) {
          throw new NoSuchElementException();
        }
        byte[] key = ByteStrings.utf8(next);
        next = advance();
        return key;
      }
    };
  }
}
