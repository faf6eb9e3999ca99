package io.shardwise.console;

import io.shardwise.client.TableSpec;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.shardwise.client.ShardwiseClient;
import io.shardwise.core.key.Key;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;

/**
 * The console's two pages in a real browser (headless Chromium) against a real cluster: the lab's
 * red cells agree with the API, and a plan suggested when a node joins is approved with a click and
 * seen to finish. Screenshots go to {@code target/console-*.png}.
 */
@Tag("browser")
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class) // one cluster: its shard counts follow the order
class ConsoleBrowserTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<String> STRATEGIES = List.of("mod", "ring", "slots");

  @TempDir static Path dir;
  private static LocalCluster cluster;

  @BeforeAll
  static void start() {
    cluster = new LocalCluster(dir.resolve("cluster"), 3);
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static JsonNode api(String pathAndQuery) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create(cluster.console.url() + pathAndQuery)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private static void awaitShards(Browser browser, int from, int to) {
    browser.waiting(Duration.ofSeconds(15)).until(d -> {
      WebElement body = d.findElement(By.tagName("body"));
      return "ready".equals(body.getAttribute("data-state")) && String.valueOf(from).equals(body.getAttribute("data-from"))
          && String.valueOf(to).equals(body.getAttribute("data-to"));
    });
  }

  private static By pendingPlan(String planId) {
    return By.cssSelector(".pending-plan[data-plan='" + planId + "']");
  }

  /** Waits until the page lists a plan waiting for approval whose card says {@code saying}, and returns its id. */
  private static String awaitPendingPlan(Browser browser, Duration atMost, String saying) {
    return browser.waiting(atMost).until(d -> d.findElements(By.cssSelector(".pending-plan")).stream()
        .filter(card -> card.getText().contains(saying)).map(card -> card.getAttribute("data-plan")).findFirst().orElse(null));
  }

  /** Clicks the plan's Approve (the card is drawn again with every poll: found and clicked in one step, again if it went stale). */
  private static void approve(Browser browser, String planId) {
    browser.waiting(Duration.ofSeconds(10)).until(d -> {
      d.findElement(By.cssSelector(".pending-plan[data-plan='" + planId + "'] button.approve")).click();
      return true;
    });
  }

  /** Red cells per column on the page equal the moved counts the API reports for the same parameters. */
  private static void assertRedCellsMatchTheApi(Browser browser, int from, int to) throws Exception {
    String query = "api/v1/simulate?keys=" + URLEncoder.encode("key-%02d", StandardCharsets.UTF_8)
        + "&start=1&count=40&from=" + from + "&to=" + to + "&strategy=mod,ring,slots&hash=murmur3-128&vnodes=100&slots=1024";
    JsonNode report = api(query);
    for (int i = 0; i < STRATEGIES.size(); i++) {
      String strategy = STRATEGIES.get(i);
      long moved = report.get("results").get(i).get("moved").asLong();
      int red = browser.driver.findElements(By.cssSelector("#grid td.cell.moved[data-strategy='" + strategy + "']")).size();
      int cells = browser.driver.findElements(By.cssSelector("#grid td.cell[data-strategy='" + strategy + "']")).size();
      assertThat(cells).as(strategy).isEqualTo(40);
      assertThat(red).as(strategy + ": red cells vs the API's moved count").isEqualTo(moved);
      String header = browser.driver.findElement(By.cssSelector("#grid th[data-strategy='" + strategy + "'] .moved-count")).getText();
      assertThat(header).startsWith(moved + " moved");
    }
  }

  @Test
  @org.junit.jupiter.api.Order(1)
  void labAddShardTurnsExactlyTheMovedKeysRedAndTheRingMovesFarFewerThanModN() throws Exception {
    try (Browser browser = new Browser(dir.resolve("profile-lab"))) {
      browser.driver.get(cluster.console.url() + "lab");
      awaitShards(browser, 4, 4);
      assertThat(browser.driver.findElements(By.cssSelector("#grid td.cell.moved"))).isEmpty();
      assertThat(browser.driver.findElements(By.cssSelector("#grid tbody tr"))).hasSize(40);

      browser.driver.findElement(By.id("add-shard")).click();
      awaitShards(browser, 4, 5);
      assertRedCellsMatchTheApi(browser, 4, 5);
      int mod = browser.driver.findElements(By.cssSelector("#grid td.cell.moved[data-strategy='mod']")).size();
      int ring = browser.driver.findElements(By.cssSelector("#grid td.cell.moved[data-strategy='ring']")).size();
      assertThat(ring).as("ring moves far fewer keys than mod N").isLessThan(mod / 2);
      assertThat(browser.driver.findElements(By.cssSelector("#charts svg.bars"))).hasSize(STRATEGIES.size());
      browser.screenshot("console-lab");

      browser.driver.findElement(By.id("remove-shard")).click();
      awaitShards(browser, 5, 4);
      assertRedCellsMatchTheApi(browser, 5, 4);

      // A bad count is refused with the server's message, and nothing is drawn from it.
      WebElement count = browser.driver.findElement(By.id("count"));
      count.clear();
      count.sendKeys("5000");
      browser.driver.findElement(By.id("hash")).click(); // leaves the field: a change event
      browser.waiting(Duration.ofSeconds(10)).until(ExpectedConditions.textToBePresentInElementLocated(
          By.id("error"), "the lab grid shows at most 1000 keys"));
    }
  }

  @Test
  @org.junit.jupiter.api.Order(2)
  void clusterPageShowsTheSuggestedPlanAndApprovingItInTheBrowserMovesShardsToTheNewNode() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("users", TableSpec.builder("slots").slots(12).replicas(1).build());
    for (int i = 0; i < 400; i++) {
      client.put("users", Key.of("user-" + i), ("{\"n\": " + i + "}").getBytes(StandardCharsets.UTF_8));
    }
    // Readers keep the page's request rates honest: one hot key, and a spread over the rest.
    java.util.concurrent.atomic.AtomicBoolean reading = new java.util.concurrent.atomic.AtomicBoolean(true);
    Thread readers = new Thread(() -> {
      java.util.Random random = new java.util.Random(42);
      while (reading.get()) {
        try {
          client.get("users", Key.of(random.nextInt(4) == 0 ? "user-" + random.nextInt(400) : "user-7"));
        } catch (RuntimeException e) {
          // a read during a cutover may be refused and retried; the page is what is under test
        }
      }
    }, "readers");
    readers.start();
    try (Browser browser = new Browser(dir.resolve("profile-cluster"))) {
      browser.driver.get(cluster.console.url());
      browser.waiting(Duration.ofSeconds(15)).until(d -> d.findElements(By.cssSelector("#nodes tbody tr")).size() == 3);
      assertThat(browser.text(By.cssSelector("#stat-shards .value"))).isEqualTo("12");
      assertThat(browser.attribute(By.tagName("body"), "data-loaded")).isEqualTo("true");
      assertThat(browser.driver.findElements(By.cssSelector(".loading"))).as("every loading placeholder replaced by data").isEmpty();
      // The busiest shard is user-7's (three reads in four), and the page names the key.
      browser.waiting(Duration.ofSeconds(20)).until(d -> d.findElement(By.cssSelector("#hot tbody tr td.hot-keys")).getText().startsWith("user-7 "));

      cluster.addNode();
      String planId = awaitPendingPlan(browser, Duration.ofSeconds(30), "n4");
      assertThat(browser.text(pendingPlan(planId))).contains("moves").contains("n4");
      browser.screenshot("console-cluster-pending");
      approve(browser, planId);

      // The plan runs, the page follows it, and when it is done n4 holds its share.
      browser.waiting(Duration.ofSeconds(60)).until(ExpectedConditions.attributeToBe(By.id("last-plan"), "data-state", "done"));
      assertThat(browser.attribute(By.id("last-plan"), "data-plan")).isEqualTo(planId);
      assertThat(browser.text(By.id("report"))).contains("moves cut over");
      // As many shards as the plan moved there: its share (3 of 12), or fewer when the move planner's
      // load guard kept the hot key's shard from taking company (a later plan then moves the rest).
      long onN4;
      try (io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(cluster.cluster.zk(),
          Duration.ofSeconds(10), Duration.ofSeconds(10))) {
        onN4 = new io.shardwise.server.balance.RebalanceRecords(admin).plan(planId).orElseThrow().getMovesList().stream()
            .filter(m -> m.getTo().equals("n4") && m.getState() == io.shardwise.proto.v1.MoveRecord.State.DONE).count();
      }
      assertThat(onN4).as("the plan moved shards to n4").isPositive();
      assertThat(client.listTables().stream().flatMap(t -> t.shards().stream()).filter(sh -> sh.owner().equals("n4")).count())
          .isEqualTo(onN4);
      browser.waiting(Duration.ofSeconds(10)).until(d -> {
        List<WebElement> cells = d.findElements(By.cssSelector("#nodes tr[data-node='n4'] td"));
        return cells.size() > 2 && Integer.parseInt(cells.get(2).getText()) == onN4;
      });
      // Reads follow the shards: the page shows n4 serving, and the hot key's shard on top.
      browser.waiting(Duration.ofSeconds(15)).until(d ->
          !d.findElement(By.cssSelector("#nodes tr[data-node='n4'] td:nth-child(7)")).getText().equals("0.0")
              && !d.findElement(By.cssSelector("#hot tbody tr td:nth-child(3)")).getText().equals("0.0"));
      // Each up node says what its trash keeps (the moved-away copies go there after the drop grace).
      browser.waiting(Duration.ofSeconds(10)).until(d ->
          d.findElement(By.cssSelector("#nodes tr[data-node='n1'] td:nth-child(10)")).getText().matches("empty|\\d+ \\(.*\\)"));
      browser.screenshot("console-cluster");
    } finally {
      reading.set(false);
      readers.join();
    }
    for (int i = 0; i < 400; i++) {
      assertThat(client.get("users", Key.of("user-" + i))).as("user-" + i).isPresent();
    }
  }

  /** Last, on the same cluster: a split the balancer proposes by size is approved in the browser and only the map changes. */
  @Test
  @org.junit.jupiter.api.Order(3)
  void aSplitProposedBySizeIsShownWithWhyAndApprovedInTheBrowser() throws Exception {
    ShardwiseClient client = cluster.client();
    try (io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(cluster.cluster.zk(),
        Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      new io.shardwise.server.balance.RebalanceRecords(admin).updateSettings(s -> s.toBuilder().putTableSplitBytes("events", 64 << 10).build());
      client.createTable("events", TableSpec.builder("range").shards(1).replicas(1).build());
      client.createTable("circle", TableSpec.builder("ring").vnodes(4).replicas(1).build());
      byte[] filler = new byte[200];
      for (int i = 0; i < 1_000; i++) {
        client.put("events", Key.of(String.format("event-%05d", i)), filler);
      }
      try (Browser browser = new Browser(dir.resolve("profile-resize"))) {
        browser.driver.get(cluster.console.url());
        String planId = awaitPendingPlan(browser, Duration.ofSeconds(30), "1 splits, 0 merges");
        // The tables section puts the shard that passed its split size beside that size, and names a ring's members.
        // (sizes are read every 10 s: until then the shard shows 0 B)
        browser.waiting(Duration.ofSeconds(30)).until(d ->
            !d.findElements(By.cssSelector("#tables tr[data-table='events'] td.largest span.over")).isEmpty());
        assertThat(browser.text(By.cssSelector("#tables tr[data-table='events'] td.largest"))).matches(".* KiB · \\d+% of 64.0 KiB");
        assertThat(browser.text(By.cssSelector("#tables tr[data-table='events'] td.policy"))).startsWith("suggest: split past 64.0 KiB");
        assertThat(browser.text(By.cssSelector("#tables tr[data-table='circle'] td.ring-members"))).isEqualTo("n1, n2, n3, n4");
        assertThat(browser.text(By.cssSelector("#tables tr[data-table='users'] td.policy"))).contains("does not split");
        assertThat(browser.text(pendingPlan(planId))).contains("split events/0").contains("past the split size of 64.0 KiB")
            .contains("only the map changes");
        browser.screenshot("console-resize-pending");
        approve(browser, planId);
        browser.waiting(Duration.ofSeconds(30)).until(d -> {
          List<WebElement> last = d.findElements(By.id("last-plan"));
          return !last.isEmpty() && planId.equals(last.get(0).getAttribute("data-plan")) && "done".equals(last.get(0).getAttribute("data-state"));
        });
        assertThat(browser.text(By.id("last-plan"))).contains("split events/0").contains("done →");
        browser.waiting(Duration.ofSeconds(10)).until(d -> !d.findElements(By.id("recent-resizes")).isEmpty());
        assertThat(browser.text(By.id("recent-resizes"))).contains("split events/0 on").contains("past the split size");
        browser.screenshot("console-resize-done");
      }
      assertThat(admin.syncedMap().table("events").orElseThrow().shards()).hasSize(2);
    }
    for (int i = 0; i < 1_000; i += 9) {
      assertThat(client.get("events", Key.of(String.format("event-%05d", i)))).isPresent();
    }
  }

  /**
   * Last of all (it stops a node): a table of three replicas shows its replicas and that all are
   * in sync; with n4 stopped, every shard that had a replica there is listed as under-replicated,
   * with its leader, followers and in-sync set.
   */
  @Test
  @org.junit.jupiter.api.Order(4)
  void aHotKeyIsIsolatedFromTheHotShardsTableAndThePlanApprovedUnderRebalancing() throws Exception {
    ShardwiseClient client = cluster.client();
    try (io.shardwise.server.coordination.Coordinator admin = io.shardwise.server.coordination.Coordinator.connect(cluster.cluster.zk(),
        Duration.ofSeconds(10), Duration.ofSeconds(10))) {
      // The balancer's own load policy stays out of it: the page's button makes the plan.
      new io.shardwise.server.balance.RebalanceRecords(admin).updateSettings(s -> s.toBuilder().putTableSplitRps("celebs", -1).build());
      client.createTable("celebs", TableSpec.builder("hashrange").shards(4).replicas(1).build());
      for (int i = 0; i < 200; i++) {
        client.put("celebs", Key.of("c-" + i), new byte[20]);
      }
      java.util.concurrent.atomic.AtomicBoolean reading = new java.util.concurrent.atomic.AtomicBoolean(true);
      Thread readers = new Thread(() -> {
        java.util.Random random = new java.util.Random(7);
        while (reading.get()) {
          try {
            client.get("celebs", Key.of(random.nextInt(5) == 0 ? "c-" + random.nextInt(200) : "c-7"));
          } catch (RuntimeException e) {
            // a read during the cutover may be refused and retried; the page is what is under test
          }
        }
      }, "celeb-readers");
      readers.start();
      try (Browser browser = new Browser(dir.resolve("profile-hotspots"))) {
        browser.driver.get(cluster.console.url());
        By isolate = By.cssSelector("#hot button.remedy-isolate[data-key='c-7']");
        browser.waiting(Duration.ofSeconds(30)).until(ExpectedConditions.elementToBeClickable(isolate));
        assertThat(browser.attribute(isolate, "title")).contains("'c-7' takes at least").contains("isolate it");
        // The findings name the hot shard, how it got hot and the remedy; its row draws its share over the last minute.
        browser.waiting(Duration.ofSeconds(20)).until(d -> d.findElement(By.id("findings")).getText().contains("one key, 'c-7'"));
        assertThat(browser.text(By.id("findings"))).contains("read-hot").contains("shardwise hotspots fix celebs 'c-7'");
        assertThat(browser.driver.findElements(By.cssSelector("#hot tbody tr td.trend svg.sparkline polyline"))).isNotEmpty();
        browser.waiting(Duration.ofSeconds(10)).until(d -> {
          d.findElement(isolate).click();
          return true;
        });
        // The remedy's answer stays on the page either way; a refusal fails here with its reason.
        browser.waiting(Duration.ofSeconds(15)).until(d -> d.findElement(By.id("hotspot-result")).getAttribute("data-state") != null);
        assertThat(browser.text(By.id("hotspot-result"))).contains("waits for approval");
        // The balancer may suggest a plan of its own meanwhile: the page lists both, the operator's included.
        String planId = awaitPendingPlan(browser, Duration.ofSeconds(15), "isolate celebs/");
        browser.screenshot("console-hotspot-pending");
        approve(browser, planId);
        browser.waiting(Duration.ofSeconds(60)).until(d -> !d.findElements(By.id("last-plan")).isEmpty()
            && planId.equals(d.findElement(By.id("last-plan")).getAttribute("data-plan"))
            && "done".equals(d.findElement(By.id("last-plan")).getAttribute("data-state")));
        browser.screenshot("console-hotspot-done");
      } finally {
        reading.set(false);
        readers.join();
      }
      io.shardwise.core.map.Table t = admin.syncedMap().table("celebs").orElseThrow();
      assertThat(io.shardwise.server.balance.Isolation.isolated(t, "c-7".getBytes(StandardCharsets.UTF_8))).isTrue();
    }
    for (int i = 0; i < 200; i++) {
      assertThat(client.get("celebs", Key.of("c-" + i))).as("c-%d", i).isPresent();
    }
  }

  @Test
  @org.junit.jupiter.api.Order(5)
  void aReplicatedTablesShardsShortOfReplicasAreListedWhenANodeStops() throws Exception {
    ShardwiseClient client = cluster.client();
    client.createTable("replicated", TableSpec.builder("hashrange").shards(4).replicas(3).build());
    for (int i = 0; i < 100; i++) {
      client.put("replicated", Key.of("r" + i), new byte[10]);
    }
    try (Browser browser = new Browser(dir.resolve("profile-replicas"))) {
      browser.driver.get(cluster.console.url());
      browser.waiting(Duration.ofSeconds(20)).until(d -> !d.findElements(By.cssSelector("#tables tr[data-table='replicated']")).isEmpty());
      assertThat(browser.text(By.cssSelector("#tables tr[data-table='replicated'] td.replicas"))).isEqualTo("3 · min 2 in sync");
      browser.waiting(Duration.ofSeconds(20)).until(d -> !d.findElements(By.id("replication-ok")).isEmpty());
      assertThat(browser.text(By.cssSelector("#nodes tr[data-node='n1'] td.follows"))).matches("\\d+");

      cluster.cluster.stopNode("n4");
      // Until the failover, a shard n4 led says "leader down"; then each lists n4 as an out-of-sync follower.
      browser.waiting(Duration.ofSeconds(30)).until(d -> {
        List<String> problems = d.findElements(By.cssSelector("#replication-table tbody tr td.problem")).stream().map(WebElement::getText)
            .toList();
        return !problems.isEmpty() && problems.stream().allMatch(p -> p.startsWith("under-replicated: 2 of 3 in sync"));
      });
      assertThat(browser.text(By.cssSelector("#tables tr[data-table='replicated'] td.replicas"))).contains("under-replicated");
      List<String> rows = browser.waiting(Duration.ofSeconds(10)).until(d ->
          d.findElements(By.cssSelector("#replication-table tbody tr")).stream().map(WebElement::getText).toList());
      assertThat(rows).isNotEmpty().allSatisfy(r -> assertThat(r).contains("replicated/").contains("n4"));
      browser.screenshot("console-replication");
    }
    for (int i = 0; i < 100; i += 7) {
      assertThat(client.get("replicated", Key.of("r" + i))).as("r%d", i).isPresent();
    }
  }
}
