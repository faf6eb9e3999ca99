#!/usr/bin/env bash
# Fault campaigns on real processes: runs KillNineIT (kill -9 of an owner; SIGSTOP of an owner for
# 1-7 s; an owner restarted against an empty and a foreign ZooKeeper; mid-move, kill -9 of the
# source, of the destination and of the balancer's leader, and SIGSTOP of ZooKeeper for 1-8 s; kill -9 of an owner right
# after splits and a merge of its shard; kill -9 of a leader after a table began to keep replicas, and of an
# owner after it went back to one; kill -9 of a new leader right after planned lead handovers; kill -9 of a
# replica while replicated neighbours' replicas are matched for a merge; kill -9 of a follower (its leads handed away first); kill -9 of
# the controller while it fails a killed leader's shards over; kill -9 of a node during cross-shard transfers (checked by the bank's total and every transfer's outcome); each
# run checked for linearizability by io.shardwise.bench.history) once per seed, and prints one line
# per run plus a summary per scenario.
#
#   bench/faults.sh --runs 25                       # seeds 1..25, every scenario
#   bench/faults.sh --seeds 7,8,9
#   bench/faults.sh --runs 25 --only 'zooKeeper*'   # the test methods matching a pattern (+ separates patterns)
#   bench/faults.sh --runs 20 --only 'aLeaderAndController*' --session 3000   # nodes' ZooKeeper session in ms (default 4000)
#   bench/faults.sh --runs 5 --only 'aLeaderCutOff*' --read-lease 500ms      # nodes with read leases (default off)
#   bench/faults.sh --runs 5 --only 'twoOfThree*' --power-loss   # nodes fsync every write, and a kill loses what skipped the
#                                                                # fsync, as a power loss would (node --power-loss-on-crash)
#
# Every scenario runs here, those tagged "campaign" too (mvn verify leaves them out).
#
# Each seed takes about 17 minutes on 2 cores (24 scenarios, 30-80 s each). The output's FAULT-RUN lines (and INDEX-CHECK lines of
# the scenarios with an indexed table; REJOINED, REBUILT, MID-FAILOVER and FAILED-OVER lines of the scenarios that time a recovery) are what
# docs/reliability.md records.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="1"
only=""
extra=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) seeds=$(seq -s, 1 "$2"); shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --only) only="#$2"; shift 2 ;;
    --session) extra="$extra -Dshardwise.faults.session.millis=$2"; shift 2 ;;
    --read-lease) extra="$extra -Dshardwise.faults.readLease=$2"; shift 2 ;;
    --power-loss) extra="$extra -Dshardwise.faults.powerLoss=true"; shift ;;
    *) echo "usage: bench/faults.sh [--runs N | --seeds 1,2,3] [--only METHOD-PATTERN] [--session MILLIS] [--read-lease DURATION] [--power-loss]" >&2; exit 2 ;;
  esac
done
log=$(mktemp -t shardwise-faults.XXXXXX)
status=0
mvn -B -q -o verify -pl shardwise-cli -am -DskipUTs -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test="KillNineIT$only" \
  -Dshardwise.faults.seeds="$seeds" -Dshardwise.it.excludedGroups=none $extra >"$log" 2>&1 || status=$?
runs=$(grep -h '^FAULT-RUN\|^INDEX-CHECK\|^REJOINED\|^REBUILT\|^FAILED-OVER\|^MID-FAILOVER' shardwise-cli/target/failsafe-reports/io.shardwise.cli.KillNineIT-output.txt 2>/dev/null | sort -u || true)
echo "$runs"
echo "$runs" | awk '
  /^FAULT-RUN/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
                 s = f["scenario"]; runs[s]++; ops[s] += f["operations"]; ack[s] += f["acknowledged"];
                 unk[s] += f["unknown"]; bad[s] += f["violations"]; if (f["longest_gap_ms"] > gap[s]) gap[s] = f["longest_gap_ms"];
                 of[s] += f["others_failed"]; if (f["others_gap_ms"] > og[s]) og[s] = f["others_gap_ms"];
                 if (f["struck_writable_ms"] > sw[s]) sw[s] = f["struck_writable_ms"]; if (f["struck_writable_ms"] == -1) never[s]++ }
  /^INDEX-CHECK/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); g[kv[1]] = kv[2] }
                   t = g["scenario"]; iruns[t]++; iw[t] += g["writes"]; if (g["exact_after_ms"] > ie[t]) ie[t] = g["exact_after_ms"] }
  END { for (t in iruns) printf "%s: %d runs with an indexed table, %d indexed writes, every index exact on every node within %d ms of the run\n",
                                t, iruns[t], iw[t], ie[t];
        for (s in runs) printf "%s: %d runs, %d operations, %d acknowledged writes, %d unknown, %d non-linearizable, longest time without any answer %d ms; probe: %d failed writes to other nodes, longest gap on them %d ms, struck node writable again within %d ms (%d runs: not measured)\n",
                               s, runs[s], ops[s], ack[s], unk[s], bad[s], gap[s], of[s], og[s], sw[s], never[s] }'
if [ "$status" -ne 0 ]; then
  echo "some runs failed; the Maven log is $log" >&2
fi
exit "$status"
