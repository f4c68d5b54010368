#!/usr/bin/env bash
# delayq's benchmark runner: delayq and the real Java Redisson side by side on one private
# redis-server. One command:
#
#   benches/run.sh            full run (~15 min on 2 cores): writes RESULTS.md, results.json and
#                             latency.png into a new folder benches/results/DATE-COMMIT[-PHASES]/
#   benches/run.sh --smoke    tiny sizes (seconds), built in the dev profile the test suite has
#                             built: checks every component end to end and prints the figures;
#                             writes into a temporary directory unless --out is given
#
# Options: --out DIR (where results go), --no-chart (skip the PNG and its Python venv),
#          --only offer,transfer,lookup,latency,drain,rss,many,shard,gateway (a subset of the
#          phases, for development; shard or gateway alone needs no Java); --only durable
#          (durable offers beside plain ones, on the server and a replica of it that this script
#          starts; no Java; not part of the full run); --only limits (one worker with and without
#          limits that never bind; no Java; not part of the full run); --gateway-pending N (the
#          gateway phase's pending messages: 1,000,000 in a full run, 2,000 in --smoke);
#          --gateway-concurrency N (the gateway's --concurrency in that phase; 64).
#
# Builds go under the workspace's target/ (the Java side, the chart's venv): a run leaves the
# checkout as it was, but for the results folder of a full run.
#
# Exits non-zero when a component fails (build, Redis, Java, a lost or misordered value, the
# report); never because a performance target was missed: RESULTS.md lists those (the targets
# are report.py's).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
mode=full
out=""
chart=1
only=""
gateway_pending=""
gateway_concurrency=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) mode=smoke ;;
    --out) out="$2"; shift ;;
    --no-chart) chart=0 ;;
    --only) only="$2"; shift ;;
    --gateway-pending) gateway_pending="$2"; shift ;;
    --gateway-concurrency) gateway_concurrency="$2"; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

for tool in cargo java mvn redis-server redis-benchmark redis-cli python3; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed" >&2; exit 2; }
done

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$root/$target_dir"
work="$(mktemp -d "${TMPDIR:-/tmp}/delayq-bench.XXXXXX")"
redis_pid=""
replica_pid=""
# On failure the work directory stays, with what tells why: the delayq processes' logs
# (many-delayq*.log and the like), redis.log, replica.log, maven.log.
cleanup() {
  local status=$?
  for pid in "$replica_pid" "$redis_pid"; do
    if [[ -n "$pid" ]]; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [[ "$status" -ne 0 ]]; then
    echo "run.sh: failed (exit $status); its work directory is kept: $work" >&2
    ls "$work" >&2 2>/dev/null || true
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

if [[ -z "$out" ]]; then
  if [[ "$mode" == smoke ]]; then
    out="$work/results"
  else
    # A folder per run, named by its date and commit (and its phases when not all ran); a
    # second run the same day at the same commit gets a number.
    run_name="$(date -u +%Y-%m-%d)-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    [[ -n "$only" ]] && run_name+="-${only//,/-}"
    out="$here/results/$run_name"
    n=2
    while [[ -e "$out" ]]; do out="$here/results/$run_name-$n"; n=$((n + 1)); done
  fi
fi
mkdir -p "$out"
results_json="$out/results.json"
results_md="$out/RESULTS.md"

# The shard, durable, limits and gateway phases, alone, need no Java.
classpath=""
if [[ "$only" != shard && "$only" != durable && "$only" != limits && "$only" != gateway ]]; then
  echo "== building the Java side (Redisson from Maven Central)"
  java_build="$target_dir/bench-java"
  mvn -B -q -f "$here/java/pom.xml" -Dbench.build.dir="$java_build" package >"$work/maven.log" 2>&1 \
    || { cat "$work/maven.log" >&2; echo "run.sh: Maven build failed" >&2; exit 1; }
  classpath="$java_build/classes:$(cat "$java_build/classpath.txt")"
fi

# A smoke run judges no figure: it uses the dev profile the test suite has built already, where a
# full run builds optimized code (the bench profile and the CLI in release).
if [[ "$mode" == smoke ]]; then
  bench_profile=(--profile dev)
  cli_profile=()
  cli_dir=debug
else
  bench_profile=()
  cli_profile=(--release)
  cli_dir=release
fi
echo "== building the delayq driver and the delayq CLI (${cli_dir})"
(cd "$root" && cargo bench --quiet "${bench_profile[@]}" --bench delayq_bench --no-run \
  && cargo build --quiet "${cli_profile[@]}" -p delayq-cli --bin delayq) \
  || { echo "run.sh: cargo build failed" >&2; exit 1; }

echo "== starting redis-server"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis-cli -p "$port" ping >/dev/null || { echo "run.sh: redis-server did not start" >&2; exit 1; }
echo "   redis $(redis-server --version | grep -o 'v=[0-9.]*') on 127.0.0.1:$port"

replica_args=()
if [[ ",$only," == *,durable,* ]]; then
  echo "== starting a replica of it (the durable phase)"
  replica_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  redis-cli -p "$port" config set repl-diskless-sync-delay 0 >/dev/null
  mkdir -p "$work/replica"
  redis-server --port "$replica_port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$work/replica" --logfile "$work/replica.log" --replicaof 127.0.0.1 "$port" &
  replica_pid=$!
  for _ in $(seq 300); do
    redis-cli -p "$replica_port" info replication 2>/dev/null | grep -q 'master_link_status:up' && break
    sleep 0.1
  done
  redis-cli -p "$replica_port" info replication | grep -q 'master_link_status:up' \
    || { echo "run.sh: the replica did not link to the master" >&2; exit 1; }
  echo "   replica on 127.0.0.1:$replica_port"
  replica_args=(--replica-port "$replica_port")
fi

export BENCH_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
export BENCH_COMMIT="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
export BENCH_JAVA_VERSION="$(java -version 2>&1 | head -1)"

echo "== running the $mode benchmark"
args=(--port "$port" --java-classpath "$classpath" --out "$results_json" --work-dir "$work"
      --delayq-bin "$target_dir/$cli_dir/delayq" "${replica_args[@]}")
[[ "$mode" == smoke ]] && args+=(--smoke)
[[ -n "$only" ]] && args+=(--only "$only")
[[ -n "$gateway_pending" ]] && args+=(--gateway-pending "$gateway_pending")
[[ -n "$gateway_concurrency" ]] && args+=(--gateway-concurrency "$gateway_concurrency")
(cd "$root" && cargo bench --quiet "${bench_profile[@]}" --bench delayq_bench -- "${args[@]}") \
  || { echo "run.sh: the benchmark failed" >&2; exit 1; }

echo "== writing $results_md"
python3 "$here/report.py" "$results_json" "$results_md" \
  || { echo "run.sh: report failed" >&2; exit 1; }

# The chart draws the latency and transfer phases: only when they ran.
if [[ -n "$only" && ",$only," != *,latency,* && ",$only," != *,transfer,* ]]; then
  chart=0
fi
if [[ "$chart" == 1 ]]; then
  echo "== drawing $out/latency.png"
  venv="$target_dir/bench-venv"
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib \
      || { echo "run.sh: cannot install matplotlib into $venv" >&2; exit 1; }
  fi
  MPLBACKEND=Agg "$venv/bin/python" "$here/chart.py" "$results_json" "$out/latency.png" \
    || { echo "run.sh: chart failed" >&2; exit 1; }
fi

echo
cat "$results_md"
