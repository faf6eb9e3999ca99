package io.shardwise.server.rpc;

import com.google.protobuf.ByteString;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The receiving end of a {@link FileUpload}: the chunks of data written to a file as they come,
 * made durable when the stream ends, deleted when it fails. Not thread-safe (gRPC calls a stream's
 * observer serially).
 */
public final class FileReceiver {

  private final Path file;
  private FileChannel channel;
  private long bytes;

  /** Receives into {@code file}, replacing any file there. */
  public FileReceiver(Path file) {
    this.file = file;
  }

  /** Appends a chunk's data (nothing for an empty chunk; the file exists once data has come). */
  public void write(ByteString data) {
    if (data.isEmpty()) {
      return;
    }
    try {
      if (channel == null) {
        channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
      }
      bytes += data.size();
      for (var buffer : data.asReadOnlyByteBufferList()) {
        while (buffer.hasRemaining()) {
          channel.write(buffer);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the received file " + file + ": " + e.getMessage(), e);
    }
  }

  /** Makes what came durable; returns the file, or {@code null} if no data came (an empty shard). */
  public Path finish() {
    if (channel == null) {
      return null;
    }
    try {
      channel.force(false);
      channel.close();
      channel = null;
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the received file " + file + ": " + e.getMessage(), e);
    }
  }

  /** Bytes received so far. */
  public long bytes() {
    return bytes;
  }

  /** Closes and deletes the file, whatever happened (it may have been moved away already). */
  public void delete() {
    try {
      if (channel != null) {
        channel.close();
        channel = null;
      }
    } catch (IOException ignored) {
      // deleted below
    }
    try {
      Files.deleteIfExists(file);
    } catch (IOException ignored) {
      // a leftover is cleaned up when the node starts
    }
  }
}
