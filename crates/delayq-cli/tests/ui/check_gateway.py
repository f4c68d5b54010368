"""Browser and API checks of the gateway's messages in the dashboard, run on their own (run.sh
runs them after check_workers.py): python3 check_gateway.py target/debug/delayq.

Its own redis-server, read-only `delayq ui`, a real `delayq gateway` (token and key files
0600) and an allow-listed loopback receiver that answers /ok with 200 and /fail with 500:
- before the gateway starts, the Gateway page says "No gateway" and the API lists none;
- a delayed message, a delivered one, a dead one (no retries, the receiver's 500), one whose
  first attempt failed (its row says "attempts 1"), a message
  of a QStash queue (parallelism 2) and a schedule are published through the gateway's API;
- the gateway queue's pending row and entry show method, URL, message id, labels, the body's
  start and length, the forwarded Authorization header redacted (its value nowhere in the
  answer); the dead row shows the last answer (500, its body's start) and the error; the
  queue's lane decodes its message with its queue name; a plain queue decodes nothing;
- the Gateway page lists the QStash queue (parallelism, paused, lag), the schedule (id, cron,
  destination) and the dead letters' count, each linking to the queue view.
"""
import http.server
import json
import os
import subprocess
import tempfile
import threading
import urllib.parse
import urllib.request

import drive

TOKEN = "gw-ui-test-token-0123456789abcdef"
SECRET = "Bearer top-secret-forwarded-credential"
GATEWAY = "delayq-gateway"
ROWS = "return [...document.querySelectorAll(arguments[0] + ' tbody tr')].map(r => [...r.cells].map(c => c.textContent))"


class Receiver(http.server.BaseHTTPRequestHandler):
    got = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Receiver.got.append((self.path, body))
        status, answer = (200, b"ok") if self.path == "/ok" else (500, b"receiver says no: boom")
        self.send_response(status)
        self.send_header("Set-Cookie", "session=receiver-cookie-value")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def secret_file(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, 0o600)
    return path


def gw(base, method, path, body=b"", headers=None):
    """A request to the gateway with the admin token: (status, JSON)."""
    req = urllib.request.Request(base + path, data=body if method != "GET" else None, method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def publish(base, dest, body, **headers):
    status, answer = gw(base, "POST", "/v2/publish/" + dest, body.encode(), headers)
    assert status in (200, 201), (status, answer)
    return answer["messageId"]


def seed(base, receiver):
    ids = {}
    ids["delayed"] = publish(base, receiver + "/ok", '{"order": 42}', **{
        "Upstash-Delay": "1h", "Upstash-Label": "billing", "Content-Type": "application/json",
        "Upstash-Forward-Authorization": SECRET, "Upstash-Forward-X-Trace": "trace-1"})
    ids["delivered"] = publish(base, receiver + "/ok", "hello")
    ids["dead"] = publish(base, receiver + "/fail", "doomed body", **{"Upstash-Retries": "0"})
    # Its first attempt fails (500), its next waits an hour: pending with 1 attempt made.
    ids["retried"] = publish(base, receiver + "/fail", "try again", **{
        "Upstash-Retries": "2", "Upstash-Retry-Delay": "3600000"})
    status, answer = gw(base, "POST", "/v2/queues", json.dumps(
        {"queueName": "emails", "parallelism": 2}).encode(), {"Content-Type": "application/json"})
    assert status == 200, (status, answer)
    status, answer = gw(base, "POST", "/v2/enqueue/emails/" + receiver + "/ok", b"to the queue",
                        {"Upstash-Delay": "1h"})
    assert status in (200, 201), (status, answer)
    ids["queued"] = answer["messageId"]
    status, answer = gw(base, "POST", "/v2/schedules/" + receiver + "/ok", b"tick",
                        {"Upstash-Cron": "*/5 * * * *"})
    assert status in (200, 201), (status, answer)
    ids["schedule"] = answer["scheduleId"]
    drive.wait("the delivered message", lambda: any(b == b"hello" for _, b in Receiver.got))
    drive.wait("the dead letter", lambda: gw(base, "GET", "/v2/dlq")[1]["messages"], timeout=60)
    return ids


def check_api(ui, ids, receiver):
    q = urllib.parse.quote(GATEWAY, safe="")
    status, d = drive.http("GET", ui + f"/api/queues/{q}?tab=pending")
    assert status == 200 and d["gateway"] == GATEWAY, (status, d)
    text = json.dumps(d)
    assert "top-secret" not in text and b"top-secret".hex() not in text, "a forwarded credential was shown"
    assert all("value" not in r and "hex" not in r for r in d["rows"]), "an envelope's bytes were shown"
    m = next(r["message"] for r in d["rows"] if r.get("message", {}).get("messageId") == ids["delayed"])
    assert (m["method"], m["url"], m["labels"]) == ("POST", receiver + "/ok", ["billing"]), m
    assert m["header"]["authorization"] == ["[redacted]"] and m["header"]["x-trace"] == ["trace-1"], m
    assert (m["body"], m["bodyLength"], m["bodyCut"]) == ('{"order": 42}', 13, False), m
    handle = next(r["handle"] for r in d["rows"] if r["message"]["messageId"] == ids["delayed"])
    status, job = drive.http("GET", ui + f"/api/queues/{q}/job/pending/{handle}?at=0")
    assert status == 200 and job["message"]["messageId"] == ids["delayed"], (status, job)
    assert "top-secret" not in json.dumps(job) and b"top-secret".hex() not in json.dumps(job), job

    status, d = drive.http("GET", ui + f"/api/queues/{q}?tab=dead")
    assert status == 200 and len(d["rows"]) == 1, (status, d)
    dead = d["rows"][0]
    assert dead["message"]["messageId"] == ids["dead"] and dead["message"]["body"] == "doomed body", dead
    assert dead["response"]["responseStatus"] == 500, dead
    assert dead["response"]["responseBody"] == "receiver says no: boom", dead
    assert dead["response"]["responseHeader"]["set-cookie"] == ["[redacted]"], dead
    assert "500" in dead["error"] and dead["attempts"] == 1, dead
    status, job = drive.http("GET", ui + f"/api/queues/{q}/job/dead/{dead['id']}?at=0")
    assert status == 200 and job["response"]["responseStatus"] == 500, (status, job)
    assert "receiver-cookie-value" not in json.dumps(job), job

    lane = urllib.parse.quote(GATEWAY + ":q:emails", safe="")
    status, d = drive.http("GET", ui + f"/api/queues/{lane}?tab=pending")
    assert status == 200 and d["gateway"] == GATEWAY, (status, d)
    m = d["rows"][0]["message"]
    assert (m["messageId"], m["queueName"], m["body"]) == (ids["queued"], "emails", "to the queue"), m

    status, d = drive.http("GET", ui + "/api/queues/ui%3Aplain?tab=pending")
    assert status == 200 and d["gateway"] is None and "message" not in d["rows"][0], d

    status, d = drive.http("GET", ui + "/api/gateway")
    assert status == 200 and [g["name"] for g in d["gateways"]] == [GATEWAY], d
    g = d["gateways"][0]
    assert g["dlq"] == 1, g
    emails = g["queues"][0]
    assert (emails["name"], emails["parallelism"], emails["paused"], emails["lag"]) == \
        ("emails", 2, False, 1), emails
    s = g["schedules"]["shown"][0]
    assert (g["schedules"]["total"], s["scheduleId"], s["cron"], s["destination"]) == \
        (1, ids["schedule"], "*/5 * * * *", receiver + "/ok"), g["schedules"]
    assert s["nextMs"] > d["now_ms"], s
    print(f"API: pending {ids['delayed']} decoded (Authorization redacted), dead letter's last "
          f"answer 500, lane emails lag 1, schedule {s['cron']}, DLQ {g['dlq']}")


def check_pages(browser, ui, ids, receiver):
    browser.cmd("POST", "/url", {"url": ui + "/#/gateway"})
    queues = drive.wait("the gateway's queues", lambda: browser.js(ROWS, "#gw-queues-" + GATEWAY) or None)
    assert queues[0][:4] == ["emails", "2", "no", "1"], queues
    schedules = browser.js(ROWS, "#gw-schedules-" + GATEWAY)
    assert schedules[0][:4] == [ids["schedule"], "*/5 * * * *", receiver + "/ok", "POST"], schedules
    assert browser.js("return document.querySelector('#gateway a.dlq').textContent") == "1"
    links = browser.js("return [...document.querySelectorAll('#gateway a')].map(a => a.getAttribute('href'))")
    assert "#/queue/delayq-gateway%3Aq%3Aemails/pending" in links, links
    assert "#/queue/delayq-gateway/dead" in links, links
    browser.screenshot("gateway.png")

    browser.cmd("POST", "/url", {"url": ui + "/#/queue/delayq-gateway/pending"})
    rows = drive.wait("the gateway queue's rows", lambda: browser.js(ROWS, "#list") or None)
    value = next(r[2] for r in rows if ids["delayed"] in r[2])
    assert value.startswith("POST " + receiver + "/ok · " + ids["delayed"]), value
    assert "labels billing" in value and 'body: {"order": 42}' in value, value
    retried = drive.wait("the retried message's attempt", lambda: next(
        (r[2] for r in browser.js(ROWS, "#list") if ids["retried"] in r[2] and "attempts 1" in r[2]), None))
    assert retried.startswith("POST " + receiver + "/fail · " + ids["retried"] + " · attempts 1 · "), retried
    browser.cmd("POST", "/url", {"url": ui + "/#/queue/delayq-gateway/dead"})
    rows = drive.wait("the dead tab", lambda: (lambda r: r if r and ids["dead"] in r[0][3] else None)(
        browser.js(ROWS, "#list")))
    assert "last answer 500: receiver says no: boom" in rows[0][3], rows
    page = browser.js("return document.body.textContent")
    assert "top-secret" not in page and "receiver-cookie-value" not in page
    browser.screenshot("gateway-dead.png", at="#list")
    print(f"pages: gateway page lists emails and {ids['schedule']}; rows decoded: {value[:60]}...")


def check_no_gateway(browser, ui):
    status, d = drive.http("GET", ui + "/api/gateway")
    assert status == 200 and d["gateways"] == [], d
    browser.cmd("POST", "/url", {"url": ui + "/#/gateway"})
    drive.wait("No gateway said", lambda: browser.js("return !document.querySelector('#no-gateway').hidden"))
    print("no gateway yet: the page says so")


def main():
    drive.os.makedirs(drive.OUT, exist_ok=True)
    redis = drive.Redis()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver = f"http://127.0.0.1:{server.server_address[1]}"
    drive.delayq(redis, "offer", "ui:plain", "a plain value", "--delay", "1h")
    port = drive.free_port()
    ui = f"http://127.0.0.1:{port}"
    drive.start([drive.DELAYQ, "--url", redis.url, "ui", "--listen", f"127.0.0.1:{port}"])
    drive.wait("delayq ui", lambda: drive.http("GET", ui + "/api/queues")[0] == 200)
    browser = drive.Browser()
    try:
        check_no_gateway(browser, ui)
        folder = tempfile.mkdtemp(prefix="delayq-ui-gateway-")
        gw_port = drive.free_port()
        base = f"http://127.0.0.1:{gw_port}"
        drive.start([drive.DELAYQ, "--url", redis.url, "gateway", "--listen", f"127.0.0.1:{gw_port}",
                     "--token-file", secret_file(folder, "token", TOKEN),
                     "--signing-key-file", secret_file(folder, "key", "sig_current_gw_ui_test"),
                     "--next-signing-key-file", secret_file(folder, "next", "sig_next_gw_ui_test"),
                     "--allow-destination", receiver + "/"])
        drive.wait("delayq gateway", lambda: gw(base, "GET", "/v2/keys")[0] == 200)
        ids = seed(base, receiver)
        check_api(ui, ids, receiver)
        check_pages(browser, ui, ids, receiver)
    finally:
        browser.close()
        server.shutdown()
    print("ui gateway checks passed")


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
