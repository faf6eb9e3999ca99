// The "add a shard" lab: asks /api/v1/simulate for every key's shard before and after a change.
"use strict";

const NAMES = {
  mod: "hash mod N",
  ring: "consistent hashing",
  slots: "fixed slots",
  jump: "jump hash",
  rendezvous: "rendezvous",
  hashrange: "hash ranges",
  tokens: "random tokens",
  range: "key ranges",
};

const $ = (id) => document.getElementById(id);
let current = 4;       // shards now
let changedFrom = null; // shards before the last add/remove, or null when nothing changed yet
let pending = 0;

function strategies() {
  return [...document.querySelectorAll("#strategies input:checked")].map((c) => c.value);
}

function parameters(from, to) {
  const p = new URLSearchParams();
  const pasted = $("pasted").value.trim();
  if (pasted) {
    p.set("keyList", pasted);
  } else {
    p.set("keys", $("pattern").value);
    p.set("start", $("start").value);
    p.set("count", $("count").value);
  }
  p.set("from", from);
  p.set("to", to);
  p.set("strategy", strategies().join(",") || "mod");
  p.set("hash", $("hash").value);
  p.set("vnodes", $("vnodes").value);
  p.set("slots", $("slots").value);
  p.set("placements", "true");
  return p;
}

async function render() {
  const from = changedFrom === null ? current : changedFrom;
  const to = current;
  const ticket = ++pending;
  $("error").textContent = "";
  let report;
  try {
    // POST: a pasted key list can be longer than a URL should be.
    report = await api("/api/v1/simulate", { method: "POST", body: parameters(from, to) });
  } catch (e) {
    if (ticket === pending) $("error").textContent = e.message;
    document.body.dataset.state = "error";
    return;
  }
  if (ticket !== pending) return; // a newer request is on its way
  draw(report);
  document.body.dataset.from = from;
  document.body.dataset.to = to;
  document.body.dataset.state = "ready";
}

function draw(report) {
  const head = $("grid").tHead;
  const body = $("grid").tBodies[0];
  head.replaceChildren();
  body.replaceChildren();
  const changed = report.from !== report.to;
  const minimum = Math.round(report.results.length ? report.results[0].theoreticalFraction * report.keys : 0);
  const hr = el("tr", {}, el("th", {}, "Key"));
  for (const r of report.results) {
    const th = el("th", { "data-strategy": r.strategy, "data-moved": r.moved },
      el("div", { class: "name" }, NAMES[r.strategy] || r.strategy));
    if (changed) {
      th.append(el("div", { class: "moved-count" }, `${r.moved} moved (${fmtPct(r.movedFraction)})`));
      th.append(el("div", { class: "minimum" }, `minimum ${minimum} (${fmtPct(r.theoreticalFraction)})`));
    } else {
      th.append(el("div", { class: "minimum" }, `${report.to} shards`));
    }
    hr.append(th);
  }
  head.append(hr);
  report.placedKeys.forEach((key, i) => {
    const tr = el("tr", {}, el("td", { class: "key" }, key));
    for (const r of report.results) {
      const a = r.placement.before[i];
      const b = r.placement.after[i];
      const moved = a !== b;
      tr.append(el("td", { class: "cell" + (moved ? " moved" : ""), "data-strategy": r.strategy,
        title: moved ? `${key}: shard ${a} → ${b}` : `${key}: shard ${b}` }, moved ? `${a} → ${b}` : b));
    }
    body.append(tr);
  });
  $("summary").textContent = changed
    ? `${fmtInt(report.keys)} keys, ${report.from} → ${report.to} shards, hash ${report.hash}. Red: the key moved.`
    : `${fmtInt(report.keys)} keys on ${report.to} shards, hash ${report.hash}. Add or remove a shard to see what moves.`;
  drawCharts(report);
}

// Keys per shard, before (grey) and after (blue): how even each strategy spreads the keys.
function drawCharts(report) {
  const charts = $("charts");
  charts.replaceChildren();
  const shards = Math.max(report.from, report.to);
  const w = Math.max(160, Math.min(420, shards * 18 + 20));
  const h = 90;
  for (const r of report.results) {
    const max = Math.max(1, ...r.loadBefore, ...r.loadAfter);
    const box = svg("svg", { width: w, height: h + 16, class: "bars", "data-strategy": r.strategy });
    const slot = (w - 10) / shards;
    for (let s = 0; s < shards; s++) {
      const before = r.loadBefore[s] || 0;
      const after = r.loadAfter[s] || 0;
      const bw = Math.max(1, slot / 2 - 1);
      const hb = (before / max) * h;
      const ha = (after / max) * h;
      box.append(svg("rect", { x: 5 + s * slot, y: h - hb, width: bw, height: hb, fill: "#b9c0cc" }));
      box.append(svg("rect", { x: 5 + s * slot + bw, y: h - ha, width: bw, height: ha, fill: "#2f6fde" }));
    }
    const label = svg("text", { x: 5, y: h + 13, "font-size": 11, fill: "#6b7385" });
    label.textContent = `peak/avg ${r.before.peakToAverage.toFixed(2)} → ${r.after.peakToAverage.toFixed(2)}`;
    box.append(label);
    charts.append(el("div", { class: "chart" },
      el("div", { class: "title" }, (NAMES[r.strategy] || r.strategy) + ": keys per shard"),
      box,
      el("div", { class: "legend" }, el("span", { class: "swatch", style: "background:#b9c0cc" }), "before",
        el("span", { class: "swatch", style: "background:#2f6fde" }), "after")));
  }
}

function change(delta) {
  const next = current + delta;
  if (next < 1 || next > 1024) {
    $("error").textContent = "shards must stay between 1 and 1024";
    return;
  }
  changedFrom = current;
  current = next;
  $("shards").value = current;
  render();
}

function reset() {
  const n = parseInt($("shards").value, 10);
  if (!(n >= 1)) {
    $("error").textContent = "shards must be a whole number of at least 1";
    return;
  }
  current = n;
  changedFrom = null;
  render();
}

$("add-shard").addEventListener("click", () => change(1));
$("remove-shard").addEventListener("click", () => change(-1));
$("shards").addEventListener("change", reset);
for (const id of ["pattern", "start", "count", "pasted", "hash", "vnodes", "slots"]) {
  $(id).addEventListener("change", reset);
}
document.querySelectorAll("#strategies input").forEach((c) => c.addEventListener("change", render));
reset();
