#!/usr/bin/env python3
"""Checks what deploy/ ships against the metrics delayq records, without Prometheus or Grafana.

- Every metric name in the Grafana dashboard (deploy/grafana/delayq.json: its queries,
  variables and descriptions) and in the alert rules (deploy/prometheus/delayq-alerts.yml) is
  one of `METRICS` in src/metrics.rs (which scripts/check_docs.py keeps equal to the metrics
  table of docs/operations.md); a histogram's `_bucket`, `_sum` and `_count` series count as
  its name.
- The dashboard is JSON with unique panel ids, each query panel with at least one query.
- Every alert of the rules has, in deploy/prometheus/delayq-alerts.test.yml, a test case where
  it fires and one where it must not (`exp_alerts: []`), so that a rule that always fires or
  never fires fails `promtool test rules`.
- Every alert has a `runbook_url` annotation naming its own section of docs/runbooks.md (the
  heading the alert's name is), in this repository on its main branch.

Prints one line per check and `N passed, N failed`; exits 1 when a check fails. Standard library
only (promtool and systemd-analyze are run by scripts/check_deploy.sh).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_docs import (  # noqa: E402
    ROOT,
    Checks,
    metric_names,
    repository_problems,
    repository_url,
)

DASHBOARD = os.path.join("deploy", "grafana", "delayq.json")
RULES = os.path.join("deploy", "prometheus", "delayq-alerts.yml")
RULE_TESTS = os.path.join("deploy", "prometheus", "delayq-alerts.test.yml")
RUNBOOKS = "docs/runbooks.md"

METRIC = re.compile(r"\bdelayq_[a-z0-9_]*[a-z0-9]\b")
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def unknown_metrics(text, known):
    """The metric names in `text` that are not in `known` (a histogram's series as its name)."""
    unknown = set()
    for name in METRIC.findall(text):
        base = name
        for suffix in HISTOGRAM_SERIES:
            if name.endswith(suffix) and name[: -len(suffix)] in known:
                base = name[: -len(suffix)]
        if base not in known:
            unknown.add(name)
    return sorted(unknown)


def strings(node):
    """Every string inside a JSON document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)


def check_dashboard(checks, known):
    try:
        dashboard = json.loads(read(DASHBOARD))
    except (OSError, ValueError) as err:
        checks.report(False, f"{DASHBOARD}: cannot read it as JSON: {err}")
        return
    panels = dashboard.get("panels", [])
    ids = [p.get("id") for p in panels]
    problems = [f"panel id {i} used more than once" for i in sorted({i for i in ids if ids.count(i) > 1})]
    problems += [f"panel {p.get('title')!r} has no query" for p in panels
                 if p.get("type") != "row" and not any(t.get("expr") for t in p.get("targets", []))]
    checks.report(not problems, f"{DASHBOARD}: {len(panels)} panels, unique ids, each with a query",
                  problems)
    unknown = unknown_metrics("\n".join(strings(dashboard)), known)
    checks.report(not unknown, f"{DASHBOARD}: every metric it names is recorded by delayq",
                  [f"not in src/metrics.rs NAMES: {name}" for name in unknown])


def check_rules(checks, known):
    try:
        rules, tests = read(RULES), read(RULE_TESTS)
    except OSError as err:
        checks.report(False, f"alert rules: cannot read {err.filename}")
        return
    unknown = unknown_metrics(rules, known)
    checks.report(not unknown, f"{RULES}: every metric it names is recorded by delayq",
                  [f"not in src/metrics.rs NAMES: {name}" for name in unknown])
    alerts = re.findall(r"^\s*-\s*alert:\s*(\S+)\s*$", rules, re.M)
    cases = re.findall(r"alertname:\s*(\S+)\s*\n\s*exp_alerts:\s*(\[\])?", tests)
    problems = []
    for alert in alerts:
        if not any(name == alert and not empty for name, empty in cases):
            problems.append(f"{alert}: no test case where it fires")
        if not any(name == alert and empty for name, empty in cases):
            problems.append(f"{alert}: no test case where it must not fire (exp_alerts: [])")
    problems += [f"{name}: tested, but no such alert" for name in sorted({n for n, _ in cases})
                 if name not in alerts]
    checks.report(bool(alerts) and not problems,
                  f"{RULE_TESTS}: each of the {len(alerts)} alerts fires in one case and must not "
                  "in another", problems)


def alert_blocks(rules):
    """(name, text) of each alert of the rules file, its text up to the next rule."""
    starts = list(re.finditer(r"^\s*-\s*(?:alert|record):\s*(\S+)\s*$", rules, re.M))
    for at, start in enumerate(starts):
        end = starts[at + 1].start() if at + 1 < len(starts) else len(rules)
        if re.match(r"\s*-\s*alert:", start.group(0)):
            yield start.group(1), rules[start.start():end]


def check_runbooks(checks):
    try:
        rules = read(RULES)
    except OSError as err:
        checks.report(False, f"alert rules: cannot read {err.filename}")
        return
    repository = repository_url()
    problems, count = [], 0
    for name, block in alert_blocks(rules):
        count += 1
        url = re.search(r"^\s*runbook_url:\s*\"?([^\"\s]+)\"?\s*$", block, re.M)
        want = f"{repository}/blob/main/{RUNBOOKS}#{name.lower()}"
        if not url:
            problems.append(f"{name}: no runbook_url annotation")
        elif url.group(1) != want:
            problems.append(f"{name}: runbook_url {url.group(1)}, not {want}")
        else:
            _, why = repository_problems([(name, url.group(1))], repository)
            problems += why
    checks.report(count > 0 and not problems,
                  f"{RULES}: each of the {count} alerts has a runbook_url to its section of "
                  f"{RUNBOOKS}", problems)


def main():
    checks = Checks()
    names = metric_names(read(os.path.join("src", "metrics.rs")))
    if names is None:
        checks.report(False, "no `pub const METRICS: &[Metric]` in src/metrics.rs")
        names = []
    known = set(names)
    check_dashboard(checks, known)
    check_rules(checks, known)
    check_runbooks(checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
