#!/usr/bin/env bash
# Runs every test: formatting, lints, docs, unit and integration tests on real redis-server
# processes (standalone, Cluster, Sentinel), the compat suite against the real Java Redisson, the
# short fault-injection suite and the benchmark smoke runs.
# Installs Redis from Debian when it is missing; Redisson comes from Maven Central.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_redis

step() { echo; echo "== $*"; }
started=$SECONDS

step "cargo fmt --check"
cargo fmt --all -- --check

step "layout: no import cycles in src/, no file over 600 lines outside codec/, no function over 80"
python3 scripts/check_layout.py

step "cargo clippy (all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings

step "cargo doc (deny warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features --quiet

step "cargo test (all features)"
cargo test --workspace --all-features

step "compat-tests against the real Java Redisson"
compat-tests/run.sh

step "fault-injection suite, short run (faults under load: nothing lost, nothing moved twice)"
tests/faults/run.sh

step "transfer benchmark, smoke size (figures are not judged; every entry must move)"
benches/transfer.sh --sizes 2000

step "benchmark runner vs Java Redisson, smoke mode (figures are not judged; every part must run)"
benches/run.sh --smoke --no-chart

echo
echo "== all tests passed in $((SECONDS - started)) s"
