"""Drives `delayq ui` in headless Chromium through chromedriver's WebDriver HTTP API.

Starts redis-server and chromedriver on free loopback ports, fills queues in known states,
checks that the page shows Redis's numbers (a queue with nothing pending too, and a queue with a
wrong-typed key as an error in its row), that a refresh keeps a selection, that a write without
the token is refused (401) and its buttons disabled, that purges and replays ask first, that replaying dead letters
through the page changes the counts, that a phone's width fits, and that past 500 queues the
overview pages with a total. Standard library only.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import check_codec
import check_overview
import check_access

DELAYQ = os.path.abspath(sys.argv[1])
OUT = os.path.abspath(os.environ.get("UI_TEST_OUT", "target/ui-test"))
TOKEN = "ui-test-token-0123456789abcdef"
PROCS = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, **kw):
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    PROCS.append(proc)
    return proc


def wait(what, check, timeout=60.0):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as err:  # not up yet
            last = err
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def http(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if method == "POST" and url.startswith("http://127.0.0.1") and "/api/" in url:
        # As the dashboard's page does: a write shows it is no other site's form.
        req.add_header("X-Delayq-Write", "1")
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


class Redis:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="delayq-ui-redis-")
        start(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", self.dir])
        self.url = f"redis://127.0.0.1:{self.port}"
        wait("redis", lambda: self.cli("PING") == "PONG")

    def cli(self, *args):
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()


def delayq(redis, *args):
    subprocess.run([DELAYQ, "--url", redis.url, *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fill(redis):
    """pending: 3 later; ready: 2 on the list; dead: 2 dead letters; bad: 1 quarantined;
    stuck: due and never transferred."""
    delayq(redis, "offer", "ui:stuck", "nobody moves me", "--delay", "100ms")
    for delay in ("10m", "20m", "40m"):
        delayq(redis, "offer", "ui:pending", f"due in {delay}", "--delay", delay)
    for value in ("r1", "r2"):
        delayq(redis, "offer", "ui:ready", value, "--delay", "100ms")
    delayq(redis, "offer", "ui:ready", "still pending", "--delay", "50m")
    for value in ("d1", "d2"):
        delayq(redis, "offer", "ui:dead", value, "--delay", "100ms")
    delayq(redis, "offer", "ui:dead", "d-later", "--delay", "30m")
    # A malformed entry (not Redisson's packing) beside a good one.
    delayq(redis, "offer", "ui:bad", "good", "--delay", "45m")
    redis.cli("ZADD", "redisson_delay_queue_timeout:{ui:bad}", "1", "\x01")
    redis.cli("RPUSH", "redisson_delay_queue:{ui:bad}", "\x01")
    time.sleep(0.3)
    delayq(redis, "transfer", "--once", "ui:ready", "ui:bad")
    # Nothing pending, so no timeout zset: only a dead letter (not delayq's record: shown as is).
    redis.cli("RPUSH", "delayq_dead:{ui:deadonly}", "a record from elsewhere")
    # A wrong-typed key: the queue's row says so, and the rest of the page is shown.
    delayq(redis, "offer", "ui:wrong", "x", "--delay", "1h")
    redis.cli("SET", "delayq_inflight:{ui:wrong}", "not a sorted set")
    dead_letters(redis, "ui:dead", 2)


# What the failing command of dead_letters() says on stderr: each dead letter's error ends
# with it.
SAID = "SMTP 550 5.1.1 mailbox unavailable"


def dead_letters(redis, queue, count):
    """Runs a real worker on `queue` whose command always fails, saying SAID on stderr, one
    attempt each, until the queue has `count` dead letters."""
    worker = subprocess.Popen([DELAYQ, "--url", redis.url, "work", queue, "--max-attempts",
                               "1", "--", "sh", "-c", f"echo '{SAID}' >&2; exit 3"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait(f"{count} dead letters", lambda: redis.cli("LLEN", f"delayq_dead:{{{queue}}}")
             == str(count))
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def expected(redis, name):
    q = "{" + name + "}"
    return {
        "pending": int(redis.cli("LLEN", f"redisson_delay_queue:{q}")),
        "ready": int(redis.cli("LLEN", name)),
        "in_flight": int(redis.cli("ZCARD", f"delayq_inflight:{q}")),
        "dead": int(redis.cli("LLEN", f"delayq_dead:{q}")),
        "quarantined": int(redis.cli("LLEN", f"delayq_quarantine:{q}")),
    }


class Browser:
    def __init__(self):
        port = free_port()
        start(["chromedriver", f"--port={port}"])
        self.base = f"http://127.0.0.1:{port}"
        wait("chromedriver", lambda: http("GET", self.base + "/status")[1]["value"]["ready"])
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"],
            }}}}
        status, body = http("POST", self.base + "/session", caps)
        assert status == 200, body
        self.session = f"{self.base}/session/{body['value']['sessionId']}"

    def cmd(self, method, path, body=None):
        status, reply = http(method, self.session + path, body)
        assert status == 200, (path, reply)
        return reply["value"]

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, name, at=None):
        """Saves the window as OUT/name, scrolled first to the element `at` (a selector) if given."""
        import base64
        if at:
            self.js("document.querySelector(arguments[0]).scrollIntoView({block: 'start'})", at)
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.cmd("GET", "/screenshot")))
        print(f"screenshot: {path}")

    def close(self):
        http("DELETE", self.session)


SHOWN = """
const rows = {};
for (const tr of document.querySelectorAll('#queues tbody tr')) {
  if (tr.classList.contains('failed')) {
    rows[tr.dataset.queue] = {error: tr.querySelector('td.error').textContent};
    continue;
  }
  const n = (k) => Number(tr.querySelector('td.' + k).textContent);
  rows[tr.dataset.queue] = {pending: n('pending'), ready: n('ready'), in_flight: n('in_flight'),
    dead: n('dead'), quarantined: n('quarantined'), state: tr.querySelector('td.state').textContent};
}
return rows;
"""


def check_hosts(ui):
    """The page as a rebinding name would ask for it: 421; as 127.0.0.1: never in a frame."""
    for host, want in (("rebind.example", 421), (None, 200)):
        req = urllib.request.Request(ui + "/", headers={"Host": host} if host else {})
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                status, headers = res.status, res.headers
        except urllib.error.HTTPError as err:
            status, headers = err.code, err.headers
        assert status == want, (host, status)
        assert headers["X-Content-Type-Options"] == "nosniff", headers
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"], headers


UPDATED = "return document.querySelector('#updated').textContent"


def refreshed(browser, times=2):
    """Waits for `times` refreshes of the page (its "updated" time changes)."""
    for _ in range(times):
        before = browser.js(UPDATED)
        wait("a refresh", lambda: browser.js(UPDATED) != before)


def check_in_place(browser):
    """A refresh updates the tables in place: a selected dead letter's error text stays selected,
    its very node still on the page, and an action's message stays."""
    browser.js("""
        const td = document.querySelector('#list tbody tr').cells[1];
        td.firstChild.marked = true;
        const range = document.createRange();
        range.selectNodeContents(td);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        const row = document.querySelector('#queues tbody tr[data-queue="ui:dead"]');
        row.marked = true;
        document.querySelector('#status').textContent = 'a message to keep';
    """)
    selected = browser.js("return getSelection().toString()")
    refreshed(browser)
    assert browser.js("return getSelection().toString()") == selected, "the selection was lost"
    assert browser.js("return document.querySelector('#list tbody tr').cells[1].firstChild"
                      ".marked === true"), "the dead letters were rebuilt"
    assert browser.js("return document.querySelector('#queues tbody tr[data-queue=\"ui:dead\"]')"
                      ".marked === true"), "the overview was rebuilt"
    assert browser.js("return document.querySelector('#status').textContent") == \
        "a message to keep"
    browser.js("getSelection().removeAllRanges()")
    print(f"a refresh kept the selection {selected!r}")


def check_problems_first(browser):
    """Ordered "problems first": the queue that cannot be read, then the stuck one."""
    order = "return [...document.querySelectorAll('#queues tbody tr')].map(r => r.dataset.queue)"
    browser.js("const o = document.querySelector('#order'); o.value = 'problems'; "
               "o.dispatchEvent(new Event('change'))")
    wait("problems first", lambda: browser.js(order)[:2] == ["ui:wrong", "ui:stuck"])
    browser.js("const o = document.querySelector('#order'); o.value = 'name'; "
               "o.dispatchEvent(new Event('change'))")
    wait("by name again", lambda: browser.js(order)[0] == "ui:bad")


def check_confirmation(browser, redis):
    """Purging asks first; cancelling leaves the dead letters where they are."""
    browser.js("document.querySelector('button[data-action=\"purge-dead\"]').click()")
    assert browser.js("return document.querySelector('#confirm').open"), "no confirmation asked"
    text = browser.js("return document.querySelector('#confirm-text').textContent")
    assert "ui:dead" in text, text
    browser.screenshot("confirm.png")
    browser.js("document.querySelector('#confirm-no').click()")
    assert not browser.js("return document.querySelector('#confirm').open")
    refreshed(browser, 1)
    assert redis.cli("LLEN", "delayq_dead:{ui:dead}") == "2"
    print(f"purge asked {text!r}; cancelled, nothing purged")


def check_entry_actions(browser, redis):
    """A pending entry run now becomes due now; one cancelled (after a confirmation) is gone."""
    browser.js("document.querySelector('tr[data-queue=\"ui:pending\"]').click()")
    browser.js("document.querySelector('.tabs button[data-tab=\"pending\"]').click()")
    buttons = "return document.querySelectorAll('#list tbody button[data-entry]').length"
    wait("three pending entries with buttons", lambda: browser.js(buttons) == 6)
    zset = "redisson_delay_queue_timeout:{ui:pending}"
    def due_now():
        return int(redis.cli("ZCOUNT", zset, "-inf", str(int(time.time() * 1000))))
    assert due_now() == 0
    browser.js("document.querySelector('#list tbody button[data-entry=\"run-now\"]').click()")
    wait("the first entry due now", lambda: due_now() == 1)
    browser.js("document.querySelector('#list tbody button[data-entry=\"cancel\"]').click()")
    assert browser.js("return document.querySelector('#confirm').open"), "no confirmation asked"
    browser.js("document.querySelector('#confirm-yes').click()")
    wait("one entry cancelled", lambda: redis.cli("ZCARD", zset) == "2")
    assert redis.cli("LLEN", "redisson_delay_queue:{ui:pending}") == "2"
    browser.screenshot("entries.png")
    print("a pending entry run now, another cancelled through the page")


def check_deep_links(browser, ui):
    """A queue's detail has its own address; an unknown queue's says so (404)."""
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3AdeadOnly/dead".replace("O", "o")})
    wait("the linked detail", lambda: browser.js(
        "return document.querySelector('#detail-name').textContent") == "ui:deadonly")
    wait("its linked tab", lambda: browser.js(
        "return [...document.querySelectorAll('#list tbody tr')].map(r => "
        "r.cells[1].textContent.includes('DQD1') ? 'malformed' : r.cells[1].textContent)")
        == ["malformed"])
    assert browser.js("return document.querySelector('#list thead tr').dataset.tab") == "dead"
    browser.js("document.querySelector('.tabs button[data-tab=\"ready\"]').click()")
    wait("the tab in the address", lambda: browser.js("return location.hash") ==
         "#/queue/ui%3Adeadonly/ready")
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Anobody"})
    wait("an unknown queue said", lambda: "no such queue" in browser.js(
        "return document.querySelector('#detail-error').textContent"))
    status, _ = http("GET", ui + "/api/queues/ui:nobody")
    assert status == 404, status


def pause_controls(browser):
    """Which of the queue's Pause and Resume buttons are shown (laid out, not hidden)."""
    return browser.js(
        "const shown = (a) => { const b = document.querySelector('button[data-action=\"' + a + '\"]');"
        " return !b.hidden && b.getClientRects().length > 0; };"
        " return {pause: shown('pause'), resume: shown('resume')};")


def check_phone(browser):
    """At a phone's width the page fits: nothing wider than the screen but the tables' own
    scrolling boxes."""
    browser.cmd("POST", "/window/rect", {"width": 390, "height": 844})
    browser.cmd("POST", "/url", {"url": browser.js("return location.href")})
    wait("the page at a phone's width", lambda: browser.js(
        "return document.querySelectorAll('#queues tbody tr').length") > 0)
    assert browser.js("return !!document.querySelector('meta[name=viewport]')")
    wide = browser.js("return document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"the page is {wide} px wider than a phone"
    browser.screenshot("phone.png")
    browser.cmd("POST", "/window/rect", {"width": 1280, "height": 1000})


def check_many(browser, redis):
    """Past 500 queues: pages of 100 with the total, the next page reachable."""
    script = ("for i = 1, 600 do redis.call('ZADD', 'redisson_delay_queue_timeout:{ui:many:' "
              ".. string.format('%03d', i) .. '}', 9e12, 'e') end")
    redis.cli("EVAL", script, "0")
    page = "return document.querySelector('#page').textContent"
    wait("a total past 600", lambda: browser.js(page).endswith("of 607 queues"))
    browser.js("document.querySelector('#next').click()")
    wait("the second page", lambda: browser.js(page).startswith("101–200"))
    first = browser.js("return document.querySelector('#queues tbody tr').dataset.queue")
    assert first.startswith("ui:many:"), first
    browser.js("document.querySelector('#filter').value = 'many:6'; "
               "document.querySelector('#filter').dispatchEvent(new Event('input'))")
    wait("filtered", lambda: browser.js(page) == "1–1 of 1 queues")
    browser.screenshot("many.png")
    print("607 queues: paged by 100 with the total; filtered by name")


def main():
    os.makedirs(OUT, exist_ok=True)
    redis = Redis()
    fill(redis)
    port = free_port()
    ui = f"http://127.0.0.1:{port}"
    start([DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}", "--allow-writes"],
          env={**os.environ, "DELAYQ_UI_TOKEN": TOKEN})
    wait("delayq ui", lambda: http("GET", ui + "/api/queues")[0] == 200)
    check_hosts(ui)
    names = ["ui:bad", "ui:dead", "ui:deadonly", "ui:pending", "ui:ready", "ui:stuck"]
    browser = Browser()
    try:
        browser.cmd("POST", "/url", {"url": ui + "/"})
        shown = wait("seven queues on the page", lambda: (lambda r: r if len(r) == 7 else None)(
            browser.js(SHOWN)))
        assert "WRONGTYPE" in shown["ui:wrong"]["error"] or "type" in shown["ui:wrong"]["error"], \
            shown["ui:wrong"]
        print(f"ui:wrong: its row shows {shown['ui:wrong']['error']!r}")
        assert shown["ui:deadonly"]["dead"] == 1 and shown["ui:deadonly"]["pending"] == 0
        for name in names:
            want = expected(redis, name)
            got = {k: shown[name][k] for k in want}
            assert got == want, f"{name}: page {got} != Redis {want}"
            print(f"{name}: page shows {got} = Redis")
        assert shown["ui:pending"]["pending"] == 3 and shown["ui:ready"]["ready"] == 2
        assert shown["ui:dead"]["dead"] == 2 and shown["ui:bad"]["quarantined"] == 1
        assert shown["ui:pending"]["state"] == "ok", shown
        # Overdue for 10 s with no transfer: highlighted as stuck.
        wait("stuck shown", lambda: browser.js(SHOWN)["ui:stuck"]["state"].startswith("STUCK"),
             timeout=20)
        assert browser.js("return document.querySelector('tr[data-queue=\"ui:stuck\"]')"
                          ".classList.contains('stuck')")
        # The queue's detail: the chart and the dead letters with their errors.
        browser.js("document.querySelector('tr[data-queue=\"ui:dead\"]').click()")
        browser.js("document.querySelector('.tabs button[data-tab=\"dead\"]').click()")
        wait("dead letters listed", lambda: browser.js(
            "return document.querySelectorAll('#list tbody tr').length") == 2)
        errors = browser.js("return [...document.querySelectorAll('#list tbody tr')]"
                            ".map(r => r.cells[1].textContent)")
        # Each says why: the exit status and what the command said on stderr.
        assert all(e == "sh exited with exit status: 3; stderr: " + SAID for e in errors), errors
        bars = browser.js("return document.querySelectorAll('#chart rect').length")
        assert bars == 60, bars
        browser.screenshot("dashboard.png")
        check_problems_first(browser)
        check_in_place(browser)

        # Without a token the page may not write: its buttons disabled, saying which role they
        # need; the API refuses (401).
        status, body = http("POST", ui + "/api/queues/ui:dead/replay")
        assert status == 401, (status, body)
        replay = "return document.querySelector('button[data-action=\"replay\"]')"
        wait("replay disabled", lambda: browser.js(replay + ".disabled"))
        assert "needs the operator role" in browser.js(replay + ".title")
        assert redis.cli("LLEN", "delayq_dead:{ui:dead}") == "2"
        browser.screenshot("refused.png")

        # With the (admin's) token typed in: every write button enabled.
        check_access.type_token(browser, TOKEN)
        wait("the admin's role shown", lambda: browser.js(
            "return document.querySelector('#mode').textContent").startswith("role admin"))
        check_confirmation(browser, redis)

        # Replay through the page; the counts change on the page and in Redis.
        browser.js("document.querySelector('button[data-action=\"replay\"]').click()")
        browser.js("document.querySelector('#confirm-yes').click()")
        wait("dead letters replayed", lambda: redis.cli("LLEN", "delayq_dead:{ui:dead}") == "0")
        after = wait("page updated", lambda: (lambda r: r if r["ui:dead"]["dead"] == 0 else None)(
            browser.js(SHOWN)))
        want = expected(redis, "ui:dead")
        got = {k: after["ui:dead"][k] for k in want}
        assert got == want, f"after replay: page {got} != Redis {want}"
        assert want["ready"] == 2, want  # replayed onto the target list
        print(f"after replay: page shows {got} = Redis")
        browser.screenshot("replayed.png")

        # Pause and resume delayq's schedulers and workers for the queue: the flag key, and the
        # page says so; only the control for the other state is shown, and the note beside it
        # says that Java's consumers are out of reach.
        paused_key = "delayq_paused:{ui:dead}"
        assert pause_controls(browser) == {"pause": True, "resume": False}, pause_controls(browser)
        note = browser.js("return document.querySelector('#pause-note').textContent")
        assert "workers" in note and "Java consumers" in note, note
        browser.js("document.querySelector('button[data-action=\"pause\"]').click()")
        wait("pause flag set", lambda: redis.cli("EXISTS", paused_key) == "1")
        wait("paused shown", lambda: browser.js(SHOWN)["ui:dead"]["state"] == "paused")
        wait("only Resume offered", lambda: pause_controls(browser) == {"pause": False, "resume": True})
        browser.screenshot("paused.png")
        browser.js("document.querySelector('button[data-action=\"resume\"]').click()")
        wait("pause flag cleared", lambda: redis.cli("EXISTS", paused_key) == "0")
        wait("ok shown", lambda: browser.js(SHOWN)["ui:dead"]["state"] == "ok")
        wait("only Pause offered", lambda: pause_controls(browser) == {"pause": True, "resume": False})
        # Paused from elsewhere (the CLI): the page follows at its next refresh.
        redis.cli("SET", paused_key, "1")
        wait("Resume offered after a pause elsewhere",
             lambda: pause_controls(browser) == {"pause": False, "resume": True})
        redis.cli("DEL", paused_key)
        wait("Pause offered again", lambda: pause_controls(browser) == {"pause": True, "resume": False})

        # The API the page uses, with the token: purge the quarantine of ui:bad.
        auth = {"Authorization": "Bearer " + TOKEN}
        status, body = http("POST", ui + "/api/queues/ui:bad/purge-quarantine", headers=auth)
        assert (status, body) == (200, {"purged": 1}), (status, body)
        assert redis.cli("LLEN", "delayq_quarantine:{ui:bad}") == "0"
        wait("quarantine 0 shown", lambda: browser.js(SHOWN)["ui:bad"]["quarantined"] == 0)
        status, body = http("POST", ui + "/api/queues/ui:bad/frobnicate", headers=auth)
        assert status == 404, (status, body)

        check_entry_actions(browser, redis)
        check_deep_links(browser, ui)
        check_phone(browser)
        check_many(browser, redis)
        check_codec.check_codec(browser, sys.modules[__name__])
        __import__("check_search").run(browser, redis, ui)
        check_overview.check(sys.modules[__name__], browser, redis, ui)
        __import__("check_schedules").check(sys.modules[__name__], browser, redis, ui)
        __import__("check_limits").check(sys.modules[__name__], browser, redis, ui)
        check_access.check_access(sys.modules[__name__], browser, redis)
    finally:
        browser.close()
    print("ui browser test passed")


def stop_all():
    """Stops every process a check started, the last started first."""
    for proc in reversed(PROCS):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_all()
