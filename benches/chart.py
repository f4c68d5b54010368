#!/usr/bin/env python3
"""Draws the latency distributions (and transfer rates) from results.json as one PNG.

usage: chart.py results.json latency.png   (needs matplotlib; benches/run.sh installs it
into a venv under the workspace's target/)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"delayq-default": "#1f77b4", "delayq-adaptive": "#2ca02c", "java": "#d62728"}
LABELS = {"delayq-default": "delayq (default)", "delayq-adaptive": "delayq (adaptive)",
          "java": "Redisson (Java)"}


def main(src, dst):
    with open(src) as f:
        r = json.load(f)
    p = r["meta"]["plan"]
    lat = r.get("latency", [])
    transfers = r.get("transfer", [])
    fig, axes = plt.subplots(1, 3 if transfers else 2, figsize=(17 if transfers else 12, 5.2))

    # 1. CDF of due-to-consumer latency, log x.
    ax = axes[0]
    for row in lat:
        qs = row["quantiles_ms"]
        ys = [i / (len(qs) - 1) * 100 for i in range(len(qs))]
        xs = [max(q, 0.01) for q in qs]
        ax.plot(xs, ys, label=f"{LABELS.get(row['impl'], row['impl'])}: p99 {row['p99_ms']:.1f} ms",
                color=COLORS.get(row["impl"]), linewidth=2)
    ax.axvline(10, color="grey", linestyle="--", linewidth=1)
    ax.text(10, 3, " 10 ms target", color="grey", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("due-to-consumer latency (ms, log scale)")
    ax.set_ylabel("percent of values taken within")
    lo, hi = p["latency_delay_ms"]
    ax.set_title(f"Latency CDF: {p['latency_rate_per_sec']:,} offers/s, delays {lo}-{hi} ms")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)

    # 2. Percentile bars.
    ax = axes[1]
    names = ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"]
    width = 0.8 / max(len(lat), 1)
    for i, row in enumerate(lat):
        xs = [j + i * width for j in range(len(names))]
        vals = [max(row[n], 0.01) for n in names]
        bars = ax.bar(xs, vals, width, label=LABELS.get(row["impl"], row["impl"]),
                      color=COLORS.get(row["impl"]))
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks([j + width * (len(lat) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(["p50", "p90", "p99", "p99.9", "max"])
    ax.set_yscale("log")
    ax.set_ylabel("ms (log scale)")
    ax.set_title("Latency percentiles")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)

    # 3. Transfer rates per case.
    if transfers:
        ax = axes[2]
        cases = []
        for t in transfers:
            key = (t["pending"], t["pattern"])
            if key not in cases:
                cases.append(key)
        impls = ["delayq-default", "delayq-adaptive", "java"]
        width = 0.8 / len(impls)
        for i, imp in enumerate(impls):
            vals, xs, capped = [], [], []
            for j, (n, pat) in enumerate(cases):
                t = next((t for t in transfers if t["impl"] == imp and t["pending"] == n
                          and t["pattern"] == pat), None)
                if t:
                    xs.append(j + i * width)
                    vals.append(max(t["rate"], 1))
                    capped.append(t["capped"])
            bars = ax.bar(xs, vals, width, label=LABELS[imp], color=COLORS[imp])
            for b, c in zip(bars, capped):
                if c:
                    ax.text(b.get_x() + b.get_width() / 2, b.get_height(), "capped", ha="center",
                            va="bottom", fontsize=6, rotation=90)
        ax.set_xticks([j + width for j in range(len(cases))])
        ax.set_xticklabels([f"{n // 1000}k\n{'due' if pat.startswith('due') else 'random'}"
                            for n, pat in cases], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("entries moved per second (log scale)")
        ax.set_title("Transfer throughput by pending backlog")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)

    m = r["meta"]
    fig.suptitle(f"delayq vs Redisson {m['redisson_version']} on Redis {m['redis_version']} "
                 f"({m['mode']} run, {m['date']}, {m['cpus']} CPUs)", fontsize=11)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
