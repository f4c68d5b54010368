#!/usr/bin/env bash
# The official QStash SDKs as clients of `delayq gateway`: @upstash/qstash (npm, pinned in
# node/package-lock.json) under node's test runner, and qstash (PyPI, pinned in
# python/requirements.txt) under pytest. One throwaway redis-server and one gateway on free
# loopback ports; each suite runs its own recording receiver on loopback, allowed as the
# gateway's destination, and verifies every delivery with its SDK's Receiver.
# Installs redis-server, and node + npm, from Debian when missing; the SDKs go into
# target/gateway-sdk/ (npm ci from the committed lock; a virtualenv for Python).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/lib.sh
ensure_redis
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "== installing nodejs and npm from Debian" >&2
    apt_install nodejs npm
fi
here=crates/delayq-gateway/tests/sdk
target="${CARGO_TARGET_DIR:-target}"
sdk="$target/gateway-sdk"
mkdir -p "$sdk/node"

# Only when the lock changed: npm ci wipes and refills node_modules.
if ! cmp -s "$here/node/package-lock.json" "$sdk/node/package-lock.json" \
    || [ ! -d "$sdk/node/node_modules/@upstash/qstash" ]; then
    cp "$here/node/package.json" "$here/node/package-lock.json" "$sdk/node/"
    (cd "$sdk/node" && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -x "$sdk/venv/bin/python" ]; then
    if ! python3 -m venv "$sdk/venv" 2>/dev/null; then
        apt_install python3-venv
        python3 -m venv "$sdk/venv"
    fi
fi
if ! cmp -s "$here/python/requirements.txt" "$sdk/venv/requirements.txt"; then
    # Through the venv's python: its pip script may name another copy's interpreter.
    "$sdk/venv/bin/python" -m pip install -q -r "$here/python/requirements.txt"
    cp "$here/python/requirements.txt" "$sdk/venv/requirements.txt"
fi
cargo build --quiet -p delayq-cli --bin delayq

secrets=$(mktemp -d)
gateway_pid=""
cleanup() {
    if [ -n "$gateway_pid" ]; then
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    stop_throwaway_redis
    rm -rf "$secrets"
}
trap cleanup EXIT
start_throwaway_redis

# Made up for this run, in files only this user may read (the gateway refuses others).
(
    umask 077
    python3 -c 'import secrets; print("tok_" + secrets.token_hex(16))' >"$secrets/token"
    python3 -c 'import secrets; print("pub_" + secrets.token_hex(16))' >"$secrets/publish-token"
    python3 -c 'import secrets; print("sig_" + secrets.token_urlsafe(24))' >"$secrets/current"
    python3 -c 'import secrets; print("sig_" + secrets.token_urlsafe(24))' >"$secrets/next"
    python3 -c 'import base64, secrets; print("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode())' >"$secrets/whsec"
    python3 -c 'import base64, secrets; print("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode())' >"$secrets/whsec-next"
)
node_port=$(free_port)
python_port=$(free_port)
webhooks_port=$(free_port)
schedules_node_port=$(free_port)
schedules_python_port=$(free_port)
flow_node_port=$(free_port)
flow_python_port=$(free_port)
gateway_port=$(free_port)
"$target/debug/delayq" --url "redis://127.0.0.1:$THROWAWAY_REDIS_PORT" gateway \
    --listen "127.0.0.1:$gateway_port" \
    --token-file "$secrets/token" --publish-token-file "$secrets/publish-token" \
    --signing-key-file "$secrets/current" --next-signing-key-file "$secrets/next" \
    --allow-destination "http://127.0.0.1:$node_port/" \
    --allow-destination "http://127.0.0.1:$python_port/" \
    --allow-destination "http://127.0.0.1:$webhooks_port/" \
    --standard-webhooks-secret-file "$secrets/whsec" \
    --standard-webhooks-next-secret-file "$secrets/whsec-next" \
    --allow-destination "http://127.0.0.1:$schedules_node_port/" \
    --allow-destination "http://127.0.0.1:$schedules_python_port/" \
    --allow-destination "http://127.0.0.1:$flow_node_port/" \
    --allow-destination "http://127.0.0.1:$flow_python_port/" \
    --retry-first-wait 200ms --retry-max-wait 1s --request-timeout 30s \
    --keep-delivered 10m \
    >"$secrets/gateway.log" 2>&1 &
gateway_pid=$!
# Ready once it answers (401 without a token); 60 s at most.
for _ in $(seq 1 600); do
    if python3 - "$gateway_port" <<'PY' 2>/dev/null; then break; fi
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v2/dlq", timeout=1)
except urllib.error.HTTPError as err:
    sys.exit(0 if err.code == 401 else 1)
sys.exit(1)
PY
    if ! kill -0 "$gateway_pid" 2>/dev/null; then
        cat "$secrets/gateway.log" >&2
        exit 1
    fi
    sleep 0.1
done

export GATEWAY_URL="http://127.0.0.1:$gateway_port"
GATEWAY_TOKEN=$(cat "$secrets/token")
PUBLISH_TOKEN=$(cat "$secrets/publish-token")
SIGNING_KEY=$(cat "$secrets/current")
NEXT_SIGNING_KEY=$(cat "$secrets/next")
STANDARD_WEBHOOKS_SECRET=$(cat "$secrets/whsec")
STANDARD_WEBHOOKS_NEXT_SECRET=$(cat "$secrets/whsec-next")
export GATEWAY_TOKEN PUBLISH_TOKEN SIGNING_KEY NEXT_SIGNING_KEY STANDARD_WEBHOOKS_SECRET \
    STANDARD_WEBHOOKS_NEXT_SECRET
# The SDKs must not switch to their dev-server mode or read another account's settings.
unset QSTASH_DEV QSTASH_URL QSTASH_TOKEN QSTASH_REGION
status=0
sdk_node=$(cd "$sdk/node" && pwd)
echo "== @upstash/qstash $(node -p "require('$sdk_node/node_modules/@upstash/qstash/package.json').version") (node $(node --version))"
RECEIVER_PORT=$node_port SCHEDULES_RECEIVER_PORT=$schedules_node_port QSTASH_SDK_DIR="$sdk_node" \
    node --test "$here/node/gateway.test.mjs" "$here/node/roles.test.mjs" \
    "$here/node/schedules.test.mjs" || status=1
RECEIVER_PORT=$flow_node_port QSTASH_SDK_DIR="$sdk_node" \
    node --test "$here/node/flow.test.mjs" || status=1
echo "== qstash $("$sdk/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("qstash"))') (pytest)"
RECEIVER_PORT=$python_port WEBHOOKS_RECEIVER_PORT=$webhooks_port \
    "$sdk/venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$here/python/test_gateway.py" "$here/python/test_standard_webhooks.py" || status=1
RECEIVER_PORT=$flow_python_port "$sdk/venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$here/python/test_flow.py" || status=1
# test_schedules.py rotates the signing keys once (current <- next): keep it last.
SCHEDULES_RECEIVER_PORT=$schedules_python_port \
    "$sdk/venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$here/python/test_schedules.py" || status=1
if [ "$status" != 0 ]; then
    echo "== the gateway's log" >&2
    cat "$secrets/gateway.log" >&2
fi
exit "$status"
