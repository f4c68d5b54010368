"""Roles in the browser: a second `delayq ui` under --base-path /delayq with an operator's and
an admin's token; the page, given the operator's token, says its role, disables what only the
admin may do (the title says why; the API answers 403 and nothing is purged) and retries a dead
letter. `drive` is drive.py's module: its helpers start and stop the processes."""
import os
import tempfile

OPERATOR = "ui-operator-token-0123456789"
ADMIN = "ui-admin-token-0123456789abcd"
# Two dead-letter records (attempts 1, error "e") of delayq's layout, values from ARGV.
DEAD = ("for _, v in ipairs(ARGV) do redis.call('RPUSH', KEYS[1], 'DQD1' .. "
        "string.char(0, 0, 0, 1) .. string.rep(string.char(0), 8) .. "
        "string.char(0, 0, 0, 1) .. 'e' .. v) end")


def token_file(directory, name, token):
    path = os.path.join(directory, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(token + "\n")
    return path


def type_token(browser, token):
    """Types `token` into the page's token field, as a person would (an input event)."""
    browser.js("const t = document.querySelector('#token'); t.value = arguments[0]; "
               "t.dispatchEvent(new Event('input'))", token)


def check_access(drive, browser, redis):
    redis.cli("EVAL", DEAD, "1", "delayq_dead:{ui:roles}", "first", "second")
    directory = tempfile.mkdtemp(prefix="delayq-ui-tokens-")
    port = drive.free_port()
    base = f"http://127.0.0.1:{port}/delayq"
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}",
                 "--base-path", "/delayq",
                 "--operator-token-file", token_file(directory, "operator", OPERATOR),
                 "--admin-token-file", token_file(directory, "admin", ADMIN)])
    drive.wait("delayq ui under /delayq", lambda: drive.http("GET", base + "/healthz")[0] == 200)
    assert drive.http("GET", f"http://127.0.0.1:{port}/api/queues")[0] == 404

    browser.cmd("POST", "/url", {"url": base + "/#/queue/ui%3Aroles/dead"})
    type_token(browser, OPERATOR)
    drive.wait("the operator's role shown", lambda: browser.js(
        "return document.querySelector('#mode').textContent").startswith("role operator"))
    rows = "return document.querySelectorAll('#list tbody tr').length"
    drive.wait("two dead letters listed", lambda: browser.js(rows) == 2)
    state = """return [...document.querySelectorAll(arguments[0])]
        .map(b => [b.dataset.action || b.dataset.entry, b.disabled, b.title])"""
    purge = browser.js(state, "button[data-action='purge-dead']")[0]
    assert purge[1] and "needs the admin role" in purge[2], purge
    def gated():
        buttons = browser.js(state, "#list tbody button[data-entry]")
        return len(buttons) == 4 and all(
            disabled == (action == "delete") for action, disabled, _ in buttons)
    drive.wait("the rows' buttons made and gated", gated)
    assert not browser.js(state, "button[data-action='replay']")[0][1]

    auth = {"Authorization": "Bearer " + OPERATOR}
    status, body = drive.http("POST", base + "/api/queues/ui:roles/purge-dead", headers=auth)
    assert status == 403 and "admin" in body["error"], (status, body)
    assert redis.cli("LLEN", "delayq_dead:{ui:roles}") == "2"

    browser.js("document.querySelector('#list tbody button[data-entry=\"retry\"]').click()")
    drive.wait("a dead letter retried", lambda: redis.cli("LLEN", "delayq_dead:{ui:roles}") == "1")
    assert redis.cli("LRANGE", "ui:roles", "0", "-1") == "first"
    drive.wait("the retry said", lambda: "done" in browser.js(
        "return document.querySelector('#status').textContent"))
    # One row in the overview, so that the detail with its disabled buttons is in the picture.
    browser.js("const f = document.querySelector('#filter'); f.value = 'roles'; "
               "f.dispatchEvent(new Event('input'))")
    drive.wait("one queue listed", lambda: browser.js(
        "return document.querySelector('#page').textContent") == "1–1 of 1 queues")
    browser.screenshot("role-refused.png")
    print(f"operator under /delayq: purge disabled ({purge[2]!r}), API 403; a retry done")
