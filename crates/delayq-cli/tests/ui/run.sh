#!/usr/bin/env bash
# Browser test of `delayq ui`: a real redis-server on a free loopback port with queues in known
# states, the dashboard with --allow-writes (and a second one under a base path, behind Debian's
# nginx), and Debian's headless Chromium driven through
# chromedriver's WebDriver HTTP API by drive.py (Python standard library only; nothing is
# downloaded at run time). Screenshots go to $UI_TEST_OUT (default target/ui-test/).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/lib.sh
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "installing Debian's chromium and chromium-driver"
    apt_install chromium chromium-driver
fi
if ! command -v nginx >/dev/null && ! [ -x /usr/sbin/nginx ]; then
    echo "installing Debian's nginx-light (the proxy in front of the dashboard)"
    apt_install --no-install-recommends nginx-light
fi
ensure_redis
cargo build --quiet -p delayq-cli --bin delayq
export UI_TEST_OUT="${UI_TEST_OUT:-target/ui-test}"
mkdir -p "$UI_TEST_OUT"
python3 crates/delayq-cli/tests/ui/drive.py target/debug/delayq
python3 crates/delayq-cli/tests/ui/check_days.py target/debug/delayq
python3 crates/delayq-cli/tests/ui/check_health.py target/debug/delayq
python3 crates/delayq-cli/tests/ui/check_workers.py target/debug/delayq
exec python3 crates/delayq-cli/tests/ui/check_gateway.py target/debug/delayq
