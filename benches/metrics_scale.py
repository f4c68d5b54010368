#!/usr/bin/env python3
"""The metrics' cost at many queues, measured: `delayq transfer --all --listen` over N queues,
in each `--metrics` mode, and without `--listen` for the process's own commands.

Starts its own redis-server on a free loopback port, fills it with N queues (one entry each,
due in an hour, as a Redisson offer leaves it) in one script call, then for each run starts
`delayq transfer --all` (release build), waits until the gauges have read every queue once
(the summed `delayq_pending` of /metrics reaches N: each queue holds one entry; without
`--listen`, a fixed settle time), and over a window counts the process's Redis commands with
`INFO commandstats` and fetches /metrics for its size. Prints a markdown table and the commit.
A bench, not a test: it judges nothing. Standard library only.

    python3 benches/metrics_scale.py [--bin target/release/delayq] [--queues 10000]
        [--window 30] [--settle 90] [--only baseline,per-queue,aggregate] [--json OUT]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

# The dashboard bench's client and fill, imported without a __pycache__ left in the checkout.
sys.dont_write_bytecode = True
from ui_targets import MANY, Redis, free_port, wait_for  # noqa: E402

# The commands of the gauges' reads (serve/gauges.rs): eight counts a queue, its keys' memory
# on some passes. ZCARD is once a queue, so its calls are the queues read; so is EXISTS (the
# pause flag), which the scheduler sends too, so it is counted as many times as ZCARD.
GAUGE_COMMANDS = ("llen", "zcard", "zcount", "zrangebyscore", "memory")
# This script's own commands, left out of the process's.
OWN_COMMANDS = ("info", "ping")
RUNS = ("baseline", "per-queue", "aggregate")


def commandstats(redis):
    """Calls per command so far, from INFO commandstats (a subcommand under its command)."""
    calls = {}
    for line in redis("INFO", "commandstats").decode().splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, fields = line[len("cmdstat_"):].split(":", 1)
        count = int(dict(f.split("=") for f in fields.split(","))["calls"])
        name = name.split("|")[0]
        calls[name] = calls.get(name, 0) + count
    return calls


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as reply:
        return reply.read()


def pending_total(body):
    """The summed `delayq_pending` of a scrape, per-queue series or one aggregate."""
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith("delayq_pending{") or line.startswith("delayq_pending "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_all_read(port, queues, patience):
    """Waits until /metrics holds every queue's pending entry: every queue read once."""
    started = time.monotonic()
    deadline = started + patience
    while True:
        try:
            if pending_total(scrape(port)) >= queues:
                return time.monotonic() - started
        except OSError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            sys.exit(f"the gauges did not read all {queues} queues in {patience} s")
        time.sleep(2)


def run(args, redis_port, mode):
    """One run of `delayq transfer --all` (`mode`: baseline without --listen, or the
    --metrics mode): its commands a second over the window and, listening, its scrape."""
    command = [args.bin, "--url", f"redis://127.0.0.1:{redis_port}", "transfer", "--all"]
    port = None
    if mode != "baseline":
        port = free_port()
        command += ["--listen", f"127.0.0.1:{port}", "--metrics", mode]
    redis = Redis(redis_port)
    redis("CONFIG", "RESETSTAT")
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if port is None:
            time.sleep(args.settle)
            first_pass = None
        else:
            first_pass = wait_all_read(port, args.queues, args.patience)
        print(f"{mode}: measuring from {time.monotonic() - started:.0f} s after start",
              flush=True)
        before, window_start = commandstats(redis), time.monotonic()
        time.sleep(args.window)
        after, elapsed = commandstats(redis), time.monotonic() - window_start
        body = scrape(port) if port is not None else b""
        if process.poll() is not None:
            sys.exit(f"delayq transfer ({mode}) exited with {process.returncode}")
    finally:
        process.terminate()
        process.wait()
    rates = {name: round((after[name] - before.get(name, 0)) / elapsed, 1)
             for name in after if after[name] > before.get(name, 0)}
    gauges = {name: rates.get(name, 0.0) for name in GAUGE_COMMANDS}
    gauges["exists"] = gauges["zcard"]
    return {
        "mode": mode,
        "first_pass_s": None if first_pass is None else round(first_pass, 1),
        "window_s": round(elapsed, 1),
        "scrape_bytes": len(body),
        "scrape_lines": body.count(b"\n"),
        "gauge_queues_per_s": gauges["zcard"],
        "gauge_commands_per_s": round(sum(gauges.values()), 1),
        "all_commands_per_s": round(sum(rate for name, rate in rates.items()
                                        if name not in OWN_COMMANDS), 1),
        "commands_per_s": rates,
    }


def size(count):
    if count >= 1_000_000:
        return f"{count / 1e6:.2f} MB"
    return f"{count / 1e3:.1f} KB"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(root, "target/release/delayq"))
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=30, help="seconds measured")
    parser.add_argument("--settle", type=float, default=90,
                        help="seconds before the window without --listen")
    parser.add_argument("--patience", type=float, default=900,
                        help="most seconds to wait for the gauges' first pass")
    parser.add_argument("--only", default=",".join(RUNS))
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = [mode for mode in args.only.split(",") if mode]
    if any(mode not in RUNS for mode in modes):
        sys.exit(f"--only: one or more of {', '.join(RUNS)}")
    if not os.access(args.bin, os.X_OK):
        subprocess.run(["cargo", "build", "--release", "-p", "delayq-cli"], cwd=root,
                       check=True)
    workdir = tempfile.mkdtemp(prefix="delayq-metrics-bench-")
    redis_port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir], stdout=subprocess.DEVNULL)
    try:
        redis = wait_for("redis-server", lambda: Redis(redis_port))
        wait_for("redis-server", lambda: redis("PING"))
        # The dashboard bench's queues: `bench:q00001`, ...
        redis("EVAL", MANY, 0, args.queues, int(time.time() * 1000) + 3_600_000)
        print(f"filled: {redis('DBSIZE')} keys, {args.queues} queues", flush=True)
        rows = [run(args, redis_port, mode) for mode in modes]
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"\ncommit {commit}, {args.queues:,} queues, {args.window:.0f} s window\n")
    print("| | scrape | its lines | gauges' reads | all the process's commands |")
    print("|---|---|---|---|---|")
    for row in rows:
        if row["mode"] == "baseline":
            print(f"| without `--listen` | | | | {row['all_commands_per_s']:,.0f}/s |")
            continue
        print(f"| `--metrics {row['mode']}` | {size(row['scrape_bytes'])} | "
              f"{row['scrape_lines']:,} | {row['gauge_queues_per_s']:,.0f} queues/s, "
              f"{row['gauge_commands_per_s']:,.0f} commands/s | "
              f"{row['all_commands_per_s']:,.0f}/s |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"commit": commit, "queues": args.queues, "window_s": args.window,
                       "runs": rows}, out, indent=1)


if __name__ == "__main__":
    main()
