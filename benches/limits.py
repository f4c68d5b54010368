#!/usr/bin/env python3
"""Flow-control limits across real `delayq work` processes (release build) on a private
redis-server, every target of the limits in one run.

    cargo build --release -p delayq-cli
    nice python3 benches/limits.py [--delayq target/release/delayq] [--rate-seconds 60]
        [--burst 10000] [--out benches/results/limits-COMMIT.json]

Each command a worker runs is bash appending `s TIME PID PPID ADMITTED VALUE` at its start and
`e TIME PID` at its end (TIME: `$EPOCHREALTIME` in microseconds; ADMITTED: `$DELAYQ_ADMITTED_MS`,
when the limits granted the job, by the Redis server's clock, `-` when unset) to one file, so
every figure is what the commands saw. Phases, each on a queue of its own:
- cap: `limit set --concurrency 3`, four workers of `--concurrency 10 --visibility 5s`, 300
  commands of 200 ms; one worker is stopped, then killed (`kill -9`) with its running commands
  while it holds a slot. The most commands at once, and how long after the kill the survivors
  run 3 at once again (the killed worker's slots back: within one lease, 5 s).
- rate: `limit set --rate 100/s`, four workers of `--concurrency 10`, commands that only write
  their start, for 60 s from the first start: completions against 6,000 (within 2%), the most
  grants in any one-second window by the server's clock (the target's measure: at most 101),
  and, for information, the most command starts in any one-second window by the commands'
  clock (a spawned command starts some ms after its grant, unevenly, so these windows can hold
  one more).
- per key: `--key-pointer /k --key-concurrency 1`, four workers of `--concurrency 10`, commands
  of 10 ms; 10,000 values of key A offered at once, then 10 of key B: how long after their
  offer B's start, and each key's most at once (at most 1).
- not binding: one worker of `--concurrency 10` running `true` over 3,000 values, without
  limits and with limits that never bind (cap 10,000, 100,000/s, a key rule with a per-key cap
  of 10,000), alternately, twice each: the throughput ratio (target at least 80%).
Prints a Markdown table and writes the JSON.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_targets import Redis, free_port, wait_for  # noqa: E402


class Bench:
    def __init__(self, args, port, workdir):
        self.args = args
        self.url = f"redis://127.0.0.1:{port}"
        self.workdir = workdir

    def delayq(self, *argv, stdin=None):
        return subprocess.run([self.args.delayq, "--url", self.url, *argv], input=stdin,
                              check=True, capture_output=True).stdout

    def offer(self, queue, values):
        """Offers every value due now in one command (NUL-separated on stdin)."""
        data = b"\0".join(v.encode() for v in values)
        self.delayq("--null-data", "offer", queue, "--value-file", "-", stdin=data)

    def workers(self, queue, count, flags, command):
        return [subprocess.Popen(
            [self.args.delayq, "--url", self.url, "work", queue, "--grace", "2s", *flags,
             "--", *command],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(count)]

    def log(self, name):
        return os.path.join(self.workdir, f"{name}.log")


def recording(log, hold):
    """A command writing its start and end to `log` with `hold` seconds between them."""
    end = f'; sleep {hold}; echo "e ${{EPOCHREALTIME/./}} $$" >> {log}' if hold else ""
    start = f'echo "s ${{EPOCHREALTIME/./}} $$ $PPID ${{DELAYQ_ADMITTED_MS:--}} $DELAYQ_VALUE"'
    return ["bash", "-c", f"{start} >> {log}{end}"]


def runs_of(log):
    """The runs a log holds: dicts with value, pid, worker, start, end (µs; end None while
    running or when it writes none) and admitted (ms, server clock; None without limits)."""
    runs, by_pid = [], {}
    try:
        lines = open(log).read().splitlines()
    except FileNotFoundError:
        return runs
    for line in lines:
        fields = line.split(" ", 5)
        if fields[0] == "s" and len(fields) == 6:
            by_pid[fields[2]] = len(runs)
            admitted = None if fields[4] == "-" else int(fields[4])
            runs.append({"value": fields[5], "pid": int(fields[2]), "worker": int(fields[3]),
                         "start": int(fields[1]), "end": None, "admitted": admitted})
        elif fields[0] == "e" and len(fields) == 3 and fields[2] in by_pid:
            runs[by_pid[fields[2]]]["end"] = int(fields[1])
    return runs


def most_at_once(runs, until):
    """The most runs going at once, and the first time it was reached."""
    events = sorted([(r["start"], 1) for r in runs]
                    + [(r["end"] if r["end"] is not None else until, -1) for r in runs])
    now = most = at = 0
    for time_us, step in events:
        now += step
        if now > most:
            most, at = now, time_us
    return most, at


def most_within(times, width):
    """The most of `times` (sorted) in any window of `width` (from one of them, end excluded)."""
    j, most = 0, 0
    for i, start in enumerate(times):
        while j < len(times) and times[j] < start + width:
            j += 1
        most = max(most, j - i)
    return most


def stop(workers):
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.wait()


def wait_until(what, check, patience):
    deadline = time.monotonic() + patience
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.1)


def kill_host(worker):
    """Stops the worker, kills it and every command it runs (as a host that dies); the time
    (µs) when they are all gone."""
    os.kill(worker.pid, signal.SIGSTOP)
    children = []
    for task in os.listdir(f"/proc/{worker.pid}/task"):
        with open(f"/proc/{worker.pid}/task/{task}/children") as f:
            children += [int(pid) for pid in f.read().split()]
    os.kill(worker.pid, signal.SIGKILL)
    for child in children:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    worker.wait()
    while any(os.path.exists(f"/proc/{c}") and open(f"/proc/{c}/stat").read().rsplit(") ", 1)[1][0] != "Z"
              for c in children if os.path.exists(f"/proc/{c}")):
        time.sleep(0.01)
    return time.time_ns() // 1000


def phase_cap(bench):
    queue, log, values = "bench-cap", bench.log("cap"), 300
    bench.delayq("limit", "set", queue, "--concurrency", "3")
    workers = bench.workers(queue, 4, ["--concurrency", "10", "--visibility", "5s"],
                            recording(log, 0.2))
    try:
        bench.offer(queue, [f"v{i}" for i in range(values)])
        time.sleep(3)
        victim = workers[0].pid
        wait_until("a command of the first worker",
                   lambda: any(r["worker"] == victim and r["end"] is None for r in runs_of(log)),
                   60)
        killed = kill_host(workers[0])
        runs = wait_until("every value handled", lambda: (
            lambda rs: rs if len({r["value"] for r in rs if r["end"]}) == values else None)(
            runs_of(log)), 600)
    finally:
        stop(workers[1:])
    most, _ = most_at_once(runs, killed)
    after = [r for r in runs if r["worker"] != victim and r["start"] >= killed]
    most_after, full_at = most_at_once(after, 2**62)
    return {"most_at_once": most, "cap": 3, "survivors_most_at_once": most_after,
            "slots_back_ms_after_kill": round((full_at - killed) / 1000),
            "lease_ms": 5000, "values": values, "runs": len(runs)}


def phase_rate(bench):
    queue, log, seconds = "bench-rate", bench.log("rate"), bench.args.rate_seconds
    bench.delayq("limit", "set", queue, "--rate", "100/s")
    bench.offer(queue, [f"r{i}" for i in range(100 * seconds + 1_000)])
    workers = bench.workers(queue, 4, ["--concurrency", "10"], recording(log, 0))
    try:
        first = wait_until("the first start", lambda: runs_of(log), 60)[0]["start"]
        time.sleep(max(0, first / 1e6 + seconds + 1 - time.time()))
    finally:
        stop(workers)
    runs = runs_of(log)
    starts = sorted(r["start"] for r in runs)
    window = [s for s in starts if s < first + seconds * 1_000_000]
    # Every grant recorded, by the server's clock (ms): the bound the engine keeps.
    grants = sorted(r["admitted"] for r in runs if r["admitted"] is not None)
    expected = 100 * seconds
    return {"seconds": seconds, "starts": len(window), "expected": expected,
            "off_by_percent": round(100 * (len(window) - expected) / expected, 2),
            "grants": len(grants), "without_grant_time": len(runs) - len(grants),
            "most_grants_in_one_second": most_within(grants, 1_000),
            "most_starts_in_one_second": most_within(window, 1_000_000)}


def phase_per_key(bench):
    queue, log, burst = "bench-perkey", bench.log("perkey"), bench.args.burst
    bench.delayq("limit", "set", queue, "--key-pointer", "/k", "--key-concurrency", "1")
    workers = bench.workers(queue, 4, ["--concurrency", "10"], recording(log, 0.01))
    try:
        bench.offer(queue, [json.dumps({"k": "A", "i": i}) for i in range(burst)])
        offered_b = time.time_ns() // 1000
        bench.offer(queue, [json.dumps({"k": "B", "i": i}) for i in range(10)])
        runs = wait_until("the 10 B values", lambda: (
            lambda rs: rs if sum(1 for r in rs if '"B"' in r["value"] and r["end"]) == 10
            else None)(runs_of(log)), 600)
    finally:
        stop(workers)
    b_delays = sorted(round((r["start"] - offered_b) / 1000) for r in runs
                      if '"B"' in r["value"])
    now = time.time_ns() // 1000
    return {"burst": burst, "b_start_ms_after_offer": {"first": b_delays[0],
                                                        "last": b_delays[-1]},
            "a_started_before_last_b": sum(1 for r in runs if '"A"' in r["value"]
                                           and r["start"] < offered_b + b_delays[-1] * 1000),
            "most_at_once": {"A": most_at_once([r for r in runs if '"A"' in r["value"]], now)[0],
                             "B": most_at_once([r for r in runs if '"B"' in r["value"]], now)[0]}}


def drain_rate(bench, queue, values):
    """Values a second one worker of concurrency 10 handles, `true` as its command."""
    bench.offer(queue, [json.dumps({"k": f"K{i % 100}", "i": i}) for i in range(values)])
    began = time.monotonic()
    worker = bench.workers(queue, 1, ["--concurrency", "10"], ["true"])
    redis = bench.redis
    try:
        wait_until("the queue drained", lambda: redis(
            "ZCARD", f"redisson_delay_queue_timeout:{{{queue}}}") == 0 and redis(
            "LLEN", queue) == 0 and redis("ZCARD", f"delayq_inflight:{{{queue}}}") == 0, 600)
    finally:
        stop(worker)
    return values / (time.monotonic() - began)


def phase_not_binding(bench, values=3_000):
    plain, limited = "bench-plain", "bench-limited"
    bench.delayq("limit", "set", limited, "--concurrency", "10000", "--rate", "100000/s",
                 "--key-pointer", "/k", "--key-concurrency", "10000")
    rounds = {"none": [], "limits": []}
    for _ in range(2):
        rounds["none"].append(drain_rate(bench, plain, values))
        rounds["limits"].append(drain_rate(bench, limited, values))
    best = {k: max(v) for k, v in rounds.items()}
    return {"values": values, "per_second": {k: [round(x) for x in v] for k, v in rounds.items()},
            "ratio_best": round(best["limits"] / best["none"], 3)}


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--delayq", default="target/release/delayq")
    args.add_argument("--rate-seconds", type=int, default=60)
    args.add_argument("--burst", type=int, default=10_000)
    args.add_argument("--out", default=None)
    args = args.parse_args()
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            bench = Bench(args, port, workdir)
            bench.redis = wait_for("redis-server", lambda: Redis(port))
            figures = {"commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                                capture_output=True, text=True).stdout.strip()}
            for name, phase in [("cap", phase_cap), ("rate", phase_rate),
                                ("per_key", phase_per_key), ("not_binding", phase_not_binding)]:
                began = time.monotonic()
                figures[name] = phase(bench)
                figures[name]["phase_seconds"] = round(time.monotonic() - began, 1)
                print(name, json.dumps(figures[name]), flush=True)
    finally:
        server.terminate()
        server.wait()
    report(args, figures)


def report(args, figures):
    cap, rate, key, free = (figures[k] for k in ("cap", "rate", "per_key", "not_binding"))
    rows = [
        ("cap 3, 4 x --concurrency 10, one kill -9", f"most at once {cap['most_at_once']}",
         "<= 3"),
        ("  killed worker's slots back", f"{cap['slots_back_ms_after_kill']} ms after the kill",
         f"within one lease ({cap['lease_ms']} ms)"),
        (f"rate 100/s, 4 processes, {rate['seconds']} s",
         f"{rate['starts']} started ({rate['off_by_percent']:+}%)",
         f"{rate['expected']} within 2%"),
        ("  most grants in any one-second window (server clock)",
         str(rate["most_grants_in_one_second"]), "<= 101"),
        ("  most command starts in any one-second window (spawned command's clock)",
         str(rate["most_starts_in_one_second"]), "(for information)"),
        (f"per key: {key['burst']} A then 10 B, 1 at a time per key",
         f"B started {key['b_start_ms_after_offer']['first']}-"
         f"{key['b_start_ms_after_offer']['last']} ms after its offer", "the guide's bound"),
        ("  most at once of one key", f"A {key['most_at_once']['A']}, B {key['most_at_once']['B']}",
         "<= 1"),
        ("limits not binding vs none (values/s)",
         f"{free['per_second']['limits']} vs {free['per_second']['none']}: "
         f"{free['ratio_best'] * 100:.0f}%", ">= 80%"),
    ]
    print(f"\nat {figures['commit']}\n\n| measure | measured | target |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    out = args.out or f"benches/results/limits-{figures['commit']}.json"
    with open(out, "w") as f:
        json.dump(figures, f, indent=2)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
