"""Browser checks of the overview over every queue and of a queue's activity and processes,
called from drive.py's main() with drive.py itself (its helpers) once the page is up.

- overview-sorted: "problems first" and the state filter act on every queue, not the page shown:
  with 600 more queues by name ahead of them, the failing and the stuck queue lead page one.
- activity: a real `delayq work` acks three values and fails two; the queue view's chart of the
  last hour adds up to what it did.
- processes: the worker is listed (kind, pid) while it runs, and gone once it stopped cleanly.
"""
import json
import subprocess

ORDER = "return [...document.querySelectorAll('#queues tbody tr')].map(r => r.dataset.queue)"
PAGE = "return document.querySelector('#page').textContent"


def choose(browser, select, value, event="change"):
    browser.js("const s = document.querySelector(arguments[0]); s.value = arguments[1]; "
               "s.dispatchEvent(new Event(arguments[2]))", select, value, event)


def total(page):
    """The number of queues that the pager's text ("1–100 of 607 queues") counts."""
    return int(page.rsplit(" of ", 1)[1].split()[0])


def check_sorted(drive, browser):
    choose(browser, "#filter", "", "input")
    choose(browser, "#order", "name")
    # At least the 607 queues of drive.py (other checks may have added theirs).
    drive.wait("ui:wrong off page one by name", lambda: total(browser.js(PAGE)) >= 607
               and "ui:wrong" not in browser.js(ORDER))
    choose(browser, "#order", "problems")
    drive.wait("problems first over every page",
               lambda: browser.js(ORDER)[:2] == ["ui:wrong", "ui:stuck"], timeout=60)
    # The failing row's state stays under "State", its rates and processes cells empty.
    failing = browser.js("return [...document.querySelector('tr[data-queue=\"ui:wrong\"]')"
                         ".cells].map(c => c.textContent)")
    assert failing[2:] == ["UNREADABLE", "", ""], failing
    snapshot = browser.js("return document.querySelector('#snapshot').textContent")
    assert snapshot.startswith("order as read"), snapshot
    browser.screenshot("overview-sorted.png")
    choose(browser, "#state", "stuck")
    drive.wait("only the stuck queue", lambda: browser.js(ORDER) == ["ui:stuck"])
    assert browser.js(PAGE) == "1–1 of 1 queues", browser.js(PAGE)
    choose(browser, "#state", "")
    choose(browser, "#order", "name")
    print(f"problems first over 607 queues: ui:wrong, ui:stuck lead ({snapshot}); "
          "state=stuck: one queue")


def totals(browser):
    text = browser.js("return document.querySelector('#activity').dataset.totals || 'null'")
    return json.loads(text)


def process_rows(browser):
    return browser.js("return [...document.querySelectorAll('#processes tbody tr')]"
                      ".map(r => [...r.cells].map(c => c.textContent))")


def check_activity_and_processes(drive, browser, redis, ui):
    for value in ("ok1", "ok2", "ok3", "bad1", "bad2"):
        drive.delayq(redis, "offer", "ui:busy", value, "--delay", "0s")
    script = 'case "$DELAYQ_VALUE" in ok*) exit 0;; *) exit 1;; esac'
    worker = subprocess.Popen([drive.DELAYQ, "--url", redis.url, "work", "ui:busy",
                               "--max-attempts", "1", "--", "sh", "-c", script],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    drive.PROCS.append(worker)
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Abusy/pending"})
    want = {"moved": 5, "taken": 5, "acked": 3, "failed": 2}
    drive.wait("the worker's activity charted", lambda: totals(browser) == want, timeout=60)
    lines = browser.js("return document.querySelectorAll('#activity polyline').length")
    assert lines == 4, lines
    browser.js("document.querySelector('#activity').scrollIntoView()")
    browser.screenshot("activity.png")
    rows = drive.wait("the worker listed", lambda: [r for r in process_rows(browser)
                                                   if r[0] == "worker"], timeout=30)
    assert rows[0][3] == str(worker.pid), rows
    browser.js("document.querySelector('#processes').scrollIntoView()")
    browser.screenshot("processes.png")
    worker.terminate()
    assert worker.wait(timeout=30) == 0
    drive.wait("the worker gone", lambda: process_rows(browser) == [], timeout=30)
    print(f"activity of a real worker charted: {want}; worker pid {worker.pid} listed, "
          "then gone after its stop")


def check(drive, browser, redis, ui):
    browser.cmd("POST", "/url", {"url": ui + "/"})
    check_sorted(drive, browser)
    check_activity_and_processes(drive, browser, redis, ui)
