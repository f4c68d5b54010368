#!/usr/bin/env python3
"""The dashboard's targets, measured: how long each request of `delayq ui` holds Redis, and how
long the overview of many queues takes per page.

Starts its own redis-server on a free loopback port, fills it (1M pending entries in one queue,
ten 16 MiB values among its pending entries and ten on its ready list, more in flight and dead,
and 10,000 small queues, 200 live worker processes' registry records over 201 of them, each
holding two deliveries), starts `delayq ui` on another free loopback port, then asks every
request N times and prints, per request, the wall time (median and p95) and the longest Redis
command run meanwhile, from SLOWLOG (slowlog-log-slower-than 0: every command is logged). A
bench, not a test: it judges nothing and takes a few minutes. Standard library only.

    python3 benches/ui_targets.py [--bin target/release/delayq] [--runs 10] [--sort problems]
        [--pending 1000000] [--queues 10000] [--big 10] [--processes 200] [--json OUT]

`--sort` measures the overview's pages in that order too (`sort=VALUE`, e.g. `problems`);
`UI_TARGETS_DEBUG=1` prints every command over 5 ms.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

MIB = 1024 * 1024
QUEUE = "bench:big"
# One fill script: `count` entries packed as Redisson packs them (8-byte id, value length,
# value), each in the timeout zset and the order list, due from `due` on, one a millisecond.
FILL = """
local count, first, due, size = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
    tonumber(ARGV[4])
for i = first, first + count - 1 do
    local value = string.format('value-%09d', i)
    if size > 0 then value = string.rep('v', size) end
    local entry = struct.pack('Bc0Lc0', 8, string.format('%08d', i % 100000000), #value, value)
    redis.call('zadd', KEYS[1], due + i, entry)
    redis.call('rpush', KEYS[2], entry)
end
"""
# Many queues: one pending entry each, as a Redisson offer leaves it.
MANY = """
local count, due = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, count do
    local name = string.format('bench:q%05d', i)
    local entry = struct.pack('Bc0Lc0', 8, string.format('%08d', i), 5, 'hello')
    redis.call('zadd', 'redisson_delay_queue_timeout:{' .. name .. '}', due + i, entry)
    redis.call('rpush', 'redisson_delay_queue:{' .. name .. '}', entry)
end
"""
# Big values elsewhere: KEYS[1] target list, in flight (zset, hash), dead letters.
BIG = """
local count, size, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local value = string.rep('b', size)
for i = 1, count do
    redis.call('rpush', KEYS[1], value)
    redis.call('zadd', KEYS[2], now + 600000 + i, 'delivery-' .. i)
    redis.call('hset', KEYS[3], 'delivery-' .. i, value)
    redis.call('rpush', KEYS[4], 'DQD1' .. string.char(0, 0, 0, 3) .. string.rep(string.char(0), 8)
        .. string.char(0, 0, 0, 4) .. 'boom' .. value)
end
"""

# Live processes, as their registry records say (worker, id, host, pid, version, started, ttl,
# no globs): process i serves the small queues i and i+1 and holds `held` deliveries of the
# first, their ids as a worker makes them (PROCESS.STARTED_MS.RANDOM.ATTEMPT).
PROCESSES = """
local count, held, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 1, count do
    local id = string.format('bench-%d-%08x', 100000 + i, i)
    local record = table.concat({'worker', id, 'benchhost', tostring(100000 + i), '0.1.0',
        tostring(now), '30000', ''}, '\\t')
    local served = {}
    for q = i, i + 1 do
        redis.call('zadd', string.format('delayq_procs:{bench:q%05d}', q), now + 30000, record)
        served[#served + 1] = string.format('bench:q%05d', q)
    end
    redis.call('zadd', 'delayq_live:{delayq}', now + 30000,
        record .. '\\t' .. table.concat(served, '\\n'))
    local name = string.format('bench:q%05d', i)
    for d = 1, held do
        local delivery = string.format('%s.%d.%016x.1', id, now, d)
        redis.call('zadd', 'delayq_inflight:{' .. name .. '}', now + 30000, delivery)
        redis.call('hset', 'delayq_inflight_data:{' .. name .. '}', delivery, 'value')
    end
end
"""


class Redis:
    """A minimal RESP client: commands as lists of strings, replies as Python values."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def __call__(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b":"):
            return int(rest) if kind == b":" else rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self.file.read(size + 2)[:-2]
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self.read() for _ in range(size)]
        raise RuntimeError(f"unexpected reply {line!r}")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(what, probe, patience=60):
    deadline = time.monotonic() + patience
    while True:
        try:
            return probe()
        except Exception as err:  # noqa: BLE001 - anything means "not yet"
            if time.monotonic() > deadline:
                sys.exit(f"{what} did not come up: {err}")
            time.sleep(0.1)


def fill(redis, pending, queues, big, processes=0):
    now = int(time.time() * 1000)
    timeout = f"redisson_delay_queue_timeout:{{{QUEUE}}}"
    order = f"redisson_delay_queue:{{{QUEUE}}}"
    started = time.monotonic()
    # The big ones first in due order, so the first page of pending holds them.
    redis("EVAL", FILL, 2, timeout, order, big, 0, now + 60_000, 16 * MIB)
    chunk = 100_000
    for first in range(big, big + pending, chunk):
        count = min(chunk, big + pending - first)
        redis("EVAL", FILL, 2, timeout, order, count, first, now + 120_000, 0)
    redis("EVAL", MANY, 0, queues, now + 3_600_000)
    keys = [QUEUE, f"delayq_inflight:{{{QUEUE}}}", f"delayq_inflight_data:{{{QUEUE}}}",
            f"delayq_dead:{{{QUEUE}}}"]
    redis("EVAL", BIG, len(keys), *keys, big, 16 * MIB, now)
    # Their records expire in 30 s, as a live process's would without its beats: written last,
    # and again before the workers page is measured (`refresh_processes`).
    redis("EVAL", PROCESSES, 0, processes, 2, now)
    print(f"filled in {time.monotonic() - started:.1f} s: {redis('DBSIZE')} keys, "
          f"{redis('ZCARD', timeout)} pending in {QUEUE}, "
          f"used_memory {redis('MEMORY', 'STATS')[3] // MIB} MiB", flush=True)
    # A fresh Lua state: the fill's garbage (millions of strings) would otherwise be collected
    # during the dashboard's first scripts and counted against them.
    redis("SCRIPT", "FLUSH")


def slowest(redis):
    """The longest command SLOWLOG holds (µs, its name), leaving out this script's own."""
    worst = (0, "")
    for entry in redis("SLOWLOG", "GET", -1):
        micros, args = entry[2], entry[3]
        name = args[0].decode().lower() if args else ""
        if name in ("slowlog", "config", "ping"):
            continue
        if os.environ.get("UI_TARGETS_DEBUG") and micros > 5000:
            print(micros, [a[:60] for a in args[:6]], file=sys.stderr)
        worst = max(worst, (micros, name))
    return worst


class Pinger:
    """PINGs Redis back to back on a connection of its own while a request runs: the longest
    answer is how long Redis was held (its socket writes included, which SLOWLOG leaves out)."""

    def __init__(self, port):
        self.redis, self.stop, self.worst = Redis(port), threading.Event(), 0.0
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            started = time.perf_counter()
            self.redis("PING")
            self.worst = max(self.worst, time.perf_counter() - started)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join()


def measure(redis, port, path, runs):
    walls, worst, ping = [], (0, ""), 0.0
    for _ in range(runs):
        redis("SLOWLOG", "RESET")
        with Pinger(redis.port) as pinger:
            started = time.monotonic()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as reply:
                body = reply.read()
            walls.append((time.monotonic() - started) * 1000)
        ping = max(ping, pinger.worst)
        worst = max(worst, slowest(redis))
    walls.sort()
    p95 = walls[min(len(walls) - 1, int(len(walls) * 0.95))]
    return {
        "path": path,
        "bytes": len(body),
        "wall_ms_median": round(statistics.median(walls), 1),
        "wall_ms_p95": round(p95, 1),
        "redis_max_us": worst[0],
        "redis_max_command": worst[1],
        "ping_max_ms": round(ping * 1000, 1),
    }


# A member's preview read by a script: the member is copied into Lua whole.
LUA_PREVIEW = "local v = redis.call('lindex', KEYS[1], 0) return {#v, string.sub(v, 1, 256)}"


def baseline(redis, runs):
    """Other ways to read a page, by hand, for comparison: one command copying the page (the
    reading the previews replaced), one member by command (what they do), and a script that
    returns a member's first bytes and length."""
    rows = []
    for args in (["LRANGE", QUEUE, 0, 49],
                 ["ZRANGE", f"redisson_delay_queue_timeout:{{{QUEUE}}}", 0, 49, "WITHSCORES"],
                 ["LINDEX", QUEUE, 0],
                 ["EVAL", LUA_PREVIEW, 1, QUEUE]):
        worst, ping = 0, 0.0
        for _ in range(runs):
            redis("SLOWLOG", "RESET")
            with Pinger(redis.port) as pinger:
                redis(*args)
            ping = max(ping, pinger.worst)
            worst = max(worst, slowest(redis)[0])
        shown = "EVAL (a script: LINDEX, then the first 256 bytes and the length)" \
            if args[0] == "EVAL" else " ".join(map(str, args))
        rows.append({"path": shown, "redis_max_us": worst, "ping_max_ms": round(ping * 1000, 1)})
    return rows


def refresh_processes(redis, processes):
    """The records' beats: written again, so that they are live while the page is measured."""
    redis("EVAL", PROCESSES, 0, processes, 2, int(time.time() * 1000))


def requests(sort, queues):
    """The requests measured: the overview's first, middle and last page by name (and in the
    order `sort` too, when given), every tab of the big queue, a search window (pending from the
    middle, ready over the big values), an entry's detail, the activity and processes views, the workers page."""
    sorts = [""] + ([f"&sort={sort}"] if sort else [])
    paths = [f"/api/queues?offset={offset}&limit=100{sort_arg}"
             for sort_arg in sorts for offset in (0, queues // 2, max(0, queues - 100))]
    paths += [f"/api/queues/{QUEUE}?tab={tab}"
              for tab in ("pending", "ready", "in_flight", "dead", "quarantine")]
    paths += [f"/api/queues/{QUEUE}?tab=pending&from=500000",
              f"/api/queues/{QUEUE}?tab=pending&from=500000&q=value-0005",
              f"/api/queues/{QUEUE}?tab=ready&q=nothing-starts-so",
              f"/api/queues/{QUEUE}/job/ready/0",
              f"/api/queues/{QUEUE}/activity", f"/api/queues/{QUEUE}/processes", "/metrics",
              "/api/workers"]
    return paths


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(root, "target/release/delayq"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sort", default="")
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=10)
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--json")
    args = parser.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin}: no such program (cargo build --release -p delayq-cli)")
    workdir = tempfile.mkdtemp(prefix="delayq-ui-bench-")
    redis_port, ui_port = free_port(), free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--proto-max-bulk-len", "64mb"],
        stdout=subprocess.DEVNULL)
    ui = None
    try:
        redis = wait_for("redis-server", lambda: Redis(redis_port))
        wait_for("redis-server", lambda: redis("PING"))
        fill(redis, args.pending, args.queues, args.big, args.processes)
        ui = subprocess.Popen(
            [args.bin, "--url", f"redis://127.0.0.1:{redis_port}", "ui", "--listen",
             f"127.0.0.1:{ui_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for("delayq ui", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{ui_port}/healthz", timeout=5).read())
        redis("CONFIG", "SET", "slowlog-log-slower-than", 0)
        redis("CONFIG", "SET", "slowlog-max-len", 1_000_000)
        rows = []
        for path in requests(args.sort, args.queues):
            if path == "/api/workers":
                refresh_processes(redis, args.processes)
            rows.append(measure(redis, ui_port, path, args.runs))
        compared = baseline(redis, args.runs)
    finally:
        for process in (ui, server):
            if process is not None:
                process.terminate()
                process.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"\ncommit {commit}, {args.runs} runs each\n")
    print("| request | reply | wall median / p95 | longest Redis command | longest PING |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| `{row['path']}` | {row['bytes']:,} B | {row['wall_ms_median']} / "
              f"{row['wall_ms_p95']} ms | {row['redis_max_us'] / 1000:.2f} ms "
              f"({row['redis_max_command']}) | {row['ping_max_ms']} ms |")
    for row in compared:
        print(f"| `{row['path']}` (by hand) | | | "
              f"{row['redis_max_us'] / 1000:.2f} ms | {row['ping_max_ms']} ms |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"commit": commit, "runs": args.runs, "requests": rows,
                       "baseline": compared}, out, indent=1)


if __name__ == "__main__":
    main()
