"""Browser check of a queue's flow-control limits in its view, called from drive.py's main()
with drive.py itself (its helpers), the browser, Redis and the dashboard's address.

- shown: limits set with `delayq limit set` (a cap, a rate, a key pointer with a per-key cap)
  and their use while a real `delayq work` holds one value of key A and one of key B and has
  two more of A held back: slots held, the key held back in the top list;
- without a token the form's buttons are disabled (they need the admin role) and the API
  answers 401; with the admin's token the form stores new limits (read back with
  `delayq --json limit get`) and clear asks first, then removes them.
"""
import json
import subprocess

import check_access

QUEUE = "ui:limits"
TEXT = "return document.querySelector(arguments[0]).textContent"
KEYS = """return [...document.querySelectorAll('#limits-keys tbody tr')]
    .map(r => [...r.cells].map(c => c.textContent))"""
SAVE = "document.querySelector('button[data-entry=\"set-limits\"]')"


def stored(drive, redis):
    out = subprocess.run([drive.DELAYQ, "--url", redis.url, "--json", "limit", "get", QUEUE],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def check(drive, browser, redis, ui):
    drive.delayq(redis, "limit", "set", QUEUE, "--concurrency", "3", "--rate", "10/s",
                 "--key-pointer", "/k", "--key-concurrency", "1")
    worker = drive.start([drive.DELAYQ, "--url", redis.url, "work", QUEUE, "--concurrency", "4",
                          "--grace", "1s", "--", "sleep", "60"])
    for value in ('{"k":"A","i":1}', '{"k":"A","i":2}', '{"k":"A","i":3}', '{"k":"B","i":1}'):
        drive.delayq(redis, "offer", QUEUE, value)
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Alimits/pending"})
    summary = drive.wait("the limits shown", lambda: (
        lambda t: t if "concurrency 3" in t else None)(browser.js(TEXT, "#limits-summary")),
        timeout=30)
    assert summary == "concurrency 3 · rate 10/1s · per key (pointer /k): 1 at a time", summary
    usage = drive.wait("two slots held, two values held back", lambda: (
        lambda t: t if t == "slots held 2 of 3 · held back 2 (1 key)" else None)(
        browser.js(TEXT, "#limits-usage")), timeout=60)
    keys = browser.js(KEYS)
    assert keys == [["A", "2"]], keys
    print(f"limits shown: {summary!r}; {usage!r}; held back {keys}")

    # Read-only: the buttons say which role they need, the API refuses.
    check_access.type_token(browser, "")
    drive.wait("store disabled", lambda: browser.js("return " + SAVE + ".disabled"))
    assert "needs the admin role" in browser.js("return " + SAVE + ".title")
    status, _ = drive.http("POST", ui + "/api/queues/ui:limits/limits/clear-limits")
    assert status == 401, status
    assert stored(drive, redis)["limits"]["concurrency"] == 3

    # The admin stores new limits through the form.
    check_access.type_token(browser, drive.TOKEN)
    drive.wait("store enabled", lambda: browser.js("return !" + SAVE + ".disabled"))
    browser.js("const c = document.querySelector('#limit-concurrency'); c.value = '5';"
               "document.querySelector('#limit-rate').value = '';" + SAVE + ".click()")
    limits = drive.wait("the new limits stored", lambda: (
        lambda s: s["limits"] if s["limits"]["concurrency"] == 5 else None)(stored(drive, redis)))
    assert limits["rate"] is None and limits["key_pointer"] == "/k", limits
    assert limits["key_concurrency"] == 1, limits
    drive.wait("the page shows them", lambda: browser.js(TEXT, "#limits-summary")
               == "concurrency 5 · per key (pointer /k): 1 at a time")
    browser.screenshot("limits.png", at="#limits-section")
    print(f"limits stored through the page: {limits}")

    # Clear asks first.
    browser.js("document.querySelector('#limits-clear').click()")
    question = browser.js(TEXT, "#confirm-text")
    assert question.startswith("Remove every limit of ui:limits?"), question
    browser.js("document.querySelector('#confirm-yes').click()")
    drive.wait("the limits cleared", lambda: stored(drive, redis)["limits"] is None)
    drive.wait("none shown", lambda: browser.js(TEXT, "#limits-summary").startswith("none"))
    worker.terminate()
    worker.wait(timeout=30)
    print("limits cleared through the page, after asking")
