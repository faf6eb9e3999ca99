package io.shardwise.console;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import io.javalin.http.staticfiles.Location;
import io.shardwise.proto.v1.PlanRecord;
import io.shardwise.server.balance.Rebalancing;
import io.shardwise.server.coordination.CoordinationException;
import io.shardwise.server.coordination.Coordinator;
import io.shardwise.server.rpc.Peers;
import java.time.Duration;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The web console: two pages (the "add a shard" lab and the live cluster) and the JSON API under
 * {@code /api/v1} that they use, served over HTTP by Javalin. Pages and API hold no state of
 * their own: the lab asks the core's simulation, the cluster page asks ZooKeeper and the nodes.
 * Everything the pages need ships in the jar (no CDN, no web fonts).
 *
 * <p>API (errors are {@code {"error": message, "status": code}}; bad parameters are 400):
 * <ul>
 *   <li>{@code GET /api/v1/simulate}: the parameters and JSON of {@code shardwise simulate}, plus
 *       {@code placements=true} (every key's node, at most {@value SimulationRequest#MAX_GRID_KEYS}
 *       keys) and {@code keyList} (pasted keys, one per line);
 *   <li>{@code GET /api/v1/cluster}: nodes, tables, shards with their load, balance, balancer and
 *       plans;
 *   <li>{@code GET /api/v1/shards?sort=requests|reads|writes|bytes|keys&limit=N}: the busiest shards;
 *   <li>{@code GET /api/v1/plans}, {@code GET /api/v1/plans/{id}}, {@code POST
 *       /api/v1/plans/{id}/approve|reject|cancel}.
 * </ul>
 */
public final class Console implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Console.class);
  /** Decimals as the CLI prints them (plain, no exponent), so the API and the CLI agree to the byte. */
  private static final ObjectMapper JSON = new ObjectMapper().enable(JsonGenerator.Feature.WRITE_BIGDECIMAL_AS_PLAIN);
  /** A form or query string larger than this is refused (a pasted key list is the largest input). */
  static final long MAX_REQUEST_BYTES = 256 * 1024;

  private final Coordinator coordinator;
  private final Peers peers;
  private final ClusterWatch watch;
  private final Rebalancing rebalancing;
  private final Javalin app;
  private final String host;

  private Console(Coordinator coordinator, String host, int port) {
    this.coordinator = coordinator;
    this.host = host.equals("0.0.0.0") ? "127.0.0.1" : host;
    this.peers = new Peers(16 << 20);
    this.watch = new ClusterWatch(coordinator, peers, System::nanoTime);
    this.rebalancing = new Rebalancing(coordinator);
    this.app = Javalin.create(config -> {
      config.showJavalinBanner = false;
      config.http.maxRequestSize = MAX_REQUEST_BYTES;
      config.staticFiles.add(files -> {
        files.hostedPath = "/";
        files.directory = "/console";
        files.location = Location.CLASSPATH;
      });
    });
    routes();
    app.start(host, port);
  }

  /**
   * Starts a console on {@code host:port} ({@code port} 0: a free one) for the cluster whose
   * ZooKeeper is {@code zk}.
   *
   * @throws CoordinationException if ZooKeeper cannot be reached
   */
  public static Console start(String host, int port, String zk) {
    Coordinator coordinator = Coordinator.connect(zk, Duration.ofSeconds(10), Duration.ofSeconds(5));
    try {
      Console console = new Console(coordinator, host, port);
      log.info("console on {}", console.url());
      return console;
    } catch (RuntimeException e) {
      coordinator.close();
      throw e;
    }
  }

  /** The port it serves on. */
  public int port() {
    return app.port();
  }

  /** The address of the cluster page, e.g. {@code http://127.0.0.1:8080/}. */
  public String url() {
    return "http://" + host + ":" + port() + "/";
  }

  private void routes() {
    app.get("/lab", ctx -> ctx.redirect("/lab.html"));
    app.get("/api/v1/simulate", this::simulate);
    app.post("/api/v1/simulate", this::simulate);
    app.get("/api/v1/cluster", ctx -> json(ctx, watch.view()));
    app.get("/api/v1/shards", ctx -> json(ctx, ClusterWatch.busiest(watch.view(),
        orDefault(ctx.queryParam("sort"), "requests"), intParam(ctx, "limit", 20))));
    app.get("/api/v1/plans", ctx -> {
      ArrayNode out = JSON.createArrayNode();
      rebalancing.records().plans().forEach(p -> out.add(PlanJson.plan(p)));
      json(ctx, out);
    });
    app.get("/api/v1/plans/{id}", ctx -> json(ctx, PlanJson.plan(plan(ctx.pathParam("id")))));
    app.post("/api/v1/plans/{id}/approve", ctx -> act(ctx, rebalancing::approve));
    app.post("/api/v1/plans/{id}/reject", ctx -> act(ctx, rebalancing::reject));
    app.post("/api/v1/plans/{id}/cancel", ctx -> act(ctx, rebalancing::cancel));
    // Hotspot remedies: an isolation is a plan that waits for approval; salting a counter runs at once.
    app.post("/api/v1/hotspots/isolate", ctx -> {
      PlanRecord plan = rebalancing.isolate(peers, requiredForm(ctx, "table"), hotKey(ctx), java.util.Optional.empty(), false);
      watch.invalidate();
      json(ctx, PlanJson.plan(plan));
    });
    app.post("/api/v1/hotspots/salt", ctx -> {
      int nodes = coordinator.liveNodesNow().size();
      String fanout = ctx.formParam("fanout");
      int n = fanout == null || fanout.isEmpty() ? io.shardwise.server.hot.Salting.defaultFanout(nodes)
          : parseInt("fanout", fanout);
      var salted = new io.shardwise.server.hot.Salting(coordinator, peers).promote(requiredForm(ctx, "table"),
          io.shardwise.core.key.Key.of(hotKey(ctx)), n, "operator: console");
      json(ctx, JSON.createObjectNode().put("table", salted.getTable()).put("state", salted.getState().name().toLowerCase(java.util.Locale.ROOT))
          .put("kind", salted.getList() ? "list" : "counter").put("fanout", salted.getFanout()).put("generation", salted.getGeneration()));
    });

    app.get("/api/v1/query", this::query);

    app.exception(IllegalArgumentException.class, (e, ctx) -> error(ctx, HttpStatus.BAD_REQUEST, e.getMessage()));
    app.exception(NotFound.class, (e, ctx) -> error(ctx, HttpStatus.NOT_FOUND, e.getMessage()));
    app.exception(IllegalStateException.class, (e, ctx) -> error(ctx, HttpStatus.CONFLICT, e.getMessage()));
    app.exception(CoordinationException.class, (e, ctx) -> error(ctx, HttpStatus.SERVICE_UNAVAILABLE, e.getMessage()));
    app.exception(Exception.class, (e, ctx) -> {
      log.warn("console: {} {} failed", ctx.method(), ctx.path(), e);
      error(ctx, HttpStatus.INTERNAL_SERVER_ERROR, "internal error: " + e);
    });
    app.error(HttpStatus.NOT_FOUND, ctx -> {
      // A handler's own 404 (no such plan) is already JSON; only an unknown path gets this one.
      String type = ctx.res().getContentType();
      if (ctx.path().startsWith("/api/") && (type == null || !type.startsWith("application/json"))) {
        error(ctx, HttpStatus.NOT_FOUND, "no such API: " + ctx.method() + " " + ctx.path());
      }
    });
    app.error(HttpStatus.CONTENT_TOO_LARGE, ctx -> error(ctx, HttpStatus.CONTENT_TOO_LARGE,
        "request larger than " + MAX_REQUEST_BYTES + " bytes"));
  }

  private void simulate(Context ctx) {
    // GET takes the query string; POST (a long pasted key list) a form. The same names either way.
    Function<String, String> param = ctx.method().name().equals("POST") ? ctx::formParam : ctx::queryParam;
    java.util.Set<String> names = ctx.method().name().equals("POST") ? ctx.formParamMap().keySet() : ctx.queryParamMap().keySet();
    SimulationRequest request = SimulationRequest.fromParameters(names, param).checkHttpLimits();
    json(ctx, SimulationOutput.toJson(request.run()));
  }

  /**
   * {@code GET /api/v1/query?table=T&where=COND[&limit=N][&page_token=TOKEN][&consistent=true][&fields=F1,F2]}: the
   * documents that meet the condition, as {@code shardwise query} gives them, asked of a live node:
   * rows (each document as JSON), complete, truncated, next_page_token and the plan (shards asked and
   * missing, rows examined and matched, bytes shipped, the slowest shard; through an async global
   * index, stale_possible or the consistent wait).
   */
  private void query(Context ctx) {
    io.shardwise.proto.v1.QueryRequest.Builder request = io.shardwise.proto.v1.QueryRequest.newBuilder()
        .setTable(requiredQuery(ctx, "table")).setWhere(requiredQuery(ctx, "where")).setLimit(intParam(ctx, "limit", 100))
        .setConsistent("true".equalsIgnoreCase(ctx.queryParam("consistent")));
    String fields = ctx.queryParam("fields");
    if (fields != null && !fields.isBlank()) {
      request.addAllFields(java.util.Arrays.stream(fields.split(",")).map(String::strip).toList());
    }
    String token = ctx.queryParam("page_token");
    if (token != null && !token.isEmpty()) {
      try {
        request.setPageToken(com.google.protobuf.ByteString.copyFrom(java.util.Base64.getUrlDecoder().decode(token)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("page_token is not a token a query gave", e);
      }
    }
    String node = coordinator.liveNodesNow().values().stream().map(io.shardwise.proto.v1.NodeInfo::getAddress).sorted().findFirst()
        .orElseThrow(() -> new CoordinationException("no live node to ask"));
    io.shardwise.proto.v1.QueryResponse r;
    try {
      r = peers.data(node).withDeadlineAfter(30, java.util.concurrent.TimeUnit.SECONDS).query(request.build());
    } catch (io.grpc.StatusRuntimeException e) {
      HttpStatus status = switch (e.getStatus().getCode()) {
        case INVALID_ARGUMENT, OUT_OF_RANGE, RESOURCE_EXHAUSTED -> HttpStatus.BAD_REQUEST;
        case NOT_FOUND -> HttpStatus.NOT_FOUND;
        default -> HttpStatus.SERVICE_UNAVAILABLE;
      };
      error(ctx, status, e.getStatus().getDescription() == null ? e.getStatus().getCode().name() : e.getStatus().getDescription());
      return;
    }
    ObjectNode out = JSON.createObjectNode().put("complete", r.getComplete()).put("truncated", r.getTruncated());
    if (!r.getNextPageToken().isEmpty()) {
      out.put("next_page_token", java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(r.getNextPageToken().toByteArray()));
    }
    ArrayNode rows = out.putArray("rows");
    for (io.shardwise.proto.v1.KeyValue kv : r.getRowsList()) {
      ObjectNode row = rows.addObject().put("key", kv.getKey().getPartitionKey().toStringUtf8());
      if (!kv.getKey().getSortKey().isEmpty()) {
        row.put("sort_key", kv.getKey().getSortKey().toStringUtf8());
      }
      row.put("version", kv.getVersion());
      try {
        row.set("document", JSON.readTree(kv.getValue().toByteArray()));
      } catch (java.io.IOException e) {
        row.put("value", kv.getValue().toStringUtf8()); // a table's documents always parse; said as text if one did not
      }
    }
    io.shardwise.proto.v1.QueryPlan p = r.getPlan();
    ObjectNode plan = out.putObject("plan").put("access", p.getAccess()).put("shards", p.getShards())
        .put("rows_examined", p.getRowsExamined()).put("rows_matched", p.getRowsMatched()).put("bytes_shipped", p.getBytesShipped())
        .put("slowest_shard_micros", p.getSlowestShardMicros()).put("index", p.getIndex()).put("index_entries", p.getIndexEntries())
        .put("index_shards", p.getIndexShards()).put("row_shards", p.getRowShards()).put("stale_possible", p.getStalePossible()).put("covered", p.getCovered())
        .put("consistent_wait_micros", p.getConsistentWaitMicros());
    ArrayNode missing = plan.putArray("missing_shards");
    p.getMissingShardsList().forEach(missing::add);
    ArrayNode lists = plan.putArray("posting_lists");
    for (int i = 0; i < Math.min(p.getIndexProbesCount(), p.getIndexProbeEntriesCount()); i++) {
      lists.addObject().put("probe", p.getIndexProbes(i)).put("entries", p.getIndexProbeEntries(i));
    }
    json(ctx, out);
  }

  private static String requiredQuery(Context ctx, String name) {
    String value = ctx.queryParam(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(name + " is required");
    }
    return value;
  }

  private PlanRecord plan(String id) {
    try {
      return rebalancing.records().plan(id).orElseThrow(() -> new NotFound("no plan " + id));
    } catch (IllegalArgumentException e) {
      throw new NotFound(e.getMessage());
    }
  }

  private void act(Context ctx, Function<String, PlanRecord> action) {
    String id = ctx.pathParam("id");
    plan(id);
    PlanRecord after = action.apply(id);
    watch.invalidate();
    json(ctx, PlanJson.plan(after));
  }

  private static String requiredForm(Context ctx, String name) {
    String value = ctx.formParam(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(name + " is required");
    }
    return value;
  }

  /** The hot key of a remedy request: its bytes, base64 (keys need not be text). */
  private static byte[] hotKey(Context ctx) {
    String key = requiredForm(ctx, "key");
    try {
      return java.util.Base64.getDecoder().decode(key);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("key must be the key's bytes in base64: " + e.getMessage(), e);
    }
  }

  private static int parseInt(String name, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be a whole number, not '" + value + "'", e);
    }
  }

  private static int intParam(Context ctx, String name, int fallback) {
    String value = ctx.queryParam(name);
    return value == null || value.isEmpty() ? fallback : parseInt(name, value);
  }


  private static String orDefault(String value, String fallback) {
    return value == null || value.isEmpty() ? fallback : value;
  }

  private static void json(Context ctx, JsonNode body) {
    try {
      ctx.contentType("application/json").result(JSON.writeValueAsString(body));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void error(Context ctx, HttpStatus status, String message) {
    ObjectNode body = JSON.createObjectNode().put("error", message == null ? status.getMessage() : message).put("status", status.getCode());
    ctx.status(status);
    json(ctx, body);
  }

  /** A missing plan or page: 404. */
  private static final class NotFound extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotFound(String message) {
      super(message);
    }
  }

  @Override
  public void close() {
    app.stop();
    peers.close();
    coordinator.close();
  }
}
