// The live cluster page: polls /api/v1/cluster every second and redraws.
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MILLIS = 1000;
let hotSort = "requestsPerSecond";
let last = null;

async function poll() {
  try {
    last = await api("/api/v1/cluster");
    $("error").textContent = "";
    draw(last);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.epoch = last.mapEpoch;
    document.body.dataset.loaded = "true";
  } catch (e) {
    $("error").textContent = "cannot read the cluster: " + e.message;
    // Until the first answer the placeholders say why nothing is shown.
    document.querySelectorAll(".loading").forEach((n) => { n.textContent = "not loaded: the cluster does not answer"; });
  } finally {
    setTimeout(poll, POLL_MILLIS);
  }
}

function draw(c) {
  drawStats(c);
  drawNodes(c);
  drawTables(c);
  drawReplication(c);
  drawRebalancing(c);
  drawHeat(c);
  // Rows re-sort by rate every poll; while the pointer is on the table they stay put, so a remedy
  // button does not move between aiming at it and clicking it.
  if (!$("hot").matches(":hover")) drawHot(c);
  drawFindings(c);
}

function stat(label, value, id) {
  return el("div", { class: "card stat", id }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

function drawStats(c) {
  const b = c.balancer;
  $("stats").replaceChildren(
    stat("nodes", c.nodes, "stat-nodes"),
    stat("tables", c.tables, "stat-tables"),
    stat("shards", fmtInt(c.shards), "stat-shards"),
    stat("map epoch", c.mapEpoch, "stat-epoch"),
    stat("balancer: " + b.state + (b.leader ? " (leader " + b.leader + ")" : ""), b.mode + (b.paused ? " · paused" : ""), "stat-balancer"));
}

function drawNodes(c) {
  const rows = c.nodeList.map((n) => {
    const skew = (what) => (n.skewed.includes(what) ? "num skewed" : "num");
    const labels = Object.entries(n.labels).map(([k, v]) => k + "=" + v).join(" ");
    return el("tr", { "data-node": n.id },
      el("td", {}, n.id),
      el("td", { class: "state-" + n.state }, n.state),
      el("td", { class: skew("shards") }, n.shards),
      el("td", { class: "num follows", title: "shards of replicated tables this node follows" }, n.follows),
      el("td", { class: skew("keys") }, fmtInt(n.keys)),
      el("td", { class: skew("bytes") }, fmtBytes(n.bytes)),
      el("td", { class: skew("requests") }, fmtRate(n.requestsPerSecond)),
      el("td", { class: "muted" }, n.address),
      el("td", { class: "muted" }, labels),
      el("td", { class: "num muted", title: "copies of shards the node keeps but does not serve, purged after its trash grace" },
        n.trashEntries === undefined ? "?" : n.trashEntries === 0 ? "empty" : `${n.trashEntries} (${fmtBytes(n.trashBytes)})`));
  });
  $("nodes").tBodies[0].replaceChildren(...rows);
  const b = c.balance;
  $("balance").textContent = `Peak-to-average over the nodes that can hold shards (up, not draining): shards ${b.shardsPeakToAverage}, ` +
    `bytes ${b.bytesPeakToAverage}, requests ${b.requestsPeakToAverage}. Orange: more than 1.25× the average. ` +
    `Sizes are ${c.sizesAgeSeconds}s old (read every 10 s).`;
}

// A measured value beside the threshold it is held against ("off" when the policy is off).
function ofLimit(value, limit, fmt) {
  if (limit === undefined) return fmt(value);
  if (limit < 0) return `${fmt(value)} · split off`;
  const share = value / limit;
  return el("span", { class: share >= 1 ? "over" : "", title: `split at ${fmt(limit)}` }, `${fmt(value)} · ${Math.round(100 * share)}% of ${fmt(limit)}`);
}

function policyText(p) {
  if (!p) return "fixed shards (this strategy does not split)";
  const merge = p.mergeFraction < 0 ? "no merges" : `merge under ${Math.round(100 * p.mergeFraction)}% for ${p.mergeSeconds} s`;
  const rate = p.splitRequestsPerSecond < 0 ? "" : ` or ${fmtInt(p.splitRequestsPerSecond)} req/s for ${p.splitRateSeconds} s`;
  const size = p.splitBytes < 0 ? "no size splits" : `split past ${fmtBytes(p.splitBytes)}`;
  return `${p.mode}: ${size}${rate}; ${merge}`;
}

function drawTables(c) {
  const rows = (c.tableList || []).map((t) => {
    const p = t.resizePolicy;
    return el("tr", { "data-table": t.name },
      el("td", {}, t.name), el("td", {}, t.strategy), el("td", { class: "num" }, fmtInt(t.shards)),
      el("td", { class: "replicas" }, replicasText(t)),
      el("td", { class: "num largest" }, ofLimit(t.largestShardBytes, p && p.splitBytes, fmtBytes)),
      el("td", { class: "num busiest" }, ofLimit(t.busiestShardRequestsPerSecond, p && p.splitRequestsPerSecond, fmtRate)),
      el("td", { class: "muted policy" }, policyText(p)),
      el("td", { class: "indexes" }, (t.indexes || []).map((i) => `${i.field} (${i.scope}${i.state === "ready" ? "" : ", " + i.state})`)
        .join(", ") || (t.format === "json" ? "none" : "–")),
      el("td", { class: "ring-members", title: "simulate's nodes 0, 1, … in order: each added its own points to the ring" },
        t.ringMembers ? t.ringMembers.join(", ") : "–"));
  });
  $("tables").tBodies[0].replaceChildren(...rows);
}

// A table's replicas, and how many of its shards are short of them.
function replicasText(t) {
  if (!t.replicas) return "1";
  const base = `${t.replicas} · min ${t.minInSync} in sync`;
  if (!t.underReplicated && !t.writesRefused) return base;
  const parts = [];
  if (t.writesRefused) parts.push(`${t.writesRefused} refusing writes`);
  if (t.underReplicated) parts.push(`${t.underReplicated} under-replicated`);
  return el("span", { class: "over" }, `${base} · ${parts.join(", ")}`);
}

// Shards of replicated tables short of replicas: leader down, writes refused, or under-replicated.
function drawReplication(c) {
  const list = c.replicationList || [];
  if (!list.length) {
    const replicated = (c.tableList || []).some((t) => t.replicas);
    $("replication").replaceChildren(el("p", { class: "muted", id: "replication-ok" }, replicated
      ? "Every shard of the replicated tables has all its replicas in sync."
      : "No table keeps more than one replica (table create --replicas N)."));
    return;
  }
  const rows = list.map((r) => el("tr", { "data-shard": r.shard },
    el("td", {}, r.shard), el("td", { class: r.leaderLive ? "" : "state-down" }, r.leader),
    el("td", {}, r.followers.join(", ") || "–"), el("td", {}, r.inSync.join(", ") || "none"),
    el("td", { class: "over problem" }, r.problem)));
  const parts = [el("table", { id: "replication-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "Shard"), el("th", {}, "Leader"), el("th", {}, "Followers"), el("th", {}, "In sync"),
      el("th", {}, "Problem"))),
    el("tbody", {}, ...rows))];
  if (c.replicationIssues > list.length) parts.push(el("p", { class: "muted" }, `…and ${c.replicationIssues - list.length} more`));
  $("replication").replaceChildren(...parts);
}

function planSummary(p) {
  const f = p.forecast;
  if (p.resizes) {
    const count = (kind) => p.resizes.filter((r) => r.kind === kind).length;
    const parts = [`${count("split")} splits`, `${count("merge")} merges`];
    if (count("isolate")) parts.push(`${count("isolate")} key isolations`);
    if (count("salt") + count("unsalt")) parts.push(`${count("salt")} counters to salt, ${count("unsalt")} to demote`);
    return el("div", {},
      el("div", {}, el("b", {}, p.id), ` · ${p.state} · ${p.reason}`),
      el("div", { class: "muted" }, parts.join(", ") + (count("isolate") ? "; cuts change only the map, then the key's shard moves"
        : "; only the map changes, no data is copied")),
      ...p.resizes.map((r) => el("div", { class: "muted resize", "data-state": r.state },
        `${r.kind} ${r.table}/${r.shard}${r.kind === "merge" ? "+" + r.rightShard : ""} on ${r.owner} · ${r.state}` +
        `${r.resultShards.length ? " → " + r.resultShards.join(", ") : ""} · ${r.error || r.why}`)));
  }
  return el("div", {},
    el("div", {}, el("b", {}, p.id), ` · ${p.state} · ${p.reason}`),
    el("div", { class: "muted" },
      `${p.moves.length} moves, ${fmtBytes(f.movedBytes)} of ${fmtBytes(f.totalBytes)} (${fmtPct(f.movedFraction)}; minimum ${fmtPct(f.minimumFraction)}); ` +
      `balance of shards ${p.balanceBefore.shardPeakToAverage.toFixed(2)} → ${f.shardPeakToAverageAfter.toFixed(2)}, ` +
      `bytes ${p.balanceBefore.bytesPeakToAverage.toFixed(2)} → ${f.bytesPeakToAverageAfter.toFixed(2)}; ` +
      `worst node off its share of bytes ${fmtPct(p.balanceBefore.bytesWorstShareDeviation)} → ${fmtPct(f.bytesWorstShareDeviationAfter)}`),
    ...p.notes.map((n) => el("div", { class: "muted" }, "note: " + n)));
}

async function act(id, action) {
  try {
    await api(`/api/v1/plans/${id}/${action}`, { method: "POST" });
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = `${action} ${id}: ${e.message}`;
  }
}

function movesTable(p) {
  const rows = p.moves.map((m) => {
    const pr = m.progress;
    const total = pr ? pr.totalBytes : m.bytes;
    const done = m.state === "done" ? total : pr ? pr.copiedBytes : 0;
    const bar = el("progress", { max: Math.max(1, total), value: done });
    return el("tr", { "data-shard": m.shard, "data-state": m.state },
      el("td", {}, m.shard), el("td", {}, (m.kind ? m.kind + " " : "") + m.from + " → " + m.to), el("td", { class: "move-state" }, m.state + (pr && m.state === "moving" ? " · " + pr.phase : "")),
      el("td", {}, bar), el("td", { class: "num" }, fmtBytes(m.bytes)), el("td", { class: "muted" }, m.error || ""));
  });
  return el("table", { class: "moves" },
    el("thead", {}, el("tr", {}, el("th", {}, "Shard"), el("th", {}, "Move"), el("th", {}, "State"), el("th", {}, "Progress"),
      el("th", { class: "num" }, "Bytes"), el("th", {}, ""))),
    el("tbody", {}, ...rows));
}

function drawRebalancing(c) {
  const out = [];
  const { pendingList, active, last: done } = c.plans;
  // Every plan that waits, oldest first: an operator's plan is never hidden behind a newer suggestion.
  for (const pending of pendingList || []) {
    out.push(el("div", { class: "card plan pending-plan", "data-plan": pending.id },
      el("div", {}, el("b", {}, `Waiting for approval: ${pending.id}`)), planSummary(pending),
      el("div", { class: "actions" },
        el("button", { class: "approve", type: "button", onclick: () => act(pending.id, "approve") }, "Approve"),
        el("button", { class: "reject danger", type: "button", onclick: () => act(pending.id, "reject") }, "Reject"))));
  }
  if (active) {
    const moved = active.moves.filter((m) => m.state === "done").length;
    out.push(el("div", { class: "card plan", id: "active-plan", "data-plan": active.id, "data-state": active.state },
      el("div", {}, el("b", {}, `Running: ${moved} of ${active.moves.length} moves done`)), planSummary(active),
      movesTable(active),
      el("div", { class: "actions" },
        el("button", { id: "cancel", type: "button", class: "danger", onclick: () => act(active.id, "cancel") }, "Cancel"))));
  }
  if (done) {
    const r = done.report;
    out.push(el("div", { class: "card plan", id: "last-plan", "data-plan": done.id, "data-state": done.state },
      el("div", {}, el("b", {}, "Last plan: " + done.state)), planSummary(done),
      r && !done.resizes ? el("div", { id: "report" }, `Report: ${r.movesCutOver} moves cut over, ${fmtInt(r.movedKeys)} keys, ${fmtBytes(r.movedBytes)} ` +
        `in ${(r.durationMillis / 1000).toFixed(1)} s; longest write pause ${(r.longestWritePauseMicros / 1000).toFixed(1)} ms.`) : null,
      done.error ? el("div", { class: "error" }, done.error) : null));
  }
  if (!out.length) {
    out.push(el("p", { class: "muted" }, "No plan waiting or running. The balancer proposes one when nodes join, leave or are drained."));
  }
  if (c.recentResizes && c.recentResizes.length) {
    out.push(el("div", { class: "card", id: "recent-resizes" },
      el("div", {}, el("b", {}, "Recent splits and merges")),
      ...c.recentResizes.map((r) => el("div", { class: "muted" },
        `${new Date(r.finishedMillis).toISOString().slice(11, 19)} · ${r.kind} ${r.shard} on ${r.owner} → ${r.resultShards.join(", ")} · ${r.why}`))));
  }
  $("rebalancing").replaceChildren(...out);
}

// One square per shard, grouped by owner; darker is busier (or bigger).
function drawHeat(c) {
  const metric = $("heat-metric").value;
  const max = Math.max(1e-9, ...c.shardList.map((s) => s[metric]));
  const byNode = new Map(c.nodeList.map((n) => [n.id, []]));
  for (const s of c.shardList) {
    if (!byNode.has(s.owner)) byNode.set(s.owner, []);
    byNode.get(s.owner).push(s);
  }
  const rows = [];
  for (const [node, shards] of byNode) {
    const cells = shards.map((s) => {
      const v = s[metric] / max;
      const color = v === 0 ? "#e9edf3" : `rgba(229, 72, 77, ${0.15 + 0.85 * v})`;
      return el("div", { class: "cell", style: "background:" + color,
        title: `${s.table}/${s.number}: ${fmtRate(s.requestsPerSecond)} req/s, ${fmtBytes(s.bytes)}, ${fmtInt(s.keys)} keys` });
    });
    rows.push(el("div", { class: "node-row", "data-node": node }, el("div", { class: "node-name" }, `${node} (${shards.length})`),
      el("div", { class: "cells" }, ...cells)));
  }
  $("heat").replaceChildren(...rows);
}

function drawHot(c) {
  const key = (s) => (hotSort === "shard" ? s.table + "/" + String(s.number).padStart(6, "0") : s[hotSort]);
  const shards = [...c.shardList].sort((a, b) => {
    const x = key(a), y = key(b);
    if (typeof x === "string") return x < y ? -1 : x > y ? 1 : 0;
    return y - x;
  }).slice(0, 20);
  $("hot").tBodies[0].replaceChildren(...shards.map((s) => el("tr", {},
    el("td", {}, s.table + "/" + s.number), el("td", {}, s.owner), el("td", { class: "num" }, fmtRate(s.requestsPerSecond)),
    el("td", { class: "num" }, fmtRate(s.readsPerSecond)), el("td", { class: "num" }, fmtRate(s.writesPerSecond)),
    el("td", { class: "num" }, fmtInt(s.keys)), el("td", { class: "num" }, fmtBytes(s.bytes)),
    el("td", { class: "hot-keys" }, (s.hotKeys || []).map((k) => k.key + " " + Math.round(100 * k.share) + "%").join(", ") || "–"),
    el("td", { class: "trend", title: s.trend || "" }, s.shareHistory ? sparkline(s.shareHistory) : ""),
    el("td", { class: "remedy" }, ...(s.hotKeys || []).filter((k) => k.remedy).map((k) => remedyButton(s, k))))));
}

// A hot shard's share of its table's requests over the last minute, one point a second.
function sparkline(shares) {
  const w = 120, h = 24, n = shares.length;
  const points = shares.map((v, i) => `${n < 2 ? 0 : (i * w / (n - 1)).toFixed(1)},${(h - Math.min(1, v) * h).toFixed(1)}`).join(" ");
  const box = svg("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, class: "sparkline" });
  box.append(svg("polyline", { points, fill: "none", stroke: "#e5484d", "stroke-width": 1.5 }));
  return box;
}

function drawFindings(c) {
  const list = c.hotspotFindings || [];
  $("findings").replaceChildren(...(list.length ? list : ["no findings yet: they need two readings a second apart"])
    .map((f) => el("li", { class: f.startsWith("no hotspot") ? "muted" : "finding" }, f)));
}

// A key that takes at least half of its shard's requests gets the remedy that fits it: a plan that
// isolates it (it then waits under Rebalancing for Approve / Reject), or, for a write-hot counter
// on a table placed by hash, salting it at once.
function remedyButton(s, k) {
  const label = k.remedy === "salt" ? "Salt " + k.key : "Isolate " + k.key;
  return el("button", { type: "button", class: "remedy-" + k.remedy, "data-key": k.key, title: k.finding, onclick: async () => {
    try {
      const body = new URLSearchParams({ table: s.table, key: k.keyBase64 });
      const r = await api(`/api/v1/hotspots/${k.remedy}`, { method: "POST", body });
      $("hotspot-result").textContent = k.remedy === "salt" ? `${k.key}: ${r.state}, ${r.fanout} sub-keys`
        : `${k.key}: plan ${r.id} waits for approval under Rebalancing`;
      $("hotspot-result").dataset.state = "done";
    } catch (e) {
      // Here, not in #error: the next poll clears that one, and a refused remedy must stay readable.
      $("hotspot-result").textContent = `${label} was refused: ${e.message}`;
      $("hotspot-result").dataset.state = "refused";
    }
  } }, label);
}

document.querySelectorAll("#hot th.sortable").forEach((th) => th.addEventListener("click", () => {
  hotSort = th.dataset.sort;
  document.querySelectorAll("#hot th").forEach((h) => h.classList.toggle("sorted", h === th));
  if (last) drawHot(last);
}));
$("heat-metric").addEventListener("change", () => last && drawHeat(last));
poll();
