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
OPENED = set()
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Records every request and its signature's check. /PLAN/... answers the n-th request
    with PLAN's n-th status (500-200); /slowMS/GROUP/... answers 200 after MS ms, and
    /gate/GROUP/... once the test opens GROUP (OPENED); both count the requests of GROUP under
    way (RUNNING, PEAK)."""

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
        if parts[1].startswith("slow") or parts[1] == "gate":
            group = parts[2]
            with LOCK:
                RUNNING[group] = RUNNING.get(group, 0) + 1
                PEAK[group] = max(PEAK.get(group, 0), RUNNING[group])
            if parts[1] == "gate":
                while True:
                    with LOCK:
                        if group in OPENED:
                            break
                    time.sleep(0.01)
            else:
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


def wait_running(group, n):
    """Waits until n requests of a /gate/ group are under way at once."""
    deadline = time.time() + PATIENCE_S
    while True:
        with LOCK:
            running = RUNNING.get(group, 0)
        if running >= n:
            return
        assert time.time() < deadline, f"{group}: {running} under way, not {n}"
        time.sleep(0.02)


def by_start(records):
    return sorted(records, key=lambda r: r["start"])


def test_queue_fifo_one_at_a_time_paused_then_resumed(client):
    client.queue.upsert("py-fifo", parallelism=1, paused=True)
    ids = []
    for i in range(6):
        res = client.message.enqueue(queue="py-fifo", url=f"{BASE}/slow100/py-fifo/{i}", body=f"m{i}")
        ids.append(res.message_id)
        time.sleep(0.003)
    time.sleep(0.8)
    assert to("/slow100/py-fifo/") == []
    queue = client.queue.get("py-fifo")
    assert (queue.name, queue.paused, queue.parallelism, queue.lag) == ("py-fifo", True, 1, 6)
    client.queue.resume("py-fifo")
    wait_for("/slow100/py-fifo/", 6)
    calls = by_start(to("/slow100/py-fifo/"))
    assert [c["target"] for c in calls] == [f"/slow100/py-fifo/{i}" for i in range(6)]
    assert [c["headers"]["upstash-message-id"] for c in calls] == ids
    assert all(c["verified"] for c in calls), [c["error"] for c in calls]
    assert PEAK["py-fifo"] == 1
    assert "py-fifo" in [q.name for q in client.queue.list()]
    deadline = time.time() + PATIENCE_S
    while client.queue.get("py-fifo").lag > 0 and time.time() < deadline:
        time.sleep(0.05)
    client.queue.delete("py-fifo")
    with pytest.raises(QStashError):
        client.queue.get("py-fifo")


def test_queue_parallelism_caps_deliveries(client):
    client.queue.upsert("py-two", parallelism=2, paused=True)
    for i in range(8):
        client.message.enqueue(queue="py-two", url=f"{BASE}/gate/py-two/{i}", body="p")
    client.queue.resume("py-two")
    # Held at the receiver until two are under way: the parallelism is seen used whatever the
    # machine's speed (timed answers alone may each end before the next starts).
    wait_running("py-two", 2)
    with LOCK:
        OPENED.add("py-two")
    wait_for("/gate/py-two/", 8)
    time.sleep(0.4)
    assert PEAK["py-two"] == 2


def test_queue_bad_name_or_parallelism_refused(client):
    with pytest.raises(QStashError, match="queue name"):
        client.message.enqueue(queue="bad*name", url=f"{BASE}/200/py-q-bad", body="x")
    with pytest.raises(QStashError, match="parallelism"):
        client.queue.upsert("py-p0", parallelism=0)
    names = [q.name for q in client.queue.list()]
    assert "py-p0" not in names and "bad*name" not in names
    time.sleep(0.3)
    assert to("/200/py-q-bad") == []


def test_flow_control_parallelism_one_per_key(client):
    for i in range(5):
        client.message.publish(url=f"{BASE}/slow200/py-fc-a/{i}", body="a",
                               flow_control={"key": "py-a", "parallelism": 1})
    got = wait_for("/slow200/py-fc-a/", 5)
    time.sleep(0.3)
    assert all(c["verified"] for c in got), [c["error"] for c in got]
    assert PEAK["py-fc-a"] == 1


def test_flow_control_rate_per_period(client):
    # All six due at one instant, so that the limit alone spreads their starts.
    due_secs = int(time.time()) + 2
    for i in range(6):
        client.message.publish(url=f"{BASE}/200/py-fc-rate/{i}", body="r", not_before=due_secs,
                               flow_control={"key": "py-r", "rate": 2, "period": 1})
    calls = by_start(wait_for("/200/py-fc-rate/", 6))
    # Two per second, spread: the limit grants start k (from 0) no sooner than kT - T/2 after
    # the due time (T = 0.5 s; 2 ms less for rounding), and the receiver sees each request after
    # its grant: lower bounds that hold whatever the machine's load (differences of the
    # receiver's times would not: a late first request shortens them).
    seen_at = [c["start"] - due_secs for c in calls]
    assert seen_at[0] >= 0, seen_at
    for k in range(1, len(calls)):
        assert seen_at[k] >= k * 0.5 - 0.25 - 0.002, (k, seen_at)


def test_flow_control_values_read_back_and_bad_ones_refused(client):
    # Due in an hour: still pending when read and cancelled below, however slow the machine.
    res = client.message.publish(url=f"{BASE}/200/py-fc-shown", body="s", delay="1h",
                                 flow_control={"key": "py-s", "parallelism": 3, "rate": 5,
                                               "period": 5403})
    message = client.message.get(res.message_id)
    assert message.flow_control.key == "py-s"
    assert (message.flow_control.parallelism, message.flow_control.rate) == (3, 5)
    assert message.flow_control.period == 5403
    client.message.cancel(res.message_id)
    for bad in [{"key": "k", "parallelism": 0}, {"key": "k", "rate": 1, "period": "8d"},
                {"key": "k", "rate": "x"}]:
        with pytest.raises(QStashError, match="Flow-Control-Value"):
            client.message.publish(url=f"{BASE}/200/py-fc-bad", body="x", flow_control=bad)
    time.sleep(0.3)
    assert to("/200/py-fc-bad") == []


def test_flow_control_key_read_with_its_wait_list(client):
    with pytest.raises(QStashError):
        client.flow_control.get("py-w")
    # One start an hour: the first is delivered, the two others wait for the rate.
    for i in range(3):
        client.message.publish(url=f"{BASE}/200/py-fc-wait/{i}", body="w",
                               flow_control={"key": "py-w", "parallelism": 2, "rate": 1,
                                             "period": "1h"})
    wait_for("/200/py-fc-wait/", 1)
    deadline = time.time() + PATIENCE_S
    while True:
        info = client.flow_control.get("py-w")
        if info.wait_list_size == 2:
            break
        assert time.time() < deadline, info
        time.sleep(0.05)
    assert info.key == "py-w"
    assert (info.parallelism_max, info.rate_max, info.rate_count) == (2, 1, 1)
    assert info.rate_period == 3600
    assert not info.is_paused
    assert len(to("/200/py-fc-wait/")) == 1
    # Paused and resumed (deliveries held while paused: tests/flow_control.rs); pinning is not
    # supported: refused, not ignored.
    with pytest.raises(QStashError):
        client.flow_control.pause("py-none")
    client.flow_control.pause("py-w")
    assert client.flow_control.get("py-w").is_paused
    client.flow_control.resume("py-w")
    assert not client.flow_control.get("py-w").is_paused
    with pytest.raises(QStashError):
        client.flow_control.pin("py-w", {"parallelism": 1})
    # The rate reset: the next one starts at once, the last waits again.
    with pytest.raises(QStashError):
        client.flow_control.reset_rate("py-none")
    client.flow_control.reset_rate("py-w")
    wait_for("/200/py-fc-wait/", 2)
    while True:
        info = client.flow_control.get("py-w")
        if info.wait_list_size == 1:
            break
        assert time.time() < deadline, info
        time.sleep(0.05)
    assert info.rate_count == 1
    assert len(to("/200/py-fc-wait/")) == 2
