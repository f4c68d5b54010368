#!/usr/bin/env bash
# Fault-injection and soak suite: real redis-server / redis-sentinel processes, delayq scheduler
# processes, a Java Redisson scheduler, reliable consumers, faults injected under load.
#
#   tests/faults/run.sh            # short run (< 3 min, ~40 s of schedules, < 3 min of partitions): each fault kind once
#   tests/faults/run.sh --long     # the soak: 1M values; writes target/faults/RESULTS.md
#   tests/faults/run.sh --long --update           # ... into the committed tests/faults/RESULTS.md
#   tests/faults/run.sh --parts soak,consumers    # a subset (soak, failover, consumers, schedules, partitions)
#   tests/faults/run.sh --parts schedules --schedule-secs 600   # the schedules part, 10 minutes
#   tests/faults/run.sh --parts partitions        # network partitions (root: network namespaces)
#
# Exits non-zero on any lost or duplicated value that Redis's own guarantees do not explain.
# Needs cargo, redis-server/redis-sentinel/redis-cli (installed from Debian when missing),
# java 17 and mvn (Redisson from Maven Central). Work files go to $FAULTS_WORKDIR (default: a
# temp dir outside the checkout, kept on failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib.sh
ensure_redis

mode=short
update=false
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --long) mode=long; extra+=(--long) ;;
        --update) update=true ;;
        --parts) extra+=(--parts "$2"); shift ;;
        --schedule-secs) extra+=(--schedule-secs "$2"); shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

if [ "$update" = true ] && [ "$mode" != long ]; then
    echo "--update writes the long run's results: give --long too" >&2
    exit 2
fi

target_dir=${CARGO_TARGET_DIR:-target}
profile_flag=()
profile_dir=debug
if [ "$mode" = long ]; then
    profile_flag=(--release)
    profile_dir=release
fi

workdir=${FAULTS_WORKDIR:-$(mktemp -d -t delayq-faults-XXXXXX)}
mkdir -p "$workdir"
echo "== faults: $mode run, work files in $workdir"

echo "== building delayq (cli) and the soak driver"
cargo build -q "${profile_flag[@]}" -p delayq-cli --bin delayq
cargo build -q "${profile_flag[@]}" -p delayq-faults

echo "== resolving Redisson for the Java scheduler"
mvn -B -q -f tests/faults/java/pom.xml dependency:build-classpath \
    -Dmdep.outputFile="$workdir/java-cp.txt" >"$workdir/mvn.log" 2>&1 \
    || { cat "$workdir/mvn.log" >&2; exit 1; }

if [ "$mode" = long ] && [ "$update" = true ]; then
    results=tests/faults/RESULTS.md
elif [ "$mode" = long ]; then
    mkdir -p "$target_dir/faults"
    results=$target_dir/faults/RESULTS.md
else
    results=$workdir/RESULTS-short.md
fi

# The partitions part's network namespaces are named dqp<this pid>-*; whatever ends the run
# (failure, Ctrl-C), none of them outlives it.
net_prefix="dqp$$"
remove_namespaces() {
    command -v ip >/dev/null || return 0
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$net_prefix-" || true); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap remove_namespaces EXIT
trap 'remove_namespaces; exit 130' INT TERM

status=0
"$target_dir/$profile_dir/delayq-soak" run "${extra[@]}" \
    --delayq-bin "$target_dir/$profile_dir/delayq" \
    --java-cp "$workdir/java-cp.txt" \
    --java-src tests/faults/java/JavaScheduler.java \
    --workdir "$workdir" \
    --net-prefix "$net_prefix" \
    --results "$results" || status=$?

cat "$results" 2>/dev/null || true
if [ "$status" = 0 ]; then
    echo "== faults: PASS ($results)"
    [ -n "${FAULTS_WORKDIR:-}" ] || rm -rf "$workdir"
else
    echo "== faults: FAIL (exit $status); work files kept in $workdir" >&2
fi
exit "$status"
