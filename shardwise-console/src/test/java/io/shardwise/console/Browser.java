package io.shardwise.console;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Headless Chromium from the machine's packages (Debian's {@code chromium} and {@code
 * chromium-driver}), driven by Selenium. Never downloads a browser or a driver: the binaries are
 * given explicitly ({@code CHROME_BIN}, {@code CHROMEDRIVER} override the Debian paths). Where they
 * are missing the browser tests are skipped with the command that installs them — unless {@code
 * SHARDWISE_REQUIRE_BROWSER} is set, as CI sets it, and then they fail.
 */
final class Browser implements AutoCloseable {

  private static final String CHROME = env("CHROME_BIN", "/usr/bin/chromium");
  private static final String DRIVER = env("CHROMEDRIVER", "/usr/bin/chromedriver");

  final WebDriver driver;
  private final Path profile;

  Browser(Path profile) {
    this.profile = profile;
    boolean present = new File(CHROME).canExecute() && new File(DRIVER).canExecute();
    String missing = "no " + CHROME + " or " + DRIVER + "; install them with: sudo apt-get install -y chromium chromium-driver";
    if (!present) {
      if (System.getenv("SHARDWISE_REQUIRE_BROWSER") != null) {
        Assertions.fail(missing);
      }
      Assumptions.abort(missing);
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROME);
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
        "--window-size=1400,1000", "--user-data-dir=" + profile.toAbsolutePath());
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(DRIVER)).usingAnyFreePort().build();
    this.driver = new ChromeDriver(service, options);
    driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(10));
  }

  /**
   * A wait that polls every 100 ms. The console re-renders its tables on every refresh, so an element
   * found in one poll may be gone by the time it is read: a stale reference is a reason to poll again.
   */
  WebDriverWait waiting(Duration atMost) {
    WebDriverWait wait = new WebDriverWait(driver, atMost, Duration.ofMillis(100));
    wait.ignoring(StaleElementReferenceException.class);
    return wait;
  }

  /** The text of the element {@code by} finds, read again if the page re-rendered it in between. */
  String text(By by) {
    return waiting(Duration.ofSeconds(10)).until(d -> d.findElement(by).getText());
  }

  /** An attribute of the element {@code by} finds, read again if the page re-rendered it in between. */
  String attribute(By by, String name) {
    return waiting(Duration.ofSeconds(10)).until(d -> d.findElement(by).getAttribute(name));
  }

  /** Saves what the page shows as {@code target/NAME.png}, for a reviewer to look at. */
  Path screenshot(String name) throws IOException {
    File shot = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE);
    Path out = Path.of("target", name + ".png");
    Files.createDirectories(out.getParent());
    Files.copy(shot.toPath(), out, StandardCopyOption.REPLACE_EXISTING);
    return out;
  }

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  @Override
  public void close() {
    driver.quit();
  }
}
