package io.shardwise.cli;

import io.shardwise.core.sim.KeySource;
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
    java.io.InputStream in;
    try {
      in = new java.io.BufferedInputStream(Files.newInputStream(path), 1 << 16);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read keys file '" + path + "': " + e.getMessage(), e);
    }
    java.nio.charset.CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT).onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT);
    return new Iterator<>() {
      private long lineNumber;
      private byte[] next = advance();

      /** The next non-empty line's bytes (without its \n or \r\n), checked to be UTF-8; null at the end. */
      private byte[] advance() {
        try {
          java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
          while (true) {
            int b = in.read();
            if (b == -1 && line.size() == 0) {
              in.close();
              return null;
            }
            if (b == -1 || b == '\n') {
              lineNumber++;
              byte[] bytes = line.toByteArray();
              int length = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
              if (length > 0) {
                checkUtf8(bytes, length);
                return length == bytes.length ? bytes : java.util.Arrays.copyOf(bytes, length);
              }
              if (b == -1) {
                in.close();
                return null;
              }
              line.reset();
            } else {
              line.write(b);
            }
          }
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read keys file '" + path + "': " + e.getMessage(), e);
        }
      }

      private void checkUtf8(byte[] bytes, int length) throws IOException {
        try {
          utf8.decode(java.nio.ByteBuffer.wrap(bytes, 0, length));
        } catch (java.nio.charset.CharacterCodingException e) {
          in.close();
          throw new IllegalArgumentException("keys file '" + path + "' is not UTF-8 text: line " + lineNumber
              + " holds bytes that are not UTF-8 (keys files are text, one key per line)", e);
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
        byte[] key = next;
        next = advance();
        return key;
      }
    };
  }
}
