"""Browser checks of the overview's judged health and of the page's polish, run on their own
(run.sh runs them after drive.py): python3 check_health.py target/debug/delayq.

Its own redis-server and `delayq ui --lagging-after 2s` (so that lag shows within seconds):
- health: a queue whose every job failed (a real worker, six dead letters, none acked) and one
  with 200 values waiting read "FAILING"/"LAGGING" with their reasons and lead "problems first";
  a queue with nothing wrong reads "ok".
- times: a due time reads "in 59 min 53 s" (or "in 1 h"), its ISO time (UTC) in the cell's title.
- links and tabs: a queue's name is a link to its view; the tabs count their entries.
- pager: the bulk bar ("0 selected") is not shown while nothing is selected.
- destructive buttons are red; a queue without schedules shows no schedules table.
- charts: both have axes, the y axis's top the largest count.
- dark mode: emulated `prefers-color-scheme: dark` (DevTools protocol) darkens the background.
- phone: at 390 px the page has no sideways overflow and a long value wraps between words.
"""
import re
import sys
from datetime import datetime, timezone

import drive

ORDER = "return [...document.querySelectorAll('#queues tbody tr')].map(r => r.dataset.queue)"
STATE = "return document.querySelector('tr[data-queue=\"' + arguments[0] + '\"] td.state').textContent"
LONG = ("a long value of many words that a phone must wrap between the words and never "
        "letter by letter " * 3).strip()


def choose(browser, select, value):
    browser.js("const s = document.querySelector(arguments[0]); s.value = arguments[1]; "
               "s.dispatchEvent(new Event('change'))", select, value)


def fill(redis):
    for name in ("ui:fine", "ui:failing", "ui:lagging"):
        drive.delayq(redis, "offer", name, "later", "--delay", "1h")
    drive.delayq(redis, "offer", "ui:long", LONG, "--delay", "1h")
    # 200 values on the list and nobody taking them.
    redis.cli("RPUSH", "ui:lagging", *[f"v{n}" for n in range(200)])
    for n in range(6):
        drive.delayq(redis, "offer", "ui:failing", f"job{n}", "--delay", "0s")
    drive.dead_letters(redis, "ui:failing", 6)


def luminance(css):
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def background(browser):
    return browser.js("return getComputedStyle(document.body).backgroundColor")


def check_health(browser, ui):
    browser.cmd("POST", "/url", {"url": ui + "/"})
    choose(browser, "#order", "problems")
    drive.wait("the failing and the lagging queue first",
               lambda: browser.js(ORDER)[:2] == ["ui:failing", "ui:lagging"], timeout=60)
    failing = browser.js(STATE, "ui:failing")
    assert failing == "FAILING: 6 dead, 0 acked in 5 min", failing
    lagging = browser.js(STATE, "ui:lagging")
    assert re.fullmatch(r"LAGGING: oldest ready \d+ s, 200 waiting, 0 taken in 5 min", lagging), lagging
    assert browser.js(STATE, "ui:fine") == "ok"
    classes = browser.js("return ['ui:failing', 'ui:lagging'].map(q => "
                         "document.querySelector('tr[data-queue=\"' + q + '\"]').className)")
    assert classes == ["failing", "lagging"], classes
    lag = browser.js("return document.querySelector('tr[data-queue=\"ui:lagging\"] td.lag').textContent")
    assert re.fullmatch(r"\d+ s", lag), lag
    browser.screenshot("health.png")
    print(f"problems first: ui:failing {failing!r}, ui:lagging {lagging!r}")


def check_times_links_and_tabs(browser, ui):
    browser.cmd("POST", "/url", {"url": ui + "/"})
    drive.wait("the overview", lambda: "ui:fine" in browser.js(ORDER))
    cell = "document.querySelector('tr[data-queue=\"ui:fine\"]').cells[6]"
    text, title = browser.js(f"return [{cell}.textContent, {cell}.title]")
    assert re.fullmatch(r"in (59 min( \d+ s)?|1 h)", text), text
    at = datetime.strptime(title, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    ahead = (at - datetime.now(timezone.utc)).total_seconds()
    assert 3000 < ahead <= 3600, (title, ahead)
    href = browser.js("return document.querySelector('tr[data-queue=\"ui:failing\"] td a')"
                      ".getAttribute('href')")
    assert href == "#/queue/ui%3Afailing", href
    browser.js("document.querySelector('tr[data-queue=\"ui:failing\"] td a').click()")
    browser.js("document.querySelector('.tabs button[data-tab=\"dead\"]').click()")
    drive.wait("the dead letters listed", lambda: browser.js(
        "return document.querySelectorAll('#list tbody tr').length") == 6)
    tab = browser.js("return document.querySelector('.tabs button[data-tab=\"dead\"]').textContent")
    assert tab == "Dead letters (6)", tab
    dead_at = browser.js("const c = document.querySelector('#list tbody tr').cells[2]; "
                         "return [c.textContent, c.title]")
    assert dead_at[0].endswith(" ago") and dead_at[1].endswith("Z"), dead_at
    print(f"next due {text!r} (title {title}); dead at {dead_at}; tab {tab!r}")


def check_polish(browser, ui):
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Afailing/dead"})
    drive.wait("the dead letters listed", lambda: browser.js(
        "return document.querySelectorAll('#list tbody tr').length") == 6)
    shown = "return document.querySelector(arguments[0]).getClientRects().length > 0"
    assert not browser.js(shown, "#bulk"), "the bulk bar shows with nothing selected"
    assert not browser.js(shown, "#schedules-section"), "an empty schedules table shows"
    red = browser.js("return getComputedStyle(document.querySelector("
                     "'button[data-action=\"purge-dead\"]')).backgroundColor")
    r, g, b = (int(x) for x in re.findall(r"\d+", red)[:3])
    assert r > 150 and g < 80 and b < 100, red
    print(f"bulk bar and empty schedules hidden; purge button {red}")


def check_charts(browser, ui):
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Afailing/dead"})
    texts = "return [...document.querySelectorAll(arguments[0] + ' text')].map(t => t.textContent)"
    due = drive.wait("the due chart's axes", lambda: browser.js(texts, "#chart"))
    bars = browser.js("return [...document.querySelectorAll('#chart rect')]"
                      ".map(r => Number(r.firstChild.textContent.split(': ')[1]))")
    assert len(bars) == 60 and due[0] == str(max(1, *bars)), (due, bars)
    assert due[1:] == ["0", "now", "+30 min", "+60 min"], due
    activity = drive.wait("the activity chart's axes", lambda: browser.js(texts, "#activity"))
    # Six dead letters in the last hour: the most in a minute is the y axis's top.
    assert 1 <= int(activity[0]) <= 6 and activity[1:] == ["0", "-60 min", "-30 min", "now"], activity
    browser.screenshot("charts.png", at="#chart")
    print(f"charts: due axes {due}, activity axes {activity}")


def check_dark(browser, ui):
    browser.cmd("POST", "/url", {"url": ui + "/"})
    drive.wait("the overview", lambda: "ui:fine" in browser.js(ORDER))
    light = background(browser)
    browser.cmd("POST", "/goog/cdp/execute", {"cmd": "Emulation.setEmulatedMedia", "params": {
        "features": [{"name": "prefers-color-scheme", "value": "dark"}]}})
    try:
        dark = drive.wait("a dark background", lambda: (lambda c: c if luminance(c) < 0.3 else None)(
            background(browser)))
        assert luminance(light) > 0.7, light
        browser.js("window.scrollTo(0, 0)")
        browser.screenshot("dark.png")
    finally:
        browser.cmd("POST", "/goog/cdp/execute", {"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": "light"}]}})
    print(f"dark mode: background {light} -> {dark}")


def check_phone(browser, ui):
    browser.cmd("POST", "/window/rect", {"width": 390, "height": 844})
    try:
        browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Along/pending"})
        cell = "document.querySelector('#list tbody tr td.v')"
        drive.wait("the long value listed", lambda: browser.js(f"return {cell}.textContent").startswith(LONG[:80]))
        wide = browser.js("return document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the page is {wide} px wider than a phone"
        # Wrapped: over several lines, and never inside a word (each line ends at a space).
        lines = browser.js(f"""
            const node = {cell}.firstChild, range = document.createRange(), tops = new Map();
            for (let i = 0; i < node.length; i++) {{
              range.setStart(node, i); range.setEnd(node, i + 1);
              const top = Math.round(range.getBoundingClientRect().top);
              tops.set(top, (tops.get(top) || '') + node.data[i]);
            }}
            return [...tops.values()];""")
        assert len(lines) >= 3, lines
        for line in lines[:-1]:
            assert line.endswith(" "), f"a word broken at the line's end: {lines}"
        browser.screenshot("phone-wrap.png", at="#list")
        print(f"phone: no overflow; the long value on {len(lines)} lines, broken between words")
    finally:
        browser.cmd("POST", "/window/rect", {"width": 1280, "height": 1000})


def main():
    drive.os.makedirs(drive.OUT, exist_ok=True)
    redis = drive.Redis()
    fill(redis)
    port = drive.free_port()
    ui = f"http://127.0.0.1:{port}"
    # --lagging-after 2s, as its variable (a binary without the option ignores it).
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}",
                 "--allow-writes"],
                env={**drive.os.environ, "DELAYQ_UI_TOKEN": drive.TOKEN,
                     "DELAYQ_LAGGING_AFTER": "2s"})
    drive.wait("delayq ui", lambda: drive.http("GET", ui + "/api/queues")[0] == 200)
    browser = drive.Browser()
    failed = []
    try:
        # Each check loads the page it needs, so each runs (and says how it failed) on its own.
        for check in (check_health, check_times_links_and_tabs, check_polish, check_charts,
                      check_dark, check_phone):
            try:
                check(browser, ui)
            except AssertionError as err:
                failed.append(check.__name__)
                print(f"FAILED {check.__name__}: {err}")
    finally:
        browser.close()
    if failed:
        raise SystemExit(f"ui health and polish checks failed: {', '.join(failed)}")
    print("ui health and polish checks passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        drive.stop_all()
