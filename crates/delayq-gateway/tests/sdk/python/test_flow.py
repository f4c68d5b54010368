"""Callbacks, queues and flow control through the official QStash Python SDK (qstash) and
`delayq gateway`: a recording receiver of its own on loopback (RECEIVER_PORT) verifies every
request with the SDK's Receiver and measures how many deliveries of a path run at once.
Started by ../run.sh."""

import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash, Receiver
from qstash.errors import QStashError

PATIENCE_S = 60


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run tests/sdk/run.sh", returncode=2)
    return value


GATEWAY_URL = env("GATEWAY_URL")
TOKEN = env("GATEWAY_TOKEN")
PORT = int(env("RECEIVER_PORT"))
BASE = f"http://127.0.0.1:{PORT}"
RECEIVER = Receiver(
    current_signing_key=env("SIGNING_KEY"), next_signing_key=env("NEXT_SIGNING_KEY")
)

SEEN = []
RUNNING = {}
PEAK = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Records every request and its signature's check. /PLAN/... answers the n-th request
    with PLAN's n-th status (500-200); /slowMS/GROUP/... answers 200 after MS ms and counts
    the requests of GROUP under way (RUNNING, PEAK)."""

    def handle_one(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        record = {"target": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                  "body": body, "start": time.time(), "verified": False, "error": None}
        try:
            RECEIVER.verify(signature=self.headers.get("Upstash-Signature", ""),
                            body=body.decode("utf-8"), url=BASE + self.path)
            record["verified"] = True
        except Exception as err:  # the SDK's SignatureError
            record["error"] = repr(err)
        path = self.path.split("?")[0]
        parts = path.split("/")
        with LOCK:
            n = sum(1 for r in SEEN if r["target"].split("?")[0] == path)
            SEEN.append(record)
        status = 200
        if parts[1].startswith("slow"):
            group = parts[2]
            with LOCK:
                RUNNING[group] = RUNNING.get(group, 0) + 1
                PEAK[group] = max(PEAK.get(group, 0), RUNNING[group])
            time.sleep(int(parts[1][4:]) / 1000)
            with LOCK:
                RUNNING[group] -= 1
        else:
            plan = [int(s) for s in parts[1].split("-") if s.isdigit()] or [200]
            status = plan[min(n, len(plan) - 1)]
        record["end"] = time.time()
        self.send_response(status)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"answer")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module", autouse=True)
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield
    server.shutdown()


@pytest.fixture
def client():
    return QStash(TOKEN, base_url=GATEWAY_URL)


def to(prefix):
    with LOCK:
        return [r for r in SEEN if r["target"].startswith(prefix)]


def wait_for(prefix, n):
    deadline = time.time() + PATIENCE_S
    while len(to(prefix)) < n:
        assert time.time() < deadline, f"{prefix}: {len(to(prefix))} requests, not {n}"
        time.sleep(0.025)
    return to(prefix)


def test_callback_body_signed_for_the_callback_url(client):
    res = client.message.publish(url=f"{BASE}/200/py-cb-source", body="source body",
                                 callback=f"{BASE}/200/py-cb/", retries=2)
    [cb] = wait_for("/200/py-cb/", 1)
    assert cb["verified"], cb["error"]
    body = json.loads(cb["body"])
    assert body["status"] == 200
    assert body["sourceMessageId"] == res.message_id
    assert base64.b64decode(body["body"]) == b"answer"
    assert base64.b64decode(body["sourceBody"]) == b"source body"
    assert body["retried"] == 0 and body["maxRetries"] == 2
    assert "dlqId" not in body


def test_failure_callback_after_the_last_retry(client):
    res = client.message.publish(url=f"{BASE}/500/py-fail", body="x", retries=1,
                                 failure_callback=f"{BASE}/200/py-fcb")
    [cb] = wait_for("/200/py-fcb", 1)
    assert cb["verified"], cb["error"]
    assert len(to("/500/py-fail")) == 2
    body = json.loads(cb["body"])
    assert body["status"] == 500
    assert body["dlqId"] == res.message_id
    assert body["retried"] == 1
    assert base64.b64decode(body["body"]) == b"answer"


def test_callback_outside_the_allow_list_is_refused(client):
    with pytest.raises(QStashError, match="allow-list"):
        client.message.publish(url=f"{BASE}/200/py-cb-refused", body="x",
                               callback="http://127.0.0.2:1/cb")
    time.sleep(0.3)
    assert to("/200/py-cb-refused") == []
