package io.shardwise.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The client speaks its own types: no public signature of the client package names a protobuf type. */
class PublicApiTest {

  private static List<Class<?>> publicClasses() throws IOException, URISyntaxException, ClassNotFoundException {
    Path dir = Path.of(ShardwiseClient.class.getProtectionDomain().getCodeSource().getLocation().toURI()).resolve("io/shardwise/client");
    List<Class<?>> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
        Class<?> c = Class.forName("io.shardwise.client." + f.getFileName().toString().replace(".class", "").replace('/', '.'));
        if (Modifier.isPublic(c.getModifiers())) {
          out.add(c);
        }
      }
    }
    return out;
  }

  @Test
  void noPublicMethodConstructorOrFieldOfTheClientNamesAProtobufType() throws Exception {
    List<String> leaks = new ArrayList<>();
    List<Class<?>> classes = publicClasses();
    assertThat(classes).contains(ShardwiseClient.class, KeyValue.class, TableSpec.class, Scan.class, ClusterStatus.class);
    for (Class<?> c : classes) {
      List<Executable> members = new ArrayList<>();
      for (Method m : c.getDeclaredMethods()) {
        if (Modifier.isPublic(m.getModifiers())) {
          members.add(m);
        }
      }
      for (Constructor<?> k : c.getDeclaredConstructors()) {
        if (Modifier.isPublic(k.getModifiers())) {
          members.add(k);
        }
      }
      for (Executable e : members) {
        List<Type> types = new ArrayList<>(List.of(e.getGenericParameterTypes()));
        if (e instanceof Method m) {
          types.add(m.getGenericReturnType());
        }
        for (Type t : types) {
          String name = t.getTypeName();
          if (name.contains("io.shardwise.proto") || name.contains("com.google.protobuf")) {
            leaks.add(c.getSimpleName() + "." + e.getName() + ": " + name);
          }
        }
      }
      for (var f : c.getFields()) {
        if (f.getGenericType().getTypeName().contains("io.shardwise.proto")) {
          leaks.add(c.getSimpleName() + "." + f.getName());
        }
      }
    }
    assertThat(leaks).isEmpty();
  }
}
