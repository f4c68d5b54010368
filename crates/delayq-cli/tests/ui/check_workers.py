"""Browser checks of the workers page (#/workers), run on their own (run.sh runs them after
check_health.py): python3 check_workers.py target/debug/delayq.

Its own redis-server, `delayq ui`, and two real `delayq work` processes whose jobs hold their
values until a file appears (one value fails its first attempt, so it is held at attempt 2):
- the page lists both processes (pid, host, the queues each serves, as links) and each held
  delivery with its process's id, its queue, attempt, a start time (ISO in the title) and how
  long it has run;
- the queue view's in-flight tab says the same: process, attempt, start;
- once the jobs are released, the page holds no delivery.
"""
import os
import subprocess
import tempfile

import drive

ROWS = "return [...document.querySelectorAll(arguments[0] + ' tbody tr')].map(r => [...r.cells].map(c => [c.textContent, c.title]))"


def worker(redis, queues, job):
    return drive.start([drive.DELAYQ, "--url", redis.url, "work", *queues, "--concurrency", "2",
                        "--retry-delay", "0s", "--", "sh", "-c", job])


def check_workers(browser, ui, pids, release):
    browser.cmd("POST", "/url", {"url": ui + "/#/workers"})
    rows = drive.wait("both workers and their three deliveries", lambda: (lambda w, d: (w, d) if (
        sorted(int(r[3][0]) for r in w) == sorted(pids.values()) and len(d) == 3) else None)(
        browser.js(ROWS, "#worker-list"), browser.js(ROWS, "#deliveries")), timeout=60)
    workers, deliveries = rows
    by_pid = {int(r[3][0]): r for r in workers}
    a, b = by_pid[pids["a"]], by_pid[pids["b"]]
    assert a[7][0] == "ui:w-a ui:w-b" and a[8][0] == "2", a
    assert b[7][0] == "ui:w-c" and b[8][0] == "1", b
    assert "worker" in a[1][0] and a[2][0], a
    held = sorted((d[1][0], d[0][0], d[3][0]) for d in deliveries)
    assert held == [("ui:w-a", a[0][0], "1"), ("ui:w-b", a[0][0], "2"), ("ui:w-c", b[0][0], "1")], held
    for d in deliveries:
        started, title = d[4]
        assert started == "now" or started.endswith(" ago"), d
        assert title.endswith("Z"), d
        assert d[5][0].endswith(" s") or d[5][0].endswith(" min"), d
        assert d[2][0].startswith(d[0][0] + "."), f"the delivery id names its process: {d}"
    links = browser.js("return [...document.querySelectorAll('#worker-list a')].map(a => a.getAttribute('href'))")
    assert "#/queue/ui%3Aw-c" in links, links
    browser.screenshot("workers.png")
    print(f"workers page: {len(workers)} processes, deliveries {held}")

    # The queue view's in-flight rows: process, attempt, start.
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Aw-b/in_flight"})
    head = drive.wait("the in-flight tab", lambda: browser.js(
        "return [...document.querySelectorAll('#list thead th')].map(t => t.textContent)") or None)
    assert head[:5] == ["Deadline", "Delivery", "Process", "Attempt", "Started"], head
    row = drive.wait("the held delivery listed", lambda: (browser.js(ROWS, "#list") or [None])[0])
    assert row[2][0] == a[0][0] and row[3][0] == "2" and row[4][1].endswith("Z"), row
    print(f"in-flight tab: process {row[2][0]}, attempt {row[3][0]}, started {row[4][0]}")

    # Released: every value acknowledged, no delivery left on the page.
    open(release, "w").close()
    browser.cmd("POST", "/url", {"url": ui + "/#/workers"})
    drive.wait("no delivery held", lambda: browser.js(
        "return document.querySelector('#delivery-count').textContent") == "0", timeout=60)
    print("released: no delivery held")


def main():
    drive.os.makedirs(drive.OUT, exist_ok=True)
    redis = drive.Redis()
    work = tempfile.mkdtemp(prefix="delayq-ui-workers-")
    release, failed = os.path.join(work, "release"), os.path.join(work, "failed")
    job = (f'if [ "$DELAYQ_VALUE" = retry ] && [ ! -e {failed} ]; then touch {failed}; exit 3; fi; '
           f'while [ ! -e {release} ]; do sleep 0.05; done')
    for queue, value in (("ui:w-a", "one"), ("ui:w-b", "retry"), ("ui:w-c", "three")):
        drive.delayq(redis, "offer", queue, value, "--delay", "0s")
    pids = {"a": worker(redis, ["ui:w-a", "ui:w-b"], job).pid, "b": worker(redis, ["ui:w-c"], job).pid}
    port = drive.free_port()
    ui = f"http://127.0.0.1:{port}"
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}"])
    drive.wait("delayq ui", lambda: drive.http("GET", ui + "/api/workers")[0] == 200)
    browser = drive.Browser()
    try:
        check_workers(browser, ui, pids, release)
    finally:
        browser.close()
    print("ui workers checks passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        for proc in reversed(drive.PROCS):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
