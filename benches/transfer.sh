#!/usr/bin/env bash
# Transfer benchmark (see benches/transfer.rs): starts a throwaway Redis unless REDIS_URL is set.
# Usage: benches/transfer.sh [--sizes 10000,100000] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
if [ -z "${REDIS_URL:-}" ]; then
    ensure_redis
    start_throwaway_redis
    trap stop_throwaway_redis EXIT
    export REDIS_URL="redis://127.0.0.1:$THROWAWAY_REDIS_PORT"
fi
cargo bench --quiet --bench transfer -- "$@"
