"""Browser check of a queue's "Last 90 days" chart, run on its own (run.sh runs it after
drive.py): python3 check_days.py target/debug/delayq.

Its own redis-server and read-only `delayq ui`. Days long past cannot be lived through in a
test, so the queue's daily buckets are written as delayq's flush writes them (HINCRBY into
`delayq_activity:{NAME}:day:FIRST_DAY`, field `D:EVENT`, the layout of docs/compatibility.md):
every one of the 90 days shown but yesterday, and a day just older than the 90:
- the chart is drawn with dates: its x axis reads the oldest, the middle and today's ISO date
  (UTC), its y axis from 0 to the largest day's count;
- each day's column says its date and counts (failed = retried + dead), an empty day zeros;
  the day older than 90 counts nowhere;
- `GET /api/queues/{name}/days?days=7` answers seven dated days; `days=91` and `days=x` are
  refused with 400.
"""
import sys
from datetime import datetime, timedelta, timezone

import drive

QUEUE = "ui:days"
DAY_MS = 86_400_000
TEXTS = "return [...document.querySelectorAll('#days g.axes text')].map(t => t.textContent)"
COLUMN = ("const r = document.querySelector('#days rect.day[data-date=\"' + arguments[0] + '\"]');"
          "return r ? r.firstChild.textContent : null")


def today():
    now = datetime.now(timezone.utc)
    return int(now.timestamp() * 1000) // DAY_MS


def iso(day):
    return (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(days=day)).date().isoformat()


def history():
    """Counts per days back: {days back: {event: count}}: a working day's shape on every day
    but yesterday (empty), some failing, a busier oldest day, and a 91st day that must not
    count."""
    counts = {}
    for back in range(2, 89):
        acked = 20 + (back * 7) % 15
        retried, dead = (3, 1) if back % 9 == 0 else (0, 0)
        taken = acked + retried + dead
        counts[back] = {"moved": taken, "taken": taken, "acked": acked, "retried": retried,
                        "dead": dead}
    counts[89] = {"moved": 40, "taken": 40, "acked": 40}
    counts[0] = {"moved": 12, "taken": 12, "acked": 9, "dead": 3}
    counts[90] = {"acked": 500}
    return counts


def seed(redis, day, counts):
    for back, events in counts.items():
        d = day - back
        key = f"delayq_activity:{{{QUEUE}}}:day:{d - d % 10}"
        for event, n in events.items():
            redis.cli("HINCRBY", key, f"{d % 10}:{event}", str(n))


def shown(events):
    """A day's counts as its column's tooltip says them."""
    failed = events.get("retried", 0) + events.get("dead", 0)
    return ", ".join(f"{events.get(k, 0)} {k}" for k in ("moved", "taken", "acked")) + \
        f", {failed} failed"


def check_days(browser, ui, day, counts):
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Adays/pending"})
    want = [iso(day - 89), iso(day - 45), iso(day)]
    kept = {back: events for back, events in counts.items() if back < 90}
    top = max(n for events in kept.values() for n in events.values())
    axes = drive.wait("the 90 days' chart's axes", lambda: browser.js(TEXTS), timeout=60)
    assert axes == [str(top), "0", *want], axes
    lines = browser.js("return document.querySelectorAll('#days polyline').length")
    columns = browser.js("return document.querySelectorAll('#days rect.day').length")
    assert (lines, columns) == (4, 90), (lines, columns)
    for back in (89, 45, 27, 0):
        column = browser.js(COLUMN, iso(day - back))
        assert column == f"{iso(day - back)}: {shown(kept[back])}", column
    empty = browser.js(COLUMN, iso(day - 1))
    assert empty == f"{iso(day - 1)}: 0 moved, 0 taken, 0 acked, 0 failed", empty
    assert browser.js(COLUMN, iso(day - 90)) is None, "a 91st day drawn"
    totals = browser.js("return JSON.parse(document.querySelector('#days').dataset.totals)")
    sums = {k: sum(e.get(k, 0) for e in kept.values()) for k in ("moved", "taken", "acked")}
    sums["failed"] = sum(e.get("retried", 0) + e.get("dead", 0) for e in kept.values())
    assert totals == sums, (totals, sums)
    browser.js("document.querySelector('#days').previousElementSibling.scrollIntoView()")
    browser.screenshot("days.png")
    print(f"90 days charted: x axis {want}, y top {top}; totals {totals} "
          "(a 91st day's 500 left out)")


def check_api(ui, day):
    base = ui + "/api/queues/ui%3Adays/days"
    status, body = drive.http("GET", base + "?days=7")
    assert status == 200, (status, body)
    dates = [d["date"] for d in body["days"]]
    assert dates == [iso(day - n) for n in range(6, -1, -1)], dates
    today_json = body["days"][-1]
    assert (today_json["acked"], today_json["failed"], today_json["day_ms"]) == \
        (9, 3, day * DAY_MS), today_json
    for bad in ("91", "0", "x"):
        status, body = drive.http("GET", base + "?days=" + bad)
        assert status == 400 and "days" in body["error"], (bad, status, body)
    print(f"API: days=7 gives {dates[0]}..{dates[-1]}; days=91, 0 and x refused (400)")


def main():
    drive.os.makedirs(drive.OUT, exist_ok=True)
    redis = drive.Redis()
    drive.delayq(redis, "offer", QUEUE, "later", "--delay", "1h")
    port = drive.free_port()
    ui = f"http://127.0.0.1:{port}"
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}"])
    drive.wait("delayq ui", lambda: drive.http("GET", ui + "/api/queues")[0] == 200)
    browser = drive.Browser()
    try:
        # The dates are today's: seed and check again if the run crossed midnight (UTC).
        for attempt in range(2):
            day = today()
            redis.cli("FLUSHALL")
            drive.delayq(redis, "offer", QUEUE, "later", "--delay", "1h")
            counts = history()
            seed(redis, day, counts)
            try:
                check_api(ui, day)
                check_days(browser, ui, day, counts)
                break
            except AssertionError:
                if attempt == 1 or today() == day:
                    raise
    finally:
        browser.close()
    print("ui 90 days check passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        drive.stop_all()
