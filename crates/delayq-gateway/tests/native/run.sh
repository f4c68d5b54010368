#!/usr/bin/env bash
# Java Redisson consumers take what `delayq gateway`'s native queues offered: one throwaway
# redis-server and one gateway (native queues `java:*`) on free loopback ports, then the JUnit
# class compat-tests/src/test/java/delayq/gateway/GatewayNativeQueueTest.java under Maven with
# the real Redisson 4.7.0 (from Maven Central), which offers over HTTP with the string and json
# codecs and takes with Redisson's StringCodec and JsonJacksonCodec. MAVEN_FLAGS=-o keeps Maven
# offline (the artifacts already in ~/.m2).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/lib.sh
ensure_redis
for tool in mvn java; do
    command -v "$tool" >/dev/null || { echo "native/run.sh: $tool is not installed" >&2; exit 2; }
done
target="${CARGO_TARGET_DIR:-target}"
cargo build --quiet -p delayq-cli --bin delayq

secrets=$(mktemp -d)
gateway_pid=""
cleanup() {
    if [ -n "$gateway_pid" ]; then
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
    fi
    stop_throwaway_redis
    rm -rf "$secrets" compat-tests/target
}
trap cleanup EXIT
start_throwaway_redis

(
    umask 077
    python3 -c 'import secrets; print("tok_" + secrets.token_hex(16))' >"$secrets/admin"
    python3 -c 'import secrets; print("nat_" + secrets.token_hex(16))' >"$secrets/native"
    python3 -c 'import secrets; print("sig_" + secrets.token_urlsafe(24))' >"$secrets/key"
)
gateway_port=$(free_port)
"$target/debug/delayq" --url "redis://127.0.0.1:$THROWAWAY_REDIS_PORT" gateway \
    --listen "127.0.0.1:$gateway_port" \
    --token-file "$secrets/admin" --native-token-file "$secrets/native" \
    --signing-key-file "$secrets/key" \
    --allow-destination "http://127.0.0.1:9/" \
    --native-queue 'java:*' \
    >"$secrets/gateway.log" 2>&1 &
gateway_pid=$!
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

echo "== Java Redisson 4.7.0 consumers of the gateway's native queues"
status=0
GATEWAY_URL="http://127.0.0.1:$gateway_port" \
GATEWAY_REDIS_URL="redis://127.0.0.1:$THROWAWAY_REDIS_PORT" \
GATEWAY_NATIVE_TOKEN=$(cat "$secrets/native") \
    mvn -B -q ${MAVEN_FLAGS:-} -f compat-tests/pom.xml \
        -Dredisson.version=4.7.0 -Djackson.version=2.21.3 -Dmsgpack.version=0.9.11 \
        -Dtest=GatewayNativeQueueTest -Dsurefire.failIfNoSpecifiedTests=false \
        test >"$secrets/maven.log" 2>&1 || status=1
grep -hE 'Tests run:' compat-tests/target/surefire-reports/*.txt 2>/dev/null || true
if [ "$status" != 0 ]; then
    echo "== Maven's log" >&2
    tail -80 "$secrets/maven.log" >&2
    echo "== the gateway's log" >&2
    cat "$secrets/gateway.log" >&2
fi
exit "$status"
