package io.shardwise.core;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaCall;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.core.domain.JavaClass;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The placement core stays pure: it depends on the JDK, Guava and two pure hash libraries only; it
 * does no I/O and starts no threads; and nothing in it calls {@code hashCode()}, whose values are
 * per-process and must never decide placement.
 */
class CorePurityTest {

  private static JavaClasses core;

  @BeforeAll
  static void importCore() {
    core = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("io.shardwise.core");
  }

  @Test
  void dependsOnlyOnTheJdkGuavaAndPureHashLibraries() {
    classes()
        .should()
        .onlyDependOnClassesThat()
        .resideInAnyPackage(
            "io.shardwise.core..",
            "java.lang..",
            "java.util..",
            "java.math..",
            "java.time..",
            "java.nio.charset..",
            "java.nio", // buffers (ByteBuffer), not files or channels
            "com.google.common.hash..",
            "com.google.common.base..",
            "com.google.common.primitives..",
            "net.openhft.hashing..",
            "org.bouncycastle.crypto.digests..")
        .check(core);
  }

  @Test
  void doesNoIoAndStartsNoThreads() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("java.io..", "java.nio.file..", "java.net..", "java.util.concurrent..", "java.lang.reflect..")
        .orShould()
        .dependOnClassesThat()
        .areAssignableTo(Thread.class)
        .check(core);
  }

  /** Every placement uses a named {@link io.shardwise.core.hash.HashFunction}, never hashCode. */
  @Test
  void neverCallsHashCodeOutsideAHashCodeMethod() {
    noClasses().should(callHashCodeOutsideHashCodeMethods()).check(core);
  }

  private static ArchCondition<JavaClass> callHashCodeOutsideHashCodeMethods() {
    DescribedPredicate<JavaCall<?>> hashCodeCall =
        DescribedPredicate.describe(
            "a hashCode call",
            call -> {
              String name = call.getTarget().getName();
              String owner = call.getTarget().getOwner().getName();
              return name.equals("hashCode")
                  || (owner.equals("java.util.Objects") && name.equals("hash"))
                  || (owner.equals("java.util.Arrays") && name.equals("hashCode"));
            });
    return new ArchCondition<>("call hashCode() outside a hashCode() method") {
      @Override
      public void check(JavaClass clazz, ConditionEvents events) {
        for (JavaMethodCall call : clazz.getMethodCallsFromSelf()) {
          if (hashCodeCall.test(call) && !call.getOrigin().getName().equals("hashCode")) {
            events.add(SimpleConditionEvent.satisfied(call, call.getDescription()));
          }
        }
      }
    };
  }
}
