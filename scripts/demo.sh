#!/usr/bin/env bash
# Runs the main demo end to end: offers, the transfer scheduler and a consumer on one queue.
# Uses $REDIS_URL when set; otherwise installs Redis if needed and starts a throwaway server.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ -z "${REDIS_URL:-}" ]; then
    ensure_redis
    start_throwaway_redis
    trap stop_throwaway_redis EXIT
    export REDIS_URL="redis://127.0.0.1:$THROWAWAY_REDIS_PORT"
    echo "== throwaway Redis at $REDIS_URL"
fi
# The first build compiles every dependency (about 2-3 minutes on 2 cores): cargo's own progress
# shows meanwhile, so the wait is not silent.
echo "== building the demo (examples/demo.rs); the first build takes a few minutes"
cargo build --example demo
echo "== running the demo against $REDIS_URL"
cargo run --quiet --example demo
