package io.shardwise.core.partition;

import io.shardwise.core.hash.HashFunction;
import io.shardwise.core.key.ByteStrings;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Generated keys and samples for partitioner tests. */
final class TestKeys {

  private TestKeys() {}

  static List<byte[]> users(int count) {
    List<byte[]> keys = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      keys.add(ByteStrings.utf8(String.format(Locale.ROOT, "user-%06d", i)));
    }
    return keys;
  }

  static KeySample sampleOf(List<byte[]> keys, HashFunction hash) {
    KeySample.Builder b = KeySample.builder(1 << 16, 7, hash);
    keys.forEach(b::add);
    return b.build();
  }

  static PartitionerSpec spec(Strategy strategy, HashFunction hash) {
    return PartitionerSpec.builder(strategy).hash(hash).vnodes(64).tokensPerNode(16).seed(7).build();
  }
}
