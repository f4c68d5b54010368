"""Browser checks of the search inside a tab, the entry detail and the bulk actions.

Called from drive.py's main() with its browser, redis and dashboard address (writes allowed,
the token already typed into the page).
"""
import subprocess

from drive import DELAYQ, SAID, TOKEN, dead_letters, http, wait

QUEUE = "ui:search"
ZSET = "redisson_delay_queue_timeout:{ui:search}"
# 1,100 pending entries packed as Redisson's offer packs them (id length, id, value length,
# value), due 1 h from now and a second apart in offer order; the 1,051st is "needle-1050".
FILL = """
local now = tonumber(ARGV[1])
for i = 0, 1099 do
  local id = struct.pack('>I4I4', 7, i)
  local value = i == 1050 and 'needle-1050' or ('hay-' .. i)
  local entry = struct.pack('Bc0Lc0', string.len(id), id, string.len(value), value)
  redis.call('zadd', KEYS[1], now + 3600000 + i * 1000, entry)
  redis.call('rpush', KEYS[2], entry)
end
"""
# How many members of the zset KEYS[1] start with each handle (hex) of ARGV.
WITH_HANDLE = """
local found = {}
for i, handle in ipairs(ARGV) do found[i] = 0 end
for _, entry in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do
  local hex = string.gsub(string.sub(entry, 1, 9), '.', function(c)
    return string.format('%02x', string.byte(c)) end)
  for i, handle in ipairs(ARGV) do if hex == handle then found[i] = found[i] + 1 end end
end
return found
"""
ROWS = "return [...document.querySelectorAll('#list tbody tr')]"
VALUES = ROWS + ".map(r => r.cells[2].textContent)"


def search_for(browser, text):
    browser.js("const s = document.querySelector('#search'); s.value = arguments[0]; "
               "s.dispatchEvent(new Event('change'))", text)


def info(browser):
    return browser.js("return document.querySelector('#search-info').textContent")


def check_search(browser, redis, ui):
    """A value's start past the first window, found by "search further"; an entry by handle."""
    now = int(redis.cli("TIME").split()[0]) * 1000
    redis.cli("EVAL", FILL, "2", ZSET, "redisson_delay_queue:{ui:search}", str(now))
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Asearch/pending"})
    wait("the first page", lambda: len(browser.js(VALUES)) == 50)
    search_for(browser, "needle")
    wait("the first window searched", lambda: info(browser).startswith("0 found among entries 1–1000"))
    browser.js("document.querySelector('#search-further').click()")
    wait("found further on", lambda: browser.js(VALUES) == ["needle-1050"])
    assert info(browser).startswith("1 found among entries 1001–1100"), info(browser)
    browser.screenshot("search.png", at="#search")
    # An entry past the first page by its handle, searched from the start.
    status, page = http("GET", ui + "/api/queues/ui:search?from=700")
    assert status == 200, page
    handle = page["rows"][0]["handle"]
    search_for(browser, "")
    wait("the list again", lambda: len(browser.js(VALUES)) == 50)
    search_for(browser, handle)
    wait("found by its handle", lambda: browser.js(ROWS + ".map(r => r.dataset.key)") == [handle])
    assert browser.js(VALUES) == ["hay-700"], browser.js(VALUES)
    search_for(browser, "")
    wait("the list again", lambda: len(browser.js(VALUES)) == 50)
    print(f"search: needle-1050 found past the first window of 1,000; hay-700 by its handle")


def check_job(browser, redis, ui):
    """A dead letter's detail: its decoded value, attempts and last error; by its own address."""
    payload = '{"order": 42, "note": "a job"}'
    subprocess.run([DELAYQ, "--url", redis.url, "offer", "ui:jobs", payload, "--delay", "100ms"],
                   check=True, stdout=subprocess.DEVNULL)
    dead_letters(redis, "ui:jobs", 1)
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Ajobs/dead"})
    wait("the dead letter listed", lambda: len(browser.js(ROWS)) == 1)
    browser.js(ROWS + "[0].click()")
    field = "return (document.querySelector('#job .job-' + arguments[0]) || {}).textContent"
    wait("the entry shown", lambda: browser.js(field, "attempts") == "1")
    last_error = browser.js(field, "last-error")
    assert last_error == "sh exited with exit status: 3; stderr: " + SAID, last_error
    assert browser.js("return document.querySelector('#job-value').textContent") == payload
    assert browser.js("return document.querySelectorAll('#job-actions button').length") == 2
    link = browser.js("return location.href")
    assert "/dead/" in link, link
    browser.screenshot("job.png")
    # Its address opens it again on a fresh page.
    browser.cmd("POST", "/url", {"url": ui + "/"})
    browser.cmd("POST", "/url", {"url": link})
    wait("the entry by its address", lambda: browser.js(
        "return document.querySelector('#job-value').textContent") == payload)
    print(f"job: a dead letter's value, attempts and error shown, at {link.split('#')[1]}")


def check_bulk(browser, redis, ui):
    """Two selected pending entries cancelled with one question: exactly those two leave Redis."""
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/ui%3Asearch/pending"})
    boxes = "return document.querySelectorAll('#list tbody input.pick').length"
    wait("rows with boxes", lambda: browser.js(boxes) == 50)
    picked = browser.js("const rows = [...document.querySelectorAll('#list tbody tr')].slice(1, 3);"
                        "rows.forEach(r => r.querySelector('input.pick').click());"
                        "return rows.map(r => r.dataset.key)")
    kept = browser.js(ROWS + "[0].dataset.key")
    before = int(redis.cli("ZCARD", ZSET))
    outcome = "return [...document.querySelectorAll('#bulk-outcome li')].map(l => l.textContent)"

    def cancel_selected(shot):
        browser.js("document.querySelector('#bulk-outcome').replaceChildren();"
                   "document.querySelector('#bulk').scrollIntoView();"
                   "document.querySelector('#bulk button[data-bulk=\"cancel\"]').click()")
        assert browser.js("return document.querySelector('#confirm').open"), "no confirmation"
        question = browser.js("return document.querySelector('#confirm-text').textContent")
        assert "2 selected" in question, question
        if shot:
            browser.screenshot("bulk.png")
        browser.js("document.querySelector('#confirm-yes').click()")
        wait("an outcome for each", lambda: len(browser.js(outcome)) == 2)
        assert not browser.js("return document.querySelector('#confirm').open"), "asked again"
        return question

    # The page was opened afresh: no token typed, so each is refused and said so; none is lost.
    cancel_selected(False)
    assert all("401" in o for o in browser.js(outcome)), browser.js(outcome)
    assert int(redis.cli("ZCARD", ZSET)) == before
    browser.js("document.querySelector('#token').value = arguments[0]", TOKEN)
    question = cancel_selected(True)
    assert all(o.endswith(": done") for o in browser.js(outcome)), browser.js(outcome)
    assert int(redis.cli("ZCARD", ZSET)) == before - 2
    assert redis.cli("LLEN", "redisson_delay_queue:{ui:search}") == str(before - 2)
    counts = redis.cli("EVAL", WITH_HANDLE, "1", ZSET, *picked, kept).split()
    assert counts == ["0", "0", "1"], (picked, kept, counts)
    print(f"bulk: asked once ({question!r}); cancelled exactly {picked}")


def run(browser, redis, ui):
    check_search(browser, redis, ui)
    check_job(browser, redis, ui)
    check_bulk(browser, redis, ui)
