#!/usr/bin/env bash
# Transfer benchmark (see benches/transfer.rs): starts a throwaway Redis unless REDIS_URL is set.
# Usage: benches/transfer.sh [--sizes 10000,100000] [--json FILE]
#        benches/transfer.sh --smoke   (2,000 entries, built in the dev profile the tests built:
#                                       every entry must move; no figure is judged)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
profile=()
if [ "${1:-}" = "--smoke" ]; then
    shift
    profile=(--profile dev)
    set -- --sizes 2000 "$@"
fi
if [ -z "${REDIS_URL:-}" ]; then
    ensure_redis
    start_throwaway_redis
    trap stop_throwaway_redis EXIT
    export REDIS_URL="redis://127.0.0.1:$THROWAWAY_REDIS_PORT"
fi
cargo bench --quiet "${profile[@]}" --bench transfer -- "$@"
