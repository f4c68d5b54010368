# Shared by scripts/*.sh: make sure redis-server exists, start throwaway servers.

# Installs Redis (and faketime, which the clock tests use to skew a process's clock) from Debian
# when missing (root, or sudo without a password).
ensure_redis() {
    if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null \
        && command -v redis-cli >/dev/null && command -v faketime >/dev/null; then
        return 0
    fi
    echo "== installing redis-server, redis-sentinel and faketime from Debian" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server redis-sentinel \
        redis-tools faketime >/dev/null
}

# Prints a free loopback TCP port.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts a throwaway redis-server; sets THROWAWAY_REDIS_PORT and THROWAWAY_REDIS_DIR.
start_throwaway_redis() {
    THROWAWAY_REDIS_PORT=$(free_port)
    THROWAWAY_REDIS_DIR=$(mktemp -d)
    redis-server --port "$THROWAWAY_REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$THROWAWAY_REDIS_DIR" --daemonize yes --pidfile "$THROWAWAY_REDIS_DIR/redis.pid" \
        --logfile "$THROWAWAY_REDIS_DIR/redis.log" >/dev/null
    for _ in $(seq 1 100); do
        if redis-cli -p "$THROWAWAY_REDIS_PORT" ping 2>/dev/null | grep -q PONG; then return 0; fi
        sleep 0.05
    done
    echo "redis-server did not start; see $THROWAWAY_REDIS_DIR/redis.log" >&2
    return 1
}

stop_throwaway_redis() {
    if [ -n "${THROWAWAY_REDIS_PORT:-}" ]; then
        redis-cli -p "$THROWAWAY_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
        rm -rf "$THROWAWAY_REDIS_DIR"
        THROWAWAY_REDIS_PORT=""
    fi
}
