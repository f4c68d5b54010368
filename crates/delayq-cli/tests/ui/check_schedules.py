"""Browser check of a queue's recurring schedules in its view, called from drive.py's main()
with drive.py itself (its helpers), the browser, Redis and the dashboard's address.

- schedules: the section lists the queue's schedules with their recurrence, next occurrence,
  last fired (a running `delayq transfer` fires the one whose occurrence was missed an hour ago,
  by its `latest` policy) and state;
- pause through the page: the schedule's zset score becomes +inf and its hash says paused, and
  the page says so; remove asks first (answered no: the schedule stays).
"""
import subprocess
import time

import check_access

QUEUE = "ui:sched"
ROWS = """return Object.fromEntries([...document.querySelectorAll('#schedules tbody tr')]
    .map(r => [r.dataset.key, [...r.cells].slice(0, 7).map(c => c.textContent)]))"""
BUTTON = "document.querySelector('#schedules tr[data-key=\"nightly\"] button[data-entry=\"{}\"]')"


def check(drive, browser, redis, ui):
    # Occurrences two hours and one hour ago (missed), the next one in a minute.
    start = str(int(time.time() * 1000) - 2 * 3_600_000 + 60_000)
    drive.delayq(redis, "schedule", "set", QUEUE, "hourly", "--every", "1h", "--value", "tick",
                 "--start", start, "--missed", "latest")
    drive.delayq(redis, "schedule", "set", QUEUE, "nightly", "--cron", "30 2 * * *",
                 "--tz", "Europe/Berlin", "--value", "build-report")
    transfer = subprocess.Popen([drive.DELAYQ, "--url", redis.url, "transfer", QUEUE,
                                 "--schedule-tick", "100ms"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    drive.PROCS.append(transfer)
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Asched/pending"})
    # A page loaded afresh has no token: the dashboard's (an admin's) typed in.
    check_access.type_token(browser, drive.TOKEN)
    rows = drive.wait("the hourly schedule's last occurrence shown", lambda: (
        lambda r: r if len(r) == 2 and r["hourly"][3] != "never" else None)(browser.js(ROWS)),
        timeout=60)
    hourly, nightly = rows["hourly"], rows["nightly"]
    assert hourly[:2] == ["hourly", "every 1 h"], hourly
    assert hourly[3].endswith(" ago") and hourly[2].startswith("in "), hourly
    assert hourly[4:] == ["active", "latest", "tick"], hourly
    assert nightly[1] == "cron 30 2 * * * (Europe/Berlin)", nightly
    assert nightly[3] == "never" and nightly[4] == "active", nightly
    assert nightly[2].startswith("in "), nightly
    print(f"schedules shown: {rows}")

    # Pause through the page: Redis and the page.
    drive.wait("pause enabled", lambda: browser.js("return !" + BUTTON.format("pause") + ".disabled"))
    browser.js(BUTTON.format("pause") + ".click()")
    key = "delayq_schedule:{ui:sched}:nightly"
    drive.wait("nightly paused in Redis", lambda: redis.cli("HGET", key, "paused") == "1")
    assert redis.cli("ZSCORE", "delayq_schedules:{ui:sched}", "nightly") == "inf"
    drive.wait("paused shown", lambda: browser.js(ROWS)["nightly"][4] == "paused")
    assert browser.js("return " + BUTTON.format("resume") + ".hidden === false")
    browser.screenshot("schedules.png", at="#schedules-section")

    # Remove asks first; answered no, the schedule stays.
    browser.js(BUTTON.format("remove") + ".click()")
    question = browser.js("return document.querySelector('#confirm-text').textContent")
    assert question.startswith("Remove the schedule nightly of ui:sched?"), question
    browser.js("document.querySelector('#confirm-no').click()")
    assert redis.cli("EXISTS", key) == "1"
    browser.js(BUTTON.format("resume") + ".click()")
    drive.wait("nightly resumed in Redis", lambda: redis.cli("HGET", key, "paused") == "0")
    print("schedule paused and resumed through the page; remove asked first")
