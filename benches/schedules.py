#!/usr/bin/env python3
"""Schedules at scale: N recurring schedules of one queue, all due at :00 of every minute (the
worst case), fired and moved by one `delayq transfer QUEUE` (release build) against a private
redis-server, measured for M minutes.

    cargo build --release -p delayq-cli
    python3 benches/schedules.py [--schedules 10000] [--minutes 2] [--delayq target/release/delayq]
        [--transfer-args "--max-batch 5000"]

Measures, per occurrence:
- the offer: a keyspace-notification subscriber timestamps each `zadd` on the queue's timeout
  zset (the firing script's offer); with the default 2 s lead it is early by design;
- the arrival: a consumer timestamps each value as it reaches the target list (moved there
  by the transfer at its due time), which is what "offered at its time" means for a consumer.
Both as milliseconds after the occurrence's time (p50, p99, max). Redis CPU for the window:
`used_cpu_sys + used_cpu_user` and `INFO commandstats` microseconds by command, per 1,000
schedules per minute (EVALSHA holds the firing script and the transfer script; HGETALL and
ZRANGEBYSCORE outside scripts are the firing's reads). Prints a Markdown summary and the JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_targets import Redis, free_port, wait_for  # noqa: E402

QUEUE = "bench-schedules"
EVERY_MS = 60_000

# Writes N interval schedules in the documented hash layout (docs/schedules.md), the k-th with
# its first occurrence at ARGV[2] + (k % ARGV[5]) seconds, and registers the queue.
WRITE = """
for k = 1, tonumber(ARGV[1]) do
    local id = 's' .. k
    local start = tostring(tonumber(ARGV[2]) + (k % tonumber(ARGV[5])) * 1000)
    redis.call('hset', KEYS[1] .. ':' .. id, 'every_ms', ARGV[3], 'value', id, 'missed', 'skip',
        'paused', '0', 'start_ms', start, 'rev', '1', 'next_ms', start)
    redis.call('zadd', KEYS[2], start, id)
end
redis.call('sadd', KEYS[3], ARGV[4])
"""


def percentiles(values):
    values = sorted(values)
    if not values:
        return {"count": 0}
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return {"count": len(values), "min": values[0], "p50": pick(0.50), "p99": pick(0.99),
            "max": values[-1]}


def nearest_occurrence(ms, spread):
    """The occurrence a time stamp belongs to: the nearest minute, or the nearest second when
    the schedules are spread over the minute."""
    step = 1000 if spread else EVERY_MS
    return round(ms / step) * step


def watch_offers(port, stamps):
    """Runs until the server goes (a daemon thread: a read with a timeout would spoil the
    buffered reply stream)."""
    sub = Redis(port)
    sub("SUBSCRIBE", f"__keyspace@0__:redisson_delay_queue_timeout:{{{QUEUE}}}")
    while True:
        try:
            message = sub.read()
        except (OSError, RuntimeError):
            return
        if isinstance(message, list) and message[-1] == b"zadd":
            stamps.append(time.time() * 1000)


def consume(port, stamps, stop):
    redis = Redis(port)
    while not stop.is_set():
        popped = redis("BLPOP", QUEUE, 0.5)
        if popped is None:
            continue
        now = time.time() * 1000
        stamps.append(now)
        for _ in redis("LPOP", QUEUE, 10_000) or []:
            stamps.append(now)


def server_figures(redis):
    cpu = dict(
        line.split(":", 1) for line in redis("INFO", "cpu").decode().splitlines() if ":" in line
    )
    stats = {}
    for line in redis("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            fields = dict(part.split("=") for part in rest.split(","))
            stats[name] = (int(fields["calls"]), int(fields["usec"]))
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]), stats


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--schedules", type=int, default=10_000)
    args.add_argument("--minutes", type=int, default=2)
    args.add_argument("--delayq", default="target/release/delayq")
    args.add_argument("--spread", action="store_true",
                      help="spread the schedules over the minute's 60 seconds (else all at :00)")
    args.add_argument("--transfer-args", default="",
                      help="more flags for `delayq transfer`, e.g. \"--max-batch 5000\"")
    args = args.parse_args()
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--notify-keyspace-events", "Kz"],
        stdout=subprocess.DEVNULL)
    try:
        redis = wait_for("redis-server", lambda: Redis(port))
        run(args, port, redis)
    finally:
        server.terminate()
        server.wait()


def run(args, port, redis):
    now = time.time() * 1000
    # The first occurrence at least 20 s away, so the transfer is up and idle before it.
    first = (int(now + 20_000) // EVERY_MS + 1) * EVERY_MS
    redis("EVAL", WRITE, 3, f"delayq_schedule:{{{QUEUE}}}", f"delayq_schedules:{{{QUEUE}}}",
          "delayq_scheduled:{delayq}", args.schedules, first, EVERY_MS, QUEUE,
          60 if args.spread else 1)
    transfer = subprocess.Popen(
        [args.delayq, "--url", f"redis://127.0.0.1:{port}", "transfer", QUEUE,
         *args.transfer_args.split()],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    offers, arrivals, stop = [], [], threading.Event()
    threading.Thread(target=watch_offers, args=(port, offers), daemon=True).start()
    consumer = threading.Thread(target=consume, args=(port, arrivals, stop))
    consumer.start()
    expected = args.schedules * args.minutes
    try:
        time.sleep(max(0, (first - 5_000) / 1000 - time.time()))
        redis("CONFIG", "SET", "slowlog-log-slower-than", 5_000)
        redis("SLOWLOG", "RESET")
        cpu_before, stats_before = server_figures(redis)
        deadline = first + args.minutes * EVERY_MS + 30_000
        while len(arrivals) < expected and time.time() * 1000 < deadline:
            time.sleep(0.2)
        cpu_after, stats_after = server_figures(redis)
        slow = [(entry[2], entry[3][0].decode(), entry[1]) for entry in redis("SLOWLOG", "GET", 20)]
    finally:
        stop.set()
        consumer.join()
        transfer.terminate()
        transfer.wait()
    report(args, first, offers, arrivals, cpu_after - cpu_before, stats_before, stats_after)
    print("calls over 5 ms (usec, command, unix time):", sorted(slow, reverse=True)[:10])


def report(args, first, offers, arrivals, cpu_s, before, after):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    last = first + (args.minutes - 1) * EVERY_MS + (59_000 if args.spread else 0)
    in_window = lambda ms: first - 30_000 <= ms <= last + 30_000  # noqa: E731
    lateness = lambda stamps: percentiles(  # noqa: E731
        [round(ms - nearest_occurrence(ms, args.spread), 1) for ms in stamps if in_window(ms)])
    per_thousand = 1000 / args.schedules / args.minutes
    usec = {name: (after[name][0] - before.get(name, (0, 0))[0],
                   after[name][1] - before.get(name, (0, 0))[1]) for name in after}
    figures = {
        "commit": commit,
        "schedules": args.schedules,
        "minutes": args.minutes,
        "transfer_args": args.transfer_args,
        "expected": args.schedules * args.minutes,
        "spread": args.spread,
        # Spread over the seconds, an early offer cannot be told from the second it belongs to.
        "offer_ms_after_occurrence": None if args.spread else lateness(offers),
        "arrival_ms_after_occurrence": lateness(arrivals),
        "redis_cpu_ms_per_1000_per_minute": round(cpu_s * 1000 * per_thousand, 2),
        "commandstats_per_1000_per_minute": {
            name: {"calls": round(calls * per_thousand, 1),
                   "usec": round(spent * per_thousand)}
            for name, (calls, spent) in sorted(usec.items()) if calls
        },
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
