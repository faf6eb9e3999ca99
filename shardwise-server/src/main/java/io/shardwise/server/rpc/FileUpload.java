package io.shardwise.server.rpc;

import com.google.common.util.concurrent.RateLimiter;
import com.google.protobuf.ByteString;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * Sends a file to another node as a gRPC client stream of chunks, with flow control (a chunk is
 * sent only when the stream is ready, so a slow receiver is never flooded) and an optional
 * bandwidth limit, and waits for the receiver's one answer. A shard's snapshot for a move and a
 * replica's snapshot for a follower both travel this way ({@link FileReceiver} is the other end).
 */
public final class FileUpload {

  private static final int CHUNK_BYTES = 1 << 20;

  private FileUpload() {}

  /**
   * Streams {@code file} and returns the receiver's answer.
   *
   * @param open starts the call with the observer of its answer (with its deadline set)
   * @param chunk the message for a chunk of data; {@code first} is true for the first one, which
   *     carries what the receiver needs to know before the data (the data is empty if the file is)
   * @param file the file, or {@code null} for nothing: one first chunk without data
   * @param bytesPerSecond the bandwidth limit, or 0 for none
   * @param sent hears the bytes of every chunk before it is sent, and 0 while the stream waits for
   *     the receiver to read; may throw to stop the upload (the call is cancelled)
   * @param confirmWithin how long to wait for the answer once everything is sent
   * @param receiver names the receiver in errors ("the destination n2")
   * @throws IllegalStateException if the file cannot be read, the receiver fails, or no answer comes in time
   */
  public static <Q, A> A send(Function<StreamObserver<A>, StreamObserver<Q>> open, BiFunction<Boolean, ByteString, Q> chunk,
      Path file, long bytesPerSecond, LongConsumer sent, Duration confirmWithin, String receiver) {
    CompletableFuture<A> done = new CompletableFuture<>();
    ReentrantLock lock = new ReentrantLock();
    Condition ready = lock.newCondition();
    ClientResponseObserver<Q, A> answers = new ClientResponseObserver<>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<Q> requestStream) {
        requestStream.setOnReadyHandler(() -> {
          lock.lock();
          try {
            ready.signalAll();
          } finally {
            lock.unlock();
          }
        });
      }

      @Override
      public void onNext(A value) {
        done.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        done.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {
        done.complete(null);
      }
    };
    @SuppressWarnings("unchecked")
    ClientCallStreamObserver<Q> stream = (ClientCallStreamObserver<Q>) open.apply(answers);
    try {
      if (file == null) {
        stream.onNext(chunk.apply(true, ByteString.EMPTY));
      } else {
        RateLimiter limiter = bytesPerSecond > 0 ? RateLimiter.create(bytesPerSecond) : null;
        try (InputStream in = Files.newInputStream(file)) {
          // Throttled: chunks of a tenth of a second's worth, so the limit holds smoothly.
          byte[] buffer = new byte[bytesPerSecond > 0 ? (int) Math.max(16 << 10, Math.min(CHUNK_BYTES, bytesPerSecond / 10)) : CHUNK_BYTES];
          boolean first = true;
          for (int n; (n = in.readNBytes(buffer, 0, buffer.length)) > 0 || first; ) {
            if (done.isDone()) {
              break; // the receiver failed: its error is reported below
            }
            awaitReady(stream, lock, ready, done, sent);
            if (limiter != null && n > 0) {
              limiter.acquire(n);
            }
            sent.accept(n);
            stream.onNext(chunk.apply(first, ByteString.copyFrom(buffer, 0, n)));
            first = false;
          }
        }
      }
      stream.onCompleted();
      return done.get(confirmWithin.toMillis(), TimeUnit.MILLISECONDS);
    } catch (IOException e) {
      stream.cancel("the file could not be read", e);
      throw new IllegalStateException("reading " + file + " failed: " + e.getMessage(), e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(receiver + " did not take the file: " + e.getCause().getMessage(), e);
    } catch (TimeoutException e) {
      stream.cancel("timed out", e);
      throw new IllegalStateException(receiver + " did not confirm the file within " + confirmWithin.toSeconds() + " s");
    } catch (InterruptedException e) {
      stream.cancel("interrupted", e);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending " + file, e);
    } catch (RuntimeException e) {
      stream.cancel("upload abandoned", e);
      throw e;
    }
  }

  private static void awaitReady(ClientCallStreamObserver<?> stream, ReentrantLock lock, Condition ready, CompletableFuture<?> done,
      LongConsumer sent) throws InterruptedException {
    lock.lock();
    try {
      while (!stream.isReady() && !done.isDone()) {
        sent.accept(0); // lets the sender stop an upload stuck on a receiver that reads nothing
        ready.await(100, TimeUnit.MILLISECONDS);
      }
    } finally {
      lock.unlock();
    }
  }
}
