// Helpers shared by the console pages.
"use strict";

async function api(path, options) {
  const response = await fetch(path, options);
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch (e) { body = { error: text }; }
  if (!response.ok) {
    throw new Error(body.error || ("HTTP " + response.status));
  }
  return body;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function fmtInt(n) { return Number(n).toLocaleString("en-US"); }

// Binary units with one decimal, as the CLI and the server print sizes (core.util.Bytes.human).
function fmtBytes(n) {
  if (Math.abs(n) < 1024) return Math.round(n) + " B";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n, i = -1;
  do { v /= 1024; i++; } while (Math.abs(v) >= 1024 && i < units.length - 1);
  return v.toFixed(1) + " " + units[i];
}

function fmtPct(f) { return (100 * f).toFixed(1) + "%"; }

function fmtRate(r) { return r >= 100 ? fmtInt(Math.round(r)) : Number(r).toFixed(1); }
