#!/usr/bin/env bash
# What the shell saves: one `kv get` as a process of its own (JVM start, ZooKeeper session, map
# fetch) against the same `kv get` inside `shardwise shell`, on a cluster of one ZooKeeper process
# and two node processes on this machine (ports chosen by the OS, data in a temporary directory).
#
#   bench/shell-latency.sh [--runs N]      # N one-shot calls (default 10) and 20 N calls in one shell
#
# Prints each one-shot call's wall time, the shell's per-command times (\timing) and their medians;
# docs/benchmarks.md records the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=10
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    *) echo "usage: bench/shell-latency.sh [--runs N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d -t shardwise-shell.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
./shardwise --version >/dev/null # builds the jar if needed
serving() { # waits for a "serving on HOST:PORT" line in $1 and prints the address
  for _ in $(seq 1 300); do
    if grep -q "serving on" "$1" 2>/dev/null; then grep -o "serving on [^ ]*" "$1" | head -1 | cut -d' ' -f3; return; fi
    sleep 0.1
  done
  echo "no 'serving on' in $1" >&2; cat "$1" >&2; exit 1
}
./shardwise zookeeper --port 0 --data-dir "$work/zk" >"$work/zk.log" 2>&1 & pids+=($!)
zk=$(serving "$work/zk.log")
for n in n1 n2; do
  ./shardwise node --zk "$zk" --data-dir "$work/$n" --id "$n" >"$work/$n.log" 2>&1 & pids+=($!)
  serving "$work/$n.log" >/dev/null
done
./shardwise table create t --strategy hashrange --shards 4 --zk "$zk" >/dev/null
./shardwise kv put t alice hello --zk "$zk" >/dev/null

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "one-shot: ./shardwise kv get t alice, $runs times (ms)"
for _ in $(seq 1 "$runs"); do
  start=$(date +%s%N)
  ./shardwise kv get t alice --zk "$zk" >/dev/null
  echo $(( ($(date +%s%N) - start) / 1000000 ))
done | tee "$work/oneshot.txt" | tr '\n' ' '; echo
echo "median one-shot: $(median < "$work/oneshot.txt") ms"

{ echo '\timing'; echo 'kv get t alice'; for _ in $(seq 1 $((20 * runs))); do echo 'kv get t alice'; done; } >"$work/in.txt"
./shardwise shell --zk "$zk" --history "$work/history" <"$work/in.txt" >"$work/shell.txt" 2>&1
# The first command opens the session (ZooKeeper, the map): shown apart from the others.
grep -o '([0-9.]* ms' "$work/shell.txt" | tr -d '(' | cut -d' ' -f1 >"$work/times.txt"
echo "shell: first command (opens the connection) $(head -1 "$work/times.txt") ms"
tail -n +2 "$work/times.txt" >"$work/rest.txt"
echo "shell: the next $(wc -l <"$work/rest.txt") commands, median $(median < "$work/rest.txt") ms, max $(sort -n "$work/rest.txt" | tail -1) ms"
