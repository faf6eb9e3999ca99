#!/usr/bin/env python3
"""Turns bench/compare.sh's results (target/bench/*.json, YCSB's text output) into Markdown tables
and puts them into docs/benchmarks.md between "<!-- bench:begin -->" and "<!-- bench:end -->"."""
import json
import os
import platform
import re
import subprocess
import sys
import time

out_dir, doc = sys.argv[1], sys.argv[2]


def load(name):
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def ms(us):
    return f"{us / 1000:.2f}"


lines = []
first = None
for w in "abcdef":
    r = load(f"workload-{w}.json")
    if r is None:
        continue
    first = first or r
    lines.append(f"\n**Workload {w.upper()}** — {r['records']:,} records, {r['valueSize']}-byte values, "
                 f"{r['distribution']}, {r['threads']} threads, warm-up {r['warmupSeconds']:.0f} s, run {r['seconds']:.0f} s "
                 f"(shard spread: peak-to-average {r['spread']['shardPeakToAverage']} over shards, "
                 f"{r['spread']['nodePeakToAverage']} over nodes)\n")
    lines.append("| target | ops/s | vs shardwise | operation | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | errors |")
    lines.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    targets = [("shardwise", r)] + list(r.get("baselines", {}).items())
    for name, t in targets:
        ops = [k for k in ("read", "update", "insert", "scan", "read-modify-write") if k in t]
        ratio = "1.00" if name == "shardwise" else f"{t['throughput'] / r['throughput']:.2f}x"
        errors = sum(t["errors"].values())
        throughput = f"{t['throughput']:,.0f}"
        for i, op in enumerate(ops):
            s = t[op]
            lead = (name, throughput, ratio) if i == 0 else ("", "", "")
            lines.append(f"| {lead[0]} | {lead[1]} | {lead[2]} "
                         f"| {op} | {ms(s['p50'])} | {ms(s['p95'])} | {ms(s['p99'])} | {ms(s['p999'])} | {ms(s['max'])} "
                         f"| {errors if i == 0 else ''} |")

reb = load("rebalance.json")
if reb is not None and "rebalance" in reb:
    rb = reb["rebalance"]
    lines.append(f"\n**Rebalance under load** — workload B, {reb['records']:,} records, {reb['threads']} threads; "
                 f"a fourth node joins after a third of the run and its plan is approved\n")
    lines.append("| phase | seconds | ops/s | p50 ms | p99 ms |")
    lines.append("|---|---:|---:|---:|---:|")
    for phase in ("before", "during", "after"):
        if phase in rb:
            p = rb[phase]
            lines.append(f"| {phase} | {p['seconds']:.1f} | {p['throughput']:,.0f} | {ms(p['p50'])} | {ms(p['p99'])} |")
    if "plan" in rb:
        lines.append(f"\nPlan {rb['plan']} ({rb['state']}): {rb['moves']} moves, {rb['movedBytes'] / 1e6:.1f} MB "
                     f"({rb['movedKeys']:,} keys) in {rb['moveSeconds']:.1f} s = {rb['moveMBps']:.1f} MB/s; "
                     f"longest write pause {rb['longestWritePauseMs']:.1f} ms.")

bz = load("bench-zk-a.json")
ycsb_path = os.path.join(out_dir, "ycsb-run-a.txt")
if bz is not None and os.path.exists(ycsb_path):
    text = open(ycsb_path).read()

    def metric(section, name):
        m = re.search(r"^\[" + re.escape(section) + r"\], " + re.escape(name) + r", ([0-9.]+)$", text, re.M)
        return float(m.group(1)) if m else float("nan")

    yt = metric("OVERALL", "Throughput(ops/sec)")
    lines.append("\n**YCSB's driver vs `shardwise bench`** — workload A on one dev cluster (its own JVM), "
                 f"{bz['records']:,} records, {bz['threads']} threads\n")
    lines.append("| driver | ops/s | read p99 ms | update p99 ms |")
    lines.append("|---|---:|---:|---:|")
    lines.append(f"| shardwise bench --zk (warm-up {bz['warmupSeconds']:.0f} s, run {bz['seconds']:.0f} s) | {bz['throughput']:,.0f} "
                 f"| {ms(bz['read']['p99'])} | {ms(bz['update']['p99'])} |")
    lines.append(f"| YCSB site.ycsb.Client + shardwise-ycsb ({metric('OVERALL', 'RunTime(ms)') / 1000:.0f} s, no warm-up) | {yt:,.0f} "
                 f"| {ms(metric('READ', '99thPercentileLatency(us)'))} | {ms(metric('UPDATE', '99thPercentileLatency(us)'))} |")
    lines.append(f"\nRatio YCSB / bench: {yt / bz['throughput']:.2f}.")

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
header = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit {commit} on "
          f"{os.cpu_count()} cores ({platform.machine()}) with `bench/compare.sh` "
          "(latencies from HdrHistogram; every figure of one table comes from the same run).\n")
block = "<!-- bench:begin -->\n" + header + "\n".join(lines) + "\n<!-- bench:end -->"
with open(doc) as f:
    current = f.read()
if "<!-- bench:begin -->" in current:
    current = re.sub(r"<!-- bench:begin -->.*<!-- bench:end -->", lambda _: block, current, flags=re.S)
else:
    current = current.rstrip() + "\n\n## `shardwise bench`: the standard comparison\n\n" + block + "\n"
with open(doc, "w") as f:
    f.write(current)
