#!/usr/bin/env bash
# The standard comparison, in one run on this machine, so results read as ratios:
#   1. workloads A, B, C, E on an embedded 3-node cluster (shardwise bench --dev), each beside one
#      in-process RocksDB and a 3-master Redis Cluster (Debian's redis-server), same harness;
#   2. a rebalance under load: workload B while a fourth node joins and its plan is approved;
#   3. YCSB's own driver (site.ycsb.Client, shardwise-ycsb) against a dev cluster for workload A,
#      next to 'shardwise bench --zk' on the same cluster.
# Writes JSON under target/bench/ and the tables into docs/benchmarks.md between the markers
# "<!-- bench:begin -->" and "<!-- bench:end -->". Needs redis-server and redis-cli.
#
#   bench/compare.sh                      # about 15 minutes on 2 cores
#   RECORDS=20000 DURATION=10s bench/compare.sh   # a quick look
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

RECORDS=${RECORDS:-100000}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-10s}
THREADS=${THREADS:-16}
WORKLOADS=${WORKLOADS:-"a b c e"}
REBALANCE_DURATION=${REBALANCE_DURATION:-60s}
out="$root/target/bench"
mkdir -p "$out"

for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null || { echo "bench/compare.sh: $tool is missing (sudo apt-get install -y redis-server redis-tools)" >&2; exit 1; }
done

./shardwise --version >/dev/null   # builds the CLI when the sources are newer
common=(--records "$RECORDS" --warmup "$WARMUP" --threads "$THREADS" -o json)

for w in $WORKLOADS; do
  echo "== workload $w: shardwise (embedded 3 nodes), rocksdb, redis-cluster" >&2
  ./shardwise bench --dev --workload "$w" --duration "$DURATION" "${common[@]}" \
      --baseline rocksdb --baseline redis-cluster > "$out/workload-$w.json"
done

echo "== rebalance under load (workload b)" >&2
./shardwise bench --dev --during rebalance --workload b --duration "$REBALANCE_DURATION" "${common[@]}" > "$out/rebalance.json"

echo "== YCSB's driver vs shardwise bench, workload a, one dev cluster in its own JVM" >&2
(mvn -B -q -DskipTests -pl shardwise-ycsb -am package >/dev/null)
data="$(mktemp -d)"
zk_port=22181
./shardwise dev --data-dir "$data" --zk-port $zk_port --router-port 27100 --node-port 27101 --console-port 0 >"$out/dev.log" 2>&1 &
dev_pid=$!
trap 'kill -TERM $dev_pid 2>/dev/null; wait $dev_pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 120); do
  grep -q "cluster is up" "$out/dev.log" && break
  sleep 0.5
done
grep -q "cluster is up" "$out/dev.log" || { cat "$out/dev.log" >&2; exit 1; }
./shardwise bench --zk 127.0.0.1:$zk_port --workload a --duration "$DURATION" "${common[@]}" > "$out/bench-zk-a.json"
ycsb=(java -jar shardwise-ycsb/target/shardwise-ycsb.jar)
"${ycsb[@]}" -load -db io.shardwise.ycsb.ShardwiseDB -P shardwise-ycsb/src/main/resources/workloads/workloada \
    -p recordcount="$RECORDS" -p shardwise.zk=127.0.0.1:$zk_port -threads "$THREADS" > "$out/ycsb-load-a.txt" 2>&1
seconds=$(( ${DURATION%s} + ${WARMUP%s} ))
"${ycsb[@]}" -t -db io.shardwise.ycsb.ShardwiseDB -P shardwise-ycsb/src/main/resources/workloads/workloada \
    -p recordcount="$RECORDS" -p operationcount=100000000 -p maxexecutiontime="$seconds" \
    -p shardwise.zk=127.0.0.1:$zk_port -threads "$THREADS" > "$out/ycsb-run-a.txt" 2>&1

python3 bench/report.py "$out" docs/benchmarks.md
echo "bench/compare.sh: tables written to docs/benchmarks.md (raw results in $out)" >&2
