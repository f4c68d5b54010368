#!/usr/bin/env python3
"""Renders the benchmark driver's results.json as RESULTS.md (standard library only).

usage: report.py results.json RESULTS.md
"""
import json
import sys


# The project's performance targets, one row each: the key of a figure `measure` takes from a
# run, how it must compare, the goal and how the goal is written. The driver only measures;
# every run is judged against this table here, so a target changes in this one place.
TARGETS = {
    "offer_vs_redisson": (">=", 1.5, ">= 1.5x"),
    "offer_vs_ceiling": (">=", 0.70, ">= 0.70"),
    "random_transfer_vs_redisson": (">=", 50, ">= 50x"),
    "random_transfer_longest_call_ms": ("<=", 10, "<= 10 ms"),
    "largest_transfer_rate": (">=", 100_000, ">= 100,000/s"),
    "largest_transfer_calls_over_25ms": ("<=", 0, "0"),
    "largest_transfer_ping_p99_ms": ("<=", 30, "<= 30 ms"),
    "lookup_longest_call_ms": ("<=", 10, "<= 10 ms"),
    "lookup_median_call_ms": ("<=", 3, "<= 3 ms"),
    "latency_p99_ms": ("<", 10, "< 10 ms"),
    "many_connections": ("<=", 3, "<= 3"),
    "many_rss_mib": ("<=", 64, "<= 64 MiB"),
    "many_idle_commands_per_sec": ("<=", 500, "<= 500/s"),
    "many_lateness_p99_ms": ("<=", 10, "<= 10 ms"),
    "many_found_share": (">=", 1.0, "all"),
    "shard_flow_vs_one_queue": (">=", 1.5, ">= 1.5x"),
    "shard_transfer_vs_one_queue": (">=", 10, ">= 10x"),
    "durable_vs_plain": (">=", 0.5, ">= 0.50"),
    "limits_not_binding": (">=", 0.8, ">= 0.80"),
    "gateway_publish_rate": (">=", 10_000, ">= 10,000/s"),
    "gateway_delivery_rate": (">=", 5_000, ">= 5,000/s"),
    "gateway_delivery_p99_ms": ("<=", 50, "<= 50 ms"),
    "gateway_delayed_lateness_p99_ms": ("<=", 50, "<= 50 ms"),
    "gateway_pending_rss_mib": ("<", 100, "< 100 MiB"),
    "gateway_cancel_median_ms": ("<", 1, "< 1 ms"),
}


def goal(key):
    """The number a target's figure is compared with."""
    return TARGETS[key][1]


def met(key, figure):
    """Whether `figure` meets the target `key`; None when the run could not measure it."""
    if figure is None:
        return None
    op, value, _ = TARGETS[key]
    return {">=": figure >= value, "<=": figure <= value, "<": figure < value}[op]


def fmt_rate(v):
    return f"{v:,.0f}/s"


def fmt_ms(us):
    return f"{us / 1000:.1f} ms"


def measure(r):
    """The figures of run `r` that a target judges, as rows: key (in TARGETS), what (the row's
    name in the report), figure (None: not measured), detail, and what the row is about."""
    rows = []

    def row(key, what, figure, detail, **about):
        rows.append({"key": key, "what": what, "figure": figure, "detail": detail, **about})

    for o in r.get("offer", []):
        c = o["concurrency"]
        d, j, b = o["delayq"]["rate"], o["java"]["rate"], o["redis_benchmark"]["rate"]
        row("offer_vs_redisson", f"offer c={c}: delayq / Redisson", d / j if j else 0.0,
            f"{d:.0f}/s vs {j:.0f}/s")
        row("offer_vs_ceiling", f"offer c={c}: delayq / redis-benchmark ceiling", d / b if b else 0.0,
            f"{d:.0f}/s vs {b:.0f}/s")
    transfers = r.get("transfer", [])
    random = [t for t in transfers if t["pattern"] == "random-delay"]
    rust = ("delayq-default", "delayq-adaptive")

    def find(imp, size):
        return next((t for t in random if t["impl"] == imp and t["pending"] == size), None)

    if random:
        # 100k pending, or the nearest size the run had (smoke runs are small).
        size = min({t["pending"] for t in random}, key=lambda n: abs(n - 100_000))
        java = find("java", size)
        java_rate = java["rate"] if java else 0.0
        for imp in rust:
            t = find(imp, size)
            if not t:
                continue
            row("random_transfer_vs_redisson", f"random-delay transfer, {size} pending: {imp} / Redisson",
                t["rate"] / java_rate if java_rate else 0.0, f"{t['rate']:.0f}/s vs {java_rate:.0f}/s",
                pending=size, impl=imp)
            row("random_transfer_longest_call_ms",
                f"random-delay transfer, {size} pending: {imp} longest script call (ms)",
                t["max_call_us"] / 1000, f"{t['calls_over_10ms']} calls over 10 ms")
        largest = max(t["pending"] for t in random)
        for imp in rust:
            t = find(imp, largest)
            if not t:
                continue
            capped = " (capped)" if t["capped"] else ""
            row("largest_transfer_rate", f"random-delay transfer, {largest} pending: {imp} rate",
                t["rate"], f"{t['moved']} moved in {t['secs']:.1f} s{capped}")
            row("largest_transfer_calls_over_25ms",
                f"random-delay transfer, {largest} pending: {imp} calls over 25 ms",
                t.get("calls_over_25ms"), f"longest {t['max_call_us'] / 1000:.1f} ms")
            ping = t.get("ping") or {}
            row("largest_transfer_ping_p99_ms", f"random-delay transfer, {largest} pending: {imp} PING p99 (ms)",
                ping.get("p99_ms"), f"max {ping.get('max_ms', 0):.1f} ms")
    lookups = r.get("lookup", [])
    if lookups:
        lk = max(lookups, key=lambda x: x["pending"])
        n = lk["pending"]

        def java_op(op):
            j = lk["java"][op]
            per_op = j["secs"] / j["ops"] if j.get("ops") else 0.0
            return (f"Redisson {op}: {per_op * 1000:.1f} ms per op (wall), longest call "
                    f"{j['max_us'] / 1000:.1f} ms")

        for op in ("remove", "contains", "reschedule", "offer_unique"):
            d = lk["delayq"].get(op)
            if not d:
                continue
            beside = java_op(op) if op in lk["java"] else "not in Redisson"
            row("lookup_longest_call_ms", f"{op} at {n} pending: delayq longest call (ms)",
                d["max_us"] / 1000, beside)
            row("lookup_median_call_ms", f"{op} at {n} pending: delayq median call (ms)",
                d["median_us"] / 1000, beside)
    for lat in r.get("latency", []):
        if lat["impl"] == "java":
            continue
        row("latency_p99_ms", f"due-to-consumer latency p99: {lat['impl']} (ms)", lat["p99_ms"],
            f"p50 {lat['p50_ms']:.1f} ms, max {lat['max_ms']:.1f} ms")
    many = r.get("many", {})
    d, java = many.get("delayq", {}), many.get("java-tuned", {})
    queues = d.get("queues")
    if queues:
        connections = d.get("connections")
        row("many_connections", f"{queues} queues: delayq connections", connections,
            d.get("connections_unmeasured") or f"Redisson (tuned pool): {java.get('connections')}")
        row("many_rss_mib", f"{queues} queues: delayq RSS (MiB)", d.get("rss_mib"),
            f"Redisson: {java.get('rss_mib', 0):.0f} MiB")
        row("many_idle_commands_per_sec", f"{queues} queues: Redis commands/s while idle, delayq",
            d.get("idle_commands_per_sec"), f"Redisson: {java.get('idle_commands_per_sec', 0):.0f}/s")
    for side, label in (("delayq", "standalone"), ("delayq-cluster", "3-master Cluster")):
        f = many.get(side, {})
        if not f.get("queues"):
            continue
        load = f.get("load", {})
        lateness = load.get("lateness_ms", {})
        row("many_lateness_p99_ms", f"{f['queues']} queues, {label}: due-to-target lateness p99 (ms)",
            lateness.get("p99"), f"{load.get('rate', 0):.0f} offers/s, p50 {lateness.get('p50')} ms, "
            f"max {lateness.get('max')} ms")
        row("many_found_share", f"{f['queues']} queues, {label}: found by `transfer --all`",
            f.get("found", 0) / f["queues"], f"in {f.get('ready_secs', 0):.2f} s",
            shown=f"{f.get('found', 0):,}")
    g = r.get("gateway")
    if g:
        pub = g["publish"]
        row("gateway_publish_rate", f"gateway: publish over HTTP, {g['connections']} keep-alive connections",
            pub["per_s"], f"{pub['ratio']:.2f} of the library's own offers ({pub['library_per_s']:,.0f}/s, "
            f"{pub['envelope_bytes']}-byte values) at the same concurrency")
        d = g["delivery"]
        row("gateway_delivery_rate", "gateway: deliveries/s to a loopback receiver, one process",
            d["per_s"], f"{d['messages']:,} messages, --concurrency {d['concurrency']}")
        lat = g["latency"]
        row("gateway_delivery_p99_ms",
            f"gateway: publish-to-delivery p99 at {lat['rate']:,}/s undelayed (ms)", lat["p99_ms"],
            f"p50 {lat['p50_ms']:.1f} ms, max {lat['max_ms']:.1f} ms, {lat['samples']:,} messages")
        late = g["delayed"]
        lo, hi = late["delay_secs"]
        row("gateway_delayed_lateness_p99_ms", f"gateway: lateness p99 of messages delayed {lo}-{hi} s (ms)",
            late["p99_ms"], f"p50 {late['p50_ms']:.1f} ms, max {late['max_ms']:.1f} ms, "
            f"{late['samples']:,} messages")
        pend = g["pending"]
        n = pend["messages"]
        small = "; the target is for 1,000,000" if n < 1_000_000 else ""
        row("gateway_pending_rss_mib", f"gateway: RSS with {n:,} pending messages of 1 KiB (MiB)",
            pend["rss_mib"], f"peak {pend['hwm_mib']:.1f} MiB{small}")
        c = pend["cancel"]
        row("gateway_cancel_median_ms", f"gateway: cancel by id at {n:,} pending, median (ms)",
            c["p50_ms"], f"p99 {c['p99_ms']:.2f} ms over {c['samples']:,} random ids{small}")
    for x in rows:
        x["met"] = met(x["key"], x["figure"])
    return rows


def explain(r):
    """Reasons for missed targets and notable contrasts, each tied to figures of this run."""
    notes = []
    for row in r.get("offer", []):
        c = row["concurrency"]
        d, b = row["delayq"]["rate"], row["redis_benchmark"]["rate"]
        u = row.get("redis_benchmark_unpipelined", {}).get("rate")
        if d < goal("offer_vs_ceiling") * b:
            text = (f"Offer at concurrency {c}: delayq {d:,.0f}/s is {d / b:.0%} of the pipelined ceiling "
                    f"({b:,.0f}/s with {32 * c} calls in flight). delayq had only {c} offer(s) in flight, "
                    "each waiting for its reply before the next")
            if u:
                text += (f"; redis-benchmark itself, unpipelined at the same concurrency, did {u:,.0f}/s "
                         f"(delayq = {d / u:.0%} of that)")
            text += (". The Rust driver, Redis and the JVM share the machine's CPUs, so client-side "
                     "work also takes CPU from Redis.")
            notes.append(text)
    by = {(t["pending"], t["pattern"], t["impl"]): t for t in r.get("transfer", [])}
    ratio_goal = goal("random_transfer_vs_redisson")
    for t in measure(r):
        if t["met"] is not False or t["key"] != "random_transfer_vs_redisson":
            continue
        n, imp = t["pending"], t["impl"]
        d, j = by.get((n, "random-delay", imp)), by.get((n, "random-delay", "java"))
        if d and j:
            notes.append(
                f"Random-delay transfer at {n:,} pending, {imp}: {d['rate']:,.0f}/s vs Redisson's "
                f"{j['rate']:,.0f}/s = {t['figure']:.1f}x (goal {ratio_goal}x would need "
                f"{ratio_goal * j['rate']:,.0f}/s). "
                f"delayq used {d['script_calls']:,} calls averaging {d['mean_call_us'] / 1000:.2f} ms of "
                f"server time, which kept Redis busy {d['script_calls'] * d['mean_call_us'] / 1e6 / d['secs']:.0%} "
                "of the elapsed time: the transfer is bound by Redis's CPU. Besides moving entries, each call "
                "extends the position index (ZADD, for up to half the call's time) and keeps it in step (ZRANK, "
                "LSET and ZREM per entry, one LREM pass over the order list per batch); delayq's own due-ordered rate at "
                f"this size was {by.get((n, 'due-ordered', imp), {}).get('rate', 0):,.0f}/s. Redisson's rate here is "
                f"over its first {j['secs']:.0f} s{' (capped)' if j['capped'] else ''}, while the most entries are pending.")
    for n in sorted({k[0] for k in by}):
        dd, jd = by.get((n, "due-ordered", "delayq-default")), by.get((n, "due-ordered", "java"))
        if dd and jd and jd["rate"] > dd["rate"]:
            notes.append(
                f"Due-ordered at {n:,} pending, Redisson is faster: {jd['rate']:,.0f}/s vs delayq "
                f"{dd['rate']:,.0f}/s (mean call {jd['mean_call_us'] / 1000:.2f} ms vs "
                f"{dd['mean_call_us'] / 1000:.2f} ms). Both find due entries at the head of the order list "
                "at once (Redisson by LREM, delayq by its head window and one LTRIM): the difference is "
                "the script's own overhead and this machine's noise.")
        for imp in ("delayq-default", "delayq-adaptive"):
            x = by.get((n, "random-delay", imp))
            if x and x["max_call_us"] > goal("random_transfer_longest_call_ms") * 1000:
                notes.append(
                    f"Random-delay at {n:,} pending, {imp}: longest script call {x['max_call_us'] / 1000:.1f} ms, "
                    f"{x['calls_over_10ms']} calls over 10 ms, {x['rate']:,.0f}/s"
                    f"{' (capped)' if x['capped'] else ''}. Due entries sit anywhere in a list this long, so "
                    "removing a batch in one LREM pass scans most of the list (about 1 ms per 100,000 "
                    "entries), and until the index covers the list (indexed for up to half of each call) the entries "
                    "beyond it are found by LREM scans.")
    for row in r.get("lookup", []):
        n = row["pending"]
        rm = row["delayq"].get("remove")
        if rm and (rm["max_us"] > goal("lookup_longest_call_ms") * 1000
                   or rm["median_us"] > goal("lookup_median_call_ms") * 1000):
            notes.append(
                f"remove at {n:,} pending: median {rm['median_us'] / 1000:.1f} ms, longest "
                f"{rm['max_us'] / 1000:.1f} ms. The value index finds the entry without reading the list, "
                "but a Redis list has no delete-by-position: the entry leaves by an LREM from the end "
                f"nearer to it, which compares about N/4 = {n // 4:,} elements on average and up to N/2 = "
                f"{n // 2:,}; the other operations ({', '.join(op for op in row['delayq'] if op != 'remove')}) "
                "do not touch the list.")
        b = row["index_build"]["calls"]
        if b["max_us"] > goal("lookup_longest_call_ms") * 1000:
            notes.append(
                f"Index build at {n:,} pending: longest call {b['max_us'] / 1000:.1f} ms (each call "
                "indexes for about 3 ms, in slices of 200 entries, plus a sweep).")
    floor = next((t["list_floor"] for t in r.get("transfer", []) if t.get("list_floor")), None)
    if floor:
        pass_us, walk_us, length = floor["pass_us"], floor["walk_us"], floor["length"]
        fits = max(0.0, (25_000 - pass_us) / walk_us) if walk_us else 0
        notes.append(
            f"What Redisson's layout allows at {length:,} pending, measured on this run's own list with no "
            f"script involved: one pass over the order list (LPOS of an absent value, what LREM does) took "
            f"{pass_us / 1000:.1f} ms, and reaching one random position (LINDEX, the walk LSET makes) "
            f"{walk_us:.1f} µs. Entries due at random sit anywhere in the list, and a list has no delete by "
            "position: a batch leaves either by one pass reaching its last entry (about the whole list) or "
            "by one nearer-end LREM each. "
            + (f"So a call that must stay under 25 ms cannot remove even one batch spread over the list "
               f"(the pass alone is {pass_us / 1000:.1f} ms), "
               if pass_us >= 25_000 else
               f"So a call under 25 ms can remove at most about {fits:,.0f} entries "
               f"((25 ms - pass) / walk), {fits / 0.025:,.0f}/s with Redis doing nothing else, ")
            + f"and even with calls of any length the walks alone cap the rate at {1e6 / walk_us:,.0f}/s "
            f"of Redis's one core. A remove by value reads N/4 = {length // 4:,} elements on average "
            f"(about {pass_us / 4000:.1f} ms) and up to N/2 (about {pass_us / 2000:.1f} ms). These "
            "targets need a shorter list per queue: the sharded queue divides it.")
    for t in r.get("transfer", []):
        if t["impl"] == "java" or t["pattern"] != "random-delay" or t["pending"] < 1_000_000:
            continue
        if (t.get("calls_over_25ms", 0) > goal("largest_transfer_calls_over_25ms")
                or t["rate"] < goal("largest_transfer_rate")):
            notes.append(
                f"Random-delay transfer at {t['pending']:,} pending, {t['impl']}: {t['rate']:,.0f}/s, "
                f"mean call {t['mean_call_us'] / 1000:.1f} ms, longest {t['max_call_us'] / 1000:.1f} ms, "
                f"{t.get('calls_over_25ms', 0)} calls over 25 ms. Each batch leaves the order list in one "
                "LREM pass up to its last marker, which at this length is most of the list whatever the "
                "batch's size, and each entry's marker is set by an LSET that walks the list's nodes from "
                "the nearer end; when the pass alone takes more than half the 20 ms budget, the call "
                "stretches to about twice the pass to amortise it (see the list's own costs above).")
    lat = {row["impl"]: row for row in r.get("latency", [])}
    for imp in ("delayq-default", "delayq-adaptive"):
        row = lat.get(imp)
        if row and met("latency_p99_ms", row["p99_ms"]) is False:
            notes.append(f"Latency p99 for {imp} is {row['p99_ms']:.1f} ms (goal "
                         f"{TARGETS['latency_p99_ms'][2]}).")
    j, d = lat.get("java"), lat.get("delayq-default")
    if j and d and j.get("server") and d.get("server"):
        notes.append(
            f"Redisson's latency (p50 {j['p50_ms']:.1f} ms, p99 {j['p99_ms']:.1f} ms) is not a 100 ms timer "
            f"tick here: it ran {j['server']['transfer_calls_per_sec']:,.0f} transfer calls/s against "
            f"delayq's {d['server']['transfer_calls_per_sec']:,.0f}/s (Redis CPU {j['server']['redis_cpu_percent']:.0f}% vs "
            f"{d['server']['redis_cpu_percent']:.0f}%): with a value due every 0.5 ms, its scheduler sees the next "
            "due time within its 10 ms window and transfers again at once instead of arming a timer. "
            "delayq sleeps until the next due time on a timer thread of its own (tokio's timers round up "
            "to the next millisecond) and times it by the server's clock.")
    notes += gateway_notes(r)
    return notes


def gateway_notes(r):
    """What this run's figures say about the gateway's missed targets."""
    g = r.get("gateway")
    if not g:
        return []
    notes = []
    cpus = r["meta"].get("cpus") or 0

    def busy(cpu):
        parts = [cpu.get("gateway_cores", 0.0), cpu["redis_cores"], cpu["driver_cores"]]
        return (f"the gateway used {parts[0]:.2f} cores, Redis {parts[1]:.2f} and the driver (load "
                f"generator and receiver) {parts[2]:.2f}: {sum(parts):.2f} of the machine's {cpus}")

    def ceiling(cpu, per_s):
        """CPU ms per message, and the rate all the machine's cores would allow at that cost."""
        total = cpu.get("gateway_cores", 0.0) + cpu["redis_cores"] + cpu["driver_cores"]
        ms = total / per_s * 1000 if per_s else 0.0
        return (f"{ms:.2f} ms of CPU a message in all, so {cpus} cores doing nothing else would allow "
                f"about {cpus / ms * 1000:,.0f}/s" if ms else "no CPU measured")

    pub = g["publish"]
    if met("gateway_publish_rate", pub["per_s"]) is False:
        notes.append(
            f"Gateway publish: {pub['per_s']:,.0f}/s, {pub['ratio']:.2f} of the library's offers. While "
            f"publishing, {busy(pub['http']['cpu'])}: {ceiling(pub['http']['cpu'], pub['per_s'])}. A "
            "publish is more than an offer: an HTTP request parsed and answered, the message's record "
            "written beside its entry, the entry's handle indexed and an event appended (four Redis "
            "calls against the offer's one).")
    d = g["delivery"]
    if met("gateway_delivery_rate", d["per_s"]) is False:
        # The CPU was measured from the resume to the last delivery.
        window = d["first_after_resume_ms"] / 1000 + d["secs"]
        per_s = d["messages"] / window if window else 0.0
        notes.append(
            f"Gateway delivery: {d['per_s']:,.0f}/s; from the resume to the last delivery "
            f"{busy(d['cpu'])}: {ceiling(d['cpu'], per_s)}.")
    lat = g["latency"]
    if met("gateway_delivery_p99_ms", lat["p99_ms"]) is False and d["per_s"] < 1.5 * lat["rate"]:
        notes.append(
            f"Publish-to-delivery at {lat['rate']:,}/s: p50 {lat['p50_ms']:,.0f} ms, p99 "
            f"{lat['p99_ms']:,.0f} ms. The deliveries a second measured above ({d['per_s']:,.0f}) "
            f"leave little room over {lat['rate']:,}/s, and the publishes take CPU from the same "
            "cores: messages wait in the queue.")
    return notes


def many_section(many, w):
    """One process keeping N queues moving, delayq beside Redisson."""
    d = many.get("delayq", {})
    w("## Many queues: one process keeping every queue moving")
    w("")
    w(f"Each side on a flushed server with {d.get('queues', 0):,} Redisson delayed queues (one parked value "
      "each). delayq = the CLI, `delayq transfer --all --match 'mq-*'` (it finds the queues itself); "
      "Redisson = one JVM holding an `RDelayedQueue` per queue, with the default client config "
      "(`java-default`) or a subscription pool big enough for every channel (`java-tuned`: 1,000 "
      "subscriptions per connection). Connections are the server's `connected_clients` with the process "
      "running minus before it started; idle commands are INFO's `total_commands_processed` over the idle "
      "window; RSS is the process's VmRSS. Then values are offered at a steady rate to random queues with "
      "random delays; lateness is from the due time to the moment a reader, woken by the target list's "
      "keyspace notification, has popped the value (so it includes one notification and one LPOP).")
    w("")
    w("| side | queues held | ready in | connections | RSS | idle commands/s | idle CPU | offers/s | "
      "received | lateness p50 | p99 | p99.9 | max |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for side in ("delayq", "java-default", "java-tuned", "delayq-cluster"):
        f = many.get(side)
        if not f:
            continue
        load = f.get("load", {})
        lat = load.get("lateness_ms", {})
        got = f"{load.get('received', 0):,} of {load.get('offered', 0):,}"
        connections = f.get("connections")
        w(f"| {side} | {f['held']:,} of {f['queues']:,} | {f.get('ready_secs', 0):.1f} s | "
          f"{'not measured' if connections is None else connections} | {f.get('rss_mib', 0):.0f} MiB | "
          f"{f.get('idle_commands_per_sec', 0):,.0f} | {f.get('idle_cpu_pct', 0):.1f}% | "
          f"{load.get('rate', 0):,.0f} | {got} | {lat.get('p50', 0):.1f} ms | {lat.get('p99', 0):.1f} ms | "
          f"{lat.get('p999', 0):.1f} ms | {lat.get('max', 0):.1f} ms |")
    w("")
    jd = many.get("java-default", {})
    if jd.get("start", {}).get("error"):
        w(f"- Redisson with its default config stopped at {jd['held']:,} instances: "
          f"`{jd['start']['error'].strip()}`; its figures above are for those {jd['held']:,} queues.")
    for side in ("java-default", "java-tuned"):
        f = many.get(side, {})
        load = f.get("load", {})
        miss = load.get("missing", 0)
        if miss:
            w(f"- {side}: {miss} offered value(s) never reached the target list within the "
              f"wait (delay + 15 s); {load.get('still_delayed', '?')} were still in the delayed queues "
              "at the end (due, never transferred).")
    for side in ("delayq", "java-default", "java-tuned", "delayq-cluster"):
        why = many.get(side, {}).get("connections_unmeasured")
        if why:
            w(f"- {side}: connections not measured: {why} (another client left meanwhile).")
    c = many.get("delayq-cluster")
    if c:
        w(f"- Cluster: {c['found']:,} of {c['queues']:,} queues found on 3 masters "
          f"(keys per master: {', '.join(str(k) for k in c.get('keys_per_master', []))}); "
          "its connections are summed over the 3 masters.")
    w("")


def shard_section(sh, w):
    """One logical queue over Cluster masters, against one unsharded queue."""
    f, t = sh["flow"], sh["transfer"]
    w("## Sharded queues")
    w("")
    w(f"A local Redis Cluster of {sh['masters']} masters on loopback (no replicas), on the same 2 cores "
      f"as the driver. *1 queue*: one ordinary delayed queue (one hash slot, so one master); "
      f"*{sh['shards']} shards*: a `ShardedQueue` of {sh['shards']} Redisson-compatible queues, a value's "
      "shard by the CRC32 of its encoded bytes. Script times and CPU are the masters' own (INFO "
      "commandstats, SLOWLOG over 100 µs, INFO cpu, summed over the masters); *driver CPU* is this "
      "benchmark process (producers, schedulers, consumers); *machine busy* is Redis + driver CPU over "
      "both cores' time. The backlog case moves with one task per queue, adaptive batches up to 5,000"
      + (f" and a call budget of {t['call_budget_ms']} ms" if t.get("call_budget_ms") else "") + ".")
    w("")
    over = (t.get("sharded_server") or {}).get("calls_over_10ms")
    flow_goal, transfer_goal = goal("shard_flow_vs_one_queue"), goal("shard_transfer_vs_one_queue")
    w(f"Targets: offer + transfer + take at least {flow_goal}x one queue: {f['ratio']:.2f}x, "
      f"{'met' if met('shard_flow_vs_one_queue', f['ratio']) else 'missed'}; random-delay transfer at "
      f"least {transfer_goal}x one queue with no call over 10 ms: {t['ratio']:.1f}x, "
      f"{'met' if met('shard_transfer_vs_one_queue', t['ratio']) else 'missed'}"
      + (f", {over:,} calls over 10 ms" if over is not None else "") + ".")
    w("")
    w("| case | layout | rate | ratio | script calls | mean call | longest call (server) | longest call (client) | Redis CPU | driver CPU | machine busy |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = [
        (f"offer + transfer + take, {f['values']:,} values", "1 queue", f["one_queue_per_s"], None,
         f.get("one_queue_server")),
        ("", f"{sh['shards']} shards", f["sharded_per_s"], f["ratio"], f.get("sharded_server")),
        (f"random-delay transfer, {t['pending']:,} pending", "1 queue", t["one_queue_per_s"], None,
         t.get("one_queue_server"), t["one_queue_longest_call_ms"]),
        ("", f"{sh['shards']} shards", t["sharded_per_s"], t["ratio"], t.get("sharded_server"),
         t["sharded_longest_call_ms"]),
    ]
    alone = t.get("alone")
    if alone:
        rows.append((f"random-delay transfer, {alone['pending']:,} pending", "1 shard alone",
                     alone["per_s"], None, alone["server"], alone["longest_call_ms"]))
    for row in rows:
        case, layout, rate, ratio, srv = row[:5]
        client = f"{row[5]:.1f} ms" if len(row) > 5 else "-"
        ratio_cell = f"{ratio:.2f}x" if ratio else "-"
        if srv:
            w(f"| {case} | {layout} | {fmt_rate(rate)} | {ratio_cell} | {srv['script_calls']:,} | "
              f"{srv['mean_call_us'] / 1000:.2f} ms | {fmt_ms(srv['max_call_us'])} | {client} | "
              f"{srv['redis_cpu_secs']:.1f} s | {srv['driver_cpu_secs']:.1f} s | {srv['machine_busy_percent']:.0f}% |")
        else:
            w(f"| {case} | {layout} | {fmt_rate(rate)} | {ratio_cell} | - | - | - | {client} | - | - | - |")
    w("")
    srv = f.get("sharded_server")
    if srv:
        w(f"- Offer + transfer + take, {sh['shards']} shards: the masters used "
          f"{srv['redis_cpu_secs']:.1f} s of CPU and the driver {srv['driver_cpu_secs']:.1f} s in "
          f"{srv['secs']:.1f} s, {srv['machine_busy_percent']:.0f}% of the 2 cores: "
          + ("the cores, not Redis, are the limit (more masters on the same cores add only their "
             "overhead)." if srv["machine_busy_percent"] >= 85 else
             "the cores were not saturated."))
    one = f.get("one_queue_server")
    if one and one["machine_busy_percent"] > 0:
        ceiling = 100 / one["machine_busy_percent"]
        w(f"- The one queue already kept {one['machine_busy_percent']:.0f}% of the 2 cores busy (Redis "
          f"{one['redis_cpu_secs']:.1f} s, driver {one['driver_cpu_secs']:.1f} s of CPU in {one['secs']:.1f} s): "
          f"even at the same CPU per value, no layout could be more than {ceiling:.2f}x faster on these "
          f"cores. The shards cost more per value ({srv['redis_cpu_secs'] / f['values'] * 1e6:.0f} µs of "
          f"Redis CPU against {one['redis_cpu_secs'] / f['values'] * 1e6:.0f} µs): each shard's scheduler "
          "wakes for offers the one queue's would have batched (a Cluster also delivers every publish "
          "to every node), so transfer calls move fewer values each.")
    srv = t.get("sharded_server")
    if srv:
        per = ", ".join(f"{c:.1f}" for c in srv["redis_cpu_secs_per_master"])
        w(f"- Random-delay transfer, {sh['shards']} shards: CPU seconds per master {per}; "
          f"{srv['machine_busy_percent']:.0f}% of the 2 cores busy. Each shard's list is "
          f"{t['pending'] // sh['shards']:,} long, so a batch's list pass reads about "
          f"1/{sh['shards']} of what one queue's does.")
        one = t.get("one_queue_server")
        if one and t["pending"]:
            w(f"- Redis CPU per entry moved: 1 queue {one['redis_cpu_secs'] / t['pending'] * 1e6:.1f} µs, "
              f"{sh['shards']} shards {srv['redis_cpu_secs'] / t['pending'] * 1e6:.1f} µs"
              + (f", 1 shard alone {alone['server']['redis_cpu_secs'] / alone['pending'] * 1e6:.1f} µs"
                 if alone else "") + ".")
    if alone and srv:
        w(f"- Call lengths are wall-clock time (SLOWLOG): with {sh['masters']} masters and the driver on "
          f"2 cores, a master waits for a core in the middle of calls. {sh['shards']} shards: "
          f"{srv['calls_over_10ms']:,} of {srv['script_calls']:,} calls over 10 ms, the longest "
          f"{fmt_ms(srv['max_call_us'])}. The same shard's work with its master the only busy Redis "
          f"(*1 shard alone*): {alone['server']['calls_over_10ms']:,} of "
          f"{alone['server']['script_calls']:,} calls over 10 ms, the longest "
          f"{fmt_ms(alone['server']['max_call_us'])}, at {fmt_rate(alone['per_s'])}: about what each "
          f"master would do with a core of its own.")
    w("")


def durable_section(d, w):
    """Durable offers (WAIT on one replica) beside plain offers, at the same concurrency."""
    p, q = d["plain"], d["durable"]
    ratio = d["ratio"]
    w("## Durable offers")
    w("")
    w(f"{d['in_flight']} offers in flight on one fred client, to a master with {d['replicas']} replica "
      f"(both sides write to it); durable: `Durability::replicas({d['replicas']})`, "
      f"{d['timeout_ms']} ms timeout. Median of interleaved rounds; every confirmed value was "
      "checked to be on the replica when its round ended.")
    w("")
    w("| | offers/s | rounds | waits | offers per wait | not confirmed |")
    w("|---|---:|---|---:|---:|---:|")
    for name, x in (("plain", p), ("durable", q)):
        rounds = ", ".join(f"{v:,.0f}" for v in x["round_rates"])
        per_wait = f"{x['offers_per_wait']:.1f}" if x["waits"] else "-"
        w(f"| {name} | {x['rate']:,.0f} | {rounds} | {x['waits']:,} | {per_wait} | "
          f"{x['not_confirmed']:,} |")
    w("")
    verdict = "met" if met("durable_vs_plain", ratio) else "missed"
    w(f"Durable / plain: **{ratio:.2f}** (target {TARGETS['durable_vs_plain'][2]}: {verdict}).")
    w("")


def limits_section(d, w):
    """One worker's throughput under limits that never bind, against none."""
    w("## Limits that do not bind")
    w("")
    w(f"One worker of concurrency {d['concurrency']}, empty handler, {d['values_per_round']:,} "
      "values per round; queue-wide: a cap of 1,000 and 1,000,000/s; per key: a key per value, "
      "a key cap of 1,000. Median of alternating rounds.")
    w("")
    w("| | jobs/s | rounds | of none |")
    w("|---|---:|---|---:|")
    for name in ("none", "queue_wide", "per_key"):
        x = d[name]
        rounds = ", ".join(f"{v:,.0f}" for v in x["rounds"])
        w(f"| {name} | {x['median']:,.0f} | {rounds} | {x['ratio']:.2f} |")
    w("")
    for name in ("queue_wide", "per_key"):
        verdict = "met" if met("limits_not_binding", d[name]["ratio"]) else "missed"
        w(f"{name}: **{d[name]['ratio']:.2f}** of none (target "
          f"{TARGETS['limits_not_binding'][2]}: {verdict}).")
    w("")


def targets_table(targets, w, notes_below=True):
    """The targets judged in this run, one row each (`notes_below`: the report explains the
    missed ones further down)."""
    if not targets:
        return
    w("## Targets, within this run")
    w("")
    w("The goals are `report.py`'s table of targets; the figures are this run's.")
    w("")
    w("| target | figure | goal | met | detail |")
    w("|---|---:|---|---|---|")
    for t in targets:
        fig = t["figure"]
        if fig is None:
            shown = "-"
        else:
            shown = t.get("shown") or (f"{fig:.2f}" if fig < 100 else f"{fig:,.0f}")
        verdict = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        w(f"| {t['what']} | {shown} | {TARGETS[t['key']][2]} | {verdict} | {t['detail']} |")
    w("")
    missed = [t for t in targets if t["met"] is False]
    unmeasured = [t for t in targets if t["met"] is None]
    if missed:
        w(f"{len(missed)} of {len(targets)} targets missed"
          + ("; see *Why targets were missed* below." if notes_below else "."))
    elif not unmeasured:
        w(f"All {len(targets)} targets met.")
    if unmeasured:
        w(f"{len(unmeasured)} of {len(targets)} figures could not be measured in this run.")
    w("")


def gateway_section(g, w, smoke=False):
    """The QStash-compatible gateway: publish, delivery, pending messages."""
    build = "dev build: a smoke run's figures are not judged" if smoke else "release build"
    pub, d, lat, late, pend = g["publish"], g["delivery"], g["latency"], g["delayed"], g["pending"]
    flags = " ".join(g["gateway_flags"])
    w("## The HTTP gateway")
    w("")
    w(f"The real `delayq gateway` ({build}) on loopback, with a token file, a signing key file "
      f"and `{flags}`, against a redis-server of its own; the load generator (hyper, "
      f"{g['connections']} keep-alive connections) and the receiver (a hyper server answering 200 "
      "at once) run in the benchmark driver, on the same cores "
      f"(load average {g.get('loadavg_start', '?')} at the start of the phase, "
      f"{g.get('loadavg_end', '?')} at its end). *Cores* are CPU seconds over the wall time.")
    w("")
    w(f"**Publish**: `POST /v2/publish/URL` with a {pub['body_bytes']}-byte body and `Upstash-Delay: 1h`, "
      f"as fast as {g['connections']} connections go, against the library's `DelayedQueue::offer` of "
      f"{pub['envelope_bytes']}-byte values (the gateway's envelope of such a message) from "
      f"{g['connections']} tasks on one fred client, {pub['secs_per_round']} s per round, alternating, "
      "median round kept.")
    w("")
    w("| | messages/s | rounds | gateway cores | Redis cores | driver cores |")
    w("|---|---:|---|---:|---:|---:|")
    for name, x, rates in (("HTTP publish", pub["http"], pub["http_round_rates"]),
                           ("library offer", pub["library"], pub["library_round_rates"])):
        cpu = x["cpu"]
        gw = f"{cpu['gateway_cores']:.2f}" if "gateway_cores" in cpu else "-"
        w(f"| {name} | {x['rate']:,.0f} | {', '.join(f'{v:,.0f}' for v in rates)} | {gw} | "
          f"{cpu['redis_cores']:.2f} | {cpu['driver_cores']:.2f} |")
    w("")
    w(f"HTTP / library: **{pub['ratio']:.2f}**.")
    w("")
    cpu = d["cpu"]
    w(f"**Delivery**: {d['messages']:,} messages published undelayed while the queue's transfers were "
      f"paused (`delayq pause`), then resumed: {d['per_s']:,.0f} deliveries/s from the first delivery "
      f"to the last ({d['secs']:.2f} s; the first came {d['first_after_resume_ms']:.0f} ms after the "
      f"resume), gateway {cpu.get('gateway_cores', 0):.2f} cores, Redis {cpu['redis_cores']:.2f}, "
      f"driver {cpu['driver_cores']:.2f}; {d['duplicates']} delivered twice.")
    w("")
    if d.get("redis_commands"):
        top = ", ".join(f"`{c['command']}` {c['calls_per_message']:.1f} calls {c['us_per_message']:.1f} µs"
                        for c in d["redis_commands"])
        w(f"Redis's time per delivery by command (INFO commandstats; commands inside scripts "
          f"counted too): {top}.")
        w("")
    lo, hi = late["delay_secs"]
    w("| messages | published | samples | p50 | p90 | p99 | max | publisher behind (max) |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    w(f"| undelayed, publish-to-delivery | {lat['rate']:,}/s for {lat['secs']:g} s | {lat['samples']:,} | "
      f"{lat['p50_ms']:.1f} ms | {lat['p90_ms']:.1f} ms | {lat['p99_ms']:.1f} ms | {lat['max_ms']:.1f} ms | "
      f"{lat['publisher_behind_max_ms']:.1f} ms |")
    w(f"| delayed {lo}-{hi} s, due-to-delivery | {late['rate']:,}/s for {late['secs']:g} s | "
      f"{late['samples']:,} | {late['p50_ms']:.1f} ms | {late['p90_ms']:.1f} ms | {late['p99_ms']:.1f} ms | "
      f"{late['max_ms']:.1f} ms | {late['publisher_behind_max_ms']:.1f} ms |")
    w("")
    w("Publish-to-delivery is from the publish request's start to the receiver's first byte of the "
      "delivery; a delayed message's due time is its publish's start plus its delay, so its lateness "
      "is high by at most the publish's own round trip.")
    w("")
    c = pend["cancel"]
    w(f"**Pending**: a fresh gateway process published {pend['messages']:,} messages with "
      f"{pend['body_bytes']}-byte bodies and `Upstash-Delay: 1h` in {pend['publish_secs']:.1f} s "
      f"({pend['publish_per_s']:,.0f}/s); then its RSS was {pend['rss_mib']:.1f} MiB (peak "
      f"{pend['hwm_mib']:.1f} MiB; {pend['rss_start_mib']:.1f} MiB when it started), Redis's "
      f"used_memory {pend['redis_used_memory_mib']:,.0f} MiB. `DELETE /v2/messages/{{id}}` of "
      f"{c['samples']:,} random ids, one after the other on one connection, as the client timed them: "
      f"median {c['p50_ms']:.2f} ms, p90 {c['p90_ms']:.2f} ms, p99 {c['p99_ms']:.2f} ms, "
      f"max {c['max_ms']:.2f} ms (the first {c.get('first_ms', 0):.2f} ms).")
    w("")
    if c.get("redis_commands"):
        top = ", ".join(f"`{x['command']}` {x['calls_per_message']:.1f} calls {x['us_per_message']:,.1f} µs"
                        for x in c["redis_commands"])
        w(f"Redis's time per cancel by command: {top}.")
        w("")


def main(src, dst):
    with open(src) as f:
        r = json.load(f)
    m = r["meta"]
    out = []
    w = out.append
    if m["mode"] == "durable":
        w("# delayq benchmark results: durable offers")
        w("")
        w(f"Generated by `benches/run.sh --only durable` on {m['date']} at commit `{m['commit']}`, in "
          f"{r.get('total_secs', 0) / 60:.1f} min, on {m['cpus']} CPUs (load average "
          f"{m.get('loadavg_start', '?')} at the start, {m.get('loadavg_end', '?')} at the end), "
          "one private redis-server and one replica of it on loopback. Every figure below comes "
          "from that one run.")
        w("")
        durable_section(r["durable"], w)
        with open(dst, "w") as f:
            f.write("\n".join(out).rstrip() + "\n")
        return
    if m["mode"] == "limits":
        w("# delayq benchmark results: limits that do not bind")
        w("")
        w(f"Generated by `benches/run.sh --only limits` on {m['date']} at commit `{m['commit']}`, "
          f"on {m['cpus']} CPUs (load average {m.get('loadavg_start', '?')} at the start, "
          f"{m.get('loadavg_end', '?')} at the end), one private redis-server on loopback.")
        w("")
        limits_section(r["limits"], w)
        with open(dst, "w") as f:
            f.write("\n".join(out).rstrip() + "\n")
        return
    if m["mode"] == "gateway":
        w("# delayq benchmark results: the HTTP gateway")
        w("")
        w(f"Generated by `benches/run.sh --only gateway` on {m['date']} at commit `{m['commit']}`, in "
          f"{r.get('total_secs', 0) / 60:.1f} min, on {m['cpus']} CPUs (load average "
          f"{m.get('loadavg_start', '?')} at the start, {m.get('loadavg_end', '?')} at the end). "
          "Every figure below comes from that one run.")
        w("")
        targets_table(measure(r), w, notes_below=False)
        gateway_section(r["gateway"], w, smoke=m["mode"] == "smoke")
        for note in gateway_notes(r):
            w(f"- {note}")
        w("")
        with open(dst, "w") as f:
            f.write("\n".join(out).rstrip() + "\n")
        return
    if m["mode"] == "shard":
        w("# delayq benchmark results: sharded queues")
        w("")
        w(f"Generated by `benches/run.sh --only shard` on {m['date']} at commit `{m['commit']}`, in "
          f"{r.get('total_secs', 0) / 60:.1f} min, on {m['cpus']} CPUs (load average "
          f"{m.get('loadavg_start', '?')} at the start, {m.get('loadavg_end', '?')} at the end). "
          "Every figure below comes from that one run.")
        w("")
        shard_section(r["shard"], w)
        with open(dst, "w") as f:
            f.write("\n".join(out).rstrip() + "\n")
        return
    p = m["plan"]
    w("# delayq benchmark results")
    w("")
    w(f"Generated by `benches/run.sh{' --smoke' if m['mode'] == 'smoke' else ''}` "
      f"on {m['date']} at commit `{m['commit']}`, in {r.get('total_secs', 0) / 60:.1f} min. "
      "Every figure below comes from that one run, on one private redis-server; "
      "`results.json` holds the raw figures and `latency.png` the latency distributions.")
    w("")
    w(f"- Machine: {m['cpus']} CPUs ({m['cpu_model']}), shared by Redis, the Rust driver and the JVM "
      f"(and other work: load average {m.get('loadavg_start', '?')} at the start, "
      f"{m.get('loadavg_end', '?')} at the end).")
    w(f"- Redis {m['redis_version']} (`--save \"\" --appendonly no`, loopback); "
      f"Redisson {m['redisson_version'] or '?'} on {m['java_version']}, default client config, "
      "StringCodec; delayq with StringCodec on one fred client.")
    w("- delayq schedulers: `default` = `TransferConfig::default()` (at most 100 entries a call, "
      "like Redisson; 20 ms call budget; position index from 1,000 pending); `adaptive` = "
      "`with_adaptive_batch(5000, 5 ms)` (batches grow to 5,000 while calls are fast or the list "
      "pass needs amortising; `delayq transfer --max-batch 5000`). Java = Redisson's own transfer "
      "task (`getDelayedQueue(getBlockingQueue(name))`). Only one scheduler runs at a time.")
    w("")

    targets_table(measure(r), w)

    if "offer" in r:
        w("## Offer throughput")
        w("")
        w(f"Each case offers unique 18-byte values with a 1 h delay for {p['offer_secs_per_case']} s, "
          f"{p.get('offer_rounds', 1)} interleaved round(s) per level, median round shown "
          "(delayq: that many tokio tasks on one fred client; Redisson: that many threads calling "
          "`offer` synchronously). The ceiling is `redis-benchmark -P 32 -c <concurrency>` running "
          f"`lua/offer.lua` by EVALSHA, {p['redis_benchmark_requests']:,} calls, with a fixed 8-byte "
          "id and `value-__rand_int__` values (18 bytes).")
        w("")
        w("| concurrency | delayq | Redisson | redis-benchmark ceiling (-P 32) | delayq / Redisson | delayq / ceiling | redis-benchmark -P 1 (reference) |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        for row in r["offer"]:
            d, j, b = row["delayq"]["rate"], row["java"]["rate"], row["redis_benchmark"]["rate"]
            u = row.get("redis_benchmark_unpipelined", {}).get("rate")
            w(f"| {row['concurrency']} | {fmt_rate(d)} | {fmt_rate(j)} | {fmt_rate(b)} | "
              f"{d / j:.2f}x | {d / b:.0%} | {fmt_rate(u) if u else '-'} |")
        w("")

    if "transfer" in r:
        w("## Transfer throughput and longest script call")
        w("")
        w("Each case writes N already-due entries straight into Redisson's layout (what N offers "
          "leave after a scheduler outage), starts one scheduler and times it until the target "
          "list holds all N (polled every 2 ms). *due-ordered*: order-list position = due order; "
          "*random-delay*: due times drawn at random over an hour. Cases still running after "
          f"{p['transfer_cap_secs']:.0f} s are stopped (**capped**): their rate is over that window. "
          "Script times are the server's: count and mean from `INFO commandstats` (EVAL + EVALSHA), "
          "longest from `SLOWLOG` (threshold 100 µs).")
        w("")
        w("| pending | pattern | scheduler | moved | time | rate | script calls | mean call | longest call | calls > 10 ms | calls > 25 ms | PING p99 / max |")
        w("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for t in r["transfer"]:
            capped = " (**capped**)" if t["capped"] else ""
            ping = t.get("ping")
            ping_cell = f"{ping['p99_ms']:.1f} / {ping['max_ms']:.1f} ms" if ping else "-"
            w(f"| {t['pending']:,} | {t['pattern']} | {t['impl']} | {t['moved']:,} | "
              f"{t['secs']:.2f} s{capped} | {fmt_rate(t['rate'])} | {t['script_calls']:,} | "
              f"{t['mean_call_us'] / 1000:.2f} ms | {fmt_ms(t['max_call_us'])} | {t['calls_over_10ms']} | "
              f"{t.get('calls_over_25ms', '-')} | {ping_cell} |")
        w("")
        w("*PING*: another client sends PING every 2 ms while the case runs; p99 and longest wait.")
        w("")
        w("Speed-up over Redisson's scheduler (rate ratio):")
        w("")
        w("| pending | pattern | default / Redisson | adaptive / Redisson |")
        w("|---:|---|---:|---:|")
        keyed = {(t["pending"], t["pattern"], t["impl"]): t for t in r["transfer"]}
        for (n, pat, imp), t in keyed.items():
            if imp != "java":
                continue
            jr = t["rate"]
            dd = keyed.get((n, pat, "delayq-default"))
            da = keyed.get((n, pat, "delayq-adaptive"))
            cells = [f"{x['rate'] / jr:,.1f}x" if x and jr else "-" for x in (dd, da)]
            w(f"| {n:,} | {pat} | {cells[0]} | {cells[1]} |")
        w("")

    if "lookup" in r:
        w("## Finding values on big queues")
        w("")
        w("Each case fills a queue with N random-delay entries (delays 1 min to 1 h): half offered by "
          "Redisson (8 threads calling `offer`), half by delayq (`offer_all`), at the same time. "
          "delayq's first lookup builds its value index (`delayq_values:{NAME}`) in bounded calls; "
          "then each operation runs on random values, one call after the other. Times are the "
          "server's, per script call, from `SLOWLOG` (threshold 0). Redisson's `contains` and "
          "`remove` walk the order list (LINDEX by LINDEX): a few calls each.")
        w("")
        w("| pending | index build | calls | longest | server time | index memory |")
        w("|---:|---:|---:|---:|---:|---:|")
        for row in r["lookup"]:
            b = row["index_build"]
            c = b["calls"]
            w(f"| {row['pending']:,} | {b['secs']:.1f} s | {c['calls']:,} | {fmt_ms(c['max_us'])} | "
              f"{c['total_us'] / 1e6:.1f} s | {b['bytes'] / 1048576:.1f} MiB |")
        w("")
        w("| pending | operation | by | ops | script calls | median call | p99 call | longest call | wall time per op |")
        w("|---:|---|---|---:|---:|---:|---:|---:|---:|")
        for row in r["lookup"]:
            for who in ("delayq", "java"):
                for op, d in row[who].items():
                    per_op = d["secs"] / d["ops"] * 1000 if d.get("ops") else 0
                    # Redisson's client also runs its transfer task's calls: only its longest
                    # call and its wall time per operation are its lookups'.
                    median = fmt_ms(d["median_us"]) if who == "delayq" else "-"
                    p99 = fmt_ms(d["p99_us"]) if who == "delayq" else "-"
                    w(f"| {row['pending']:,} | {op} | {'delayq' if who == 'delayq' else 'Redisson'} | "
                      f"{d['ops']} | {d['calls']:,} | {median} | {p99} | {fmt_ms(d['max_us'])} | {per_op:.1f} ms |")
        w("")

    if "latency" in r:
        lo, hi = p["latency_delay_ms"]
        w("## Due-to-consumer latency")
        w("")
        w(f"{p['latency_rate_per_sec']:,} offers/s for {p['latency_secs']:.0f} s, each with a random "
          f"delay of {lo}-{hi} ms; one consumer takes them (BLPOP) in the same process as the producer "
          "and the scheduler. Latency = the time take() returned minus the value's due time (the "
          "producer's clock + delay, in whole ms, so figures can be up to 1 ms high).")
        w("")
        w("| client | samples | p50 | p90 | p99 | p99.9 | max | mean | transfer calls/s | Redis CPU |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in r["latency"]:
            srv = row.get("server", {})
            calls = f"{srv['transfer_calls_per_sec']:,.0f}" if srv else "-"
            cpu = f"{srv['redis_cpu_percent']:.0f}%" if srv else "-"
            w(f"| {row['impl']} | {row['samples']:,} | {row['p50_ms']:.1f} ms | {row['p90_ms']:.1f} ms | "
              f"{row['p99_ms']:.1f} ms | {row['p999_ms']:.1f} ms | {row['max_ms']:.1f} ms | {row['mean_ms']:.1f} ms | "
              f"{calls} | {cpu} |")
        w("")
        w("*Transfer calls/s* = script calls during the case minus one per offer (INFO commandstats); "
          "*Redis CPU* = Redis's user + system CPU time over the case's wall time (INFO cpu).")
        w("")

    if "drain" in r:
        w("## Consumer drain rate")
        w("")
        w(f"One consumer empties a target list holding {p['drain_count']:,} values: one value per call "
          "(delayq `Consumer::poll(timeout)` = BLPOP; Redisson `RBlockingQueue.poll(timeout)` = BLPOP), "
          "or 100 per call (delayq `poll_many(100)`, Redisson `poll(100)`, both LPOP with a count).")
        w("")
        w("| how | delayq | Redisson | delayq / Redisson |")
        w("|---|---:|---:|---:|")
        hows = []
        for row in r["drain"]:
            if row["how"] not in hows:
                hows.append(row["how"])
        for how in hows:
            d = next(x for x in r["drain"] if x["how"] == how and x["impl"] == "delayq")
            j = next(x for x in r["drain"] if x["how"] == how and x["impl"] == "java")
            w(f"| {how} | {fmt_rate(d['rate'])} | {fmt_rate(j['rate'])} | {d['rate'] / j['rate']:.2f}x |")
        w("")

    if "rss" in r:
        s = r["rss"]
        d, j = s["delayq"], s["java"]
        w("## Client memory")
        w("")
        w(f"A fresh process offers {s['count']:,} values (delay 0) from {s['concurrency']} tasks/threads "
          f"while {s['concurrency']} consumers take them all, its scheduler running; then it reads its "
          "own `/proc/self/status`. The JVM runs with its default heap settings "
          f"(max heap {j.get('heap_max_kib', 0) / 1024 / 1024:.1f} GiB on this machine).")
        w("")
        w("| client | RSS after | peak RSS (VmHWM) | time for offers + takes |")
        w("|---|---:|---:|---:|")
        w(f"| delayq | {d['rss_kib'] / 1024:.1f} MiB | {d['hwm_kib'] / 1024:.1f} MiB | {d['secs']:.1f} s |")
        w(f"| Redisson | {j['rss_kib'] / 1024:.1f} MiB | {j['hwm_kib'] / 1024:.1f} MiB | {j['secs']:.1f} s |")
        w(f"\nRedisson's JVM heap in use at the end: {j.get('heap_used_kib', 0) / 1024:.1f} MiB.")
        w("")

    if "many" in r:
        many_section(r["many"], w)

    if "shard" in r:
        shard_section(r["shard"], w)

    if "gateway" in r:
        gateway_section(r["gateway"], w, smoke=m["mode"] == "smoke")

    notes = explain(r)
    if notes:
        w("## Why targets were missed, and other observations")
        w("")
        w("Computed from this run's figures by `report.py`; the reasons in words are the "
          "benchmark author's reading of them.")
        w("")
        for n in notes:
            w(f"- {n}")
        w("")

    with open(dst, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
