"""The official QStash Python SDK (qstash, pinned in requirements.txt) as a client of
`delayq gateway`: it publishes through the gateway, a recording receiver on loopback verifies
every delivery with the SDK's own Receiver. Started by ../run.sh, which passes the gateway's
address, token and keys and the receiver's port."""

import hashlib
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash, Receiver
from qstash.errors import QStashError
from qstash.log import LogState

PATIENCE_S = 60


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run tests/sdk/run.sh", returncode=2)
    return value


GATEWAY_URL = env("GATEWAY_URL")
TOKEN = env("GATEWAY_TOKEN")
CURRENT_KEY = env("SIGNING_KEY")
NEXT_KEY = env("NEXT_SIGNING_KEY")
PORT = int(env("RECEIVER_PORT"))
BASE = f"http://127.0.0.1:{PORT}"

SEEN = []
LOCK = threading.Lock()
RECEIVER = Receiver(current_signing_key=CURRENT_KEY, next_signing_key=NEXT_KEY)


class Handler(BaseHTTPRequestHandler):
    """Records every request and whether the SDK's Receiver accepts its signature; the n-th
    request to /PLAN/... gets the n-th status of PLAN (e.g. 500-200), the last repeating."""

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        record = {
            "method": self.command,
            "target": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "at": time.time(),
            "error": None,
        }
        try:
            RECEIVER.verify(
                signature=self.headers.get("Upstash-Signature", ""),
                body=body.decode("utf-8"),
                url=BASE + self.path,
            )
            record["verified"] = True
        except Exception as err:  # the SDK's SignatureError, or a body that is not UTF-8
            record["verified"] = False
            record["error"] = repr(err)
        path = self.path.split("?")[0]
        with LOCK:
            n = sum(1 for r in SEEN if r["target"].split("?")[0] == path)
            SEEN.append(record)
        plan = [int(s) for s in path.split("/")[1].split("-") if s.isdigit()] or [200]
        status = plan[min(n, len(plan) - 1)]
        self.send_response(status)
        self.send_header("Content-Length", "6")
        self.end_headers()
        self.wfile.write(b"answer")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session", autouse=True)
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


def test_publish_body_headers_and_signature(client):
    body = "grüße ✓ {\"k\": [1, 2]}\r\n"
    url = f"{BASE}/200/py-publish?x=1&y=a%20b"
    res = client.message.publish(
        url=url,
        body=body,
        method="PATCH",
        headers={"X-Order": "17"},
        content_type="text/plain; charset=utf-8",
    )
    assert res.message_id.startswith("msg_")
    [got] = wait_for("/200/py-publish", 1)
    assert got["verified"], got["error"]
    assert got["method"] == "PATCH"
    assert got["target"] == "/200/py-publish?x=1&y=a%20b"
    assert got["body"] == body.encode("utf-8")
    assert got["headers"]["x-order"] == "17"
    assert got["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert got["headers"]["upstash-message-id"] == res.message_id
    assert got["headers"]["upstash-retried"] == "0"


def test_delay_is_kept(client):
    published = time.time()
    res = client.message.publish(
        url=f"{BASE}/200/py-delay", body="later", delay="2s", label="py-label"
    )
    message = client.message.get(res.message_id)
    assert message.message_id == res.message_id
    assert message.not_before >= int(published * 1000) + 2000
    assert message.max_retries == 3
    assert message.label == "py-label"
    [got] = wait_for("/200/py-delay", 1)
    assert got["verified"], got["error"]
    assert got["at"] >= published + 2


def test_retries_then_success(client):
    res = client.message.publish(
        url=f"{BASE}/503-200/py-retry", body="again", retries=2, retry_delay="700"
    )
    got = wait_for("/503-200/py-retry", 2)
    # The message's own retry delay, not the gateway's 200 ms backoff.
    assert got[1]["at"] - got[0]["at"] >= 0.65
    assert [r["headers"]["upstash-retried"] for r in got] == ["0", "1"]
    assert all(r["verified"] for r in got), [r["error"] for r in got]
    assert all(r["headers"]["upstash-message-id"] == res.message_id for r in got)


def test_cancel(client):
    # Due in an hour: still pending when cancelled, however slow the machine.
    res = client.message.publish(url=f"{BASE}/200/py-cancelled", body="no", delay="1h")
    client.message.cancel(res.message_id)
    with pytest.raises(QStashError):
        client.message.get(res.message_id)
    two = [
        client.message.publish(url=f"{BASE}/200/py-cancelled", body="no", delay="1h").message_id
        for _ in range(2)
    ]
    assert client.message.cancel_many(two + [res.message_id]) == 2
    # Nothing left to deliver: the gateway knows none of the three as a message (a pending or a
    # delivered one would be read: --keep-delivered), and each one's last event is CANCELED.
    for message_id in [res.message_id, *two]:
        with pytest.raises(QStashError, match="404"):
            client.message.get(message_id)
        logs = client.log.list(filter={"message_id": message_id}).logs
        assert logs and logs[0].state == LogState.CANCELED, logs
    assert to("/200/py-cancelled") == []


def test_content_based_deduplication(client):
    # The SDK sends "True" for content_based_deduplication=True.
    body = f"same-{time.time()}"
    a = client.message.publish(url=f"{BASE}/200/py-dedup", body=body, content_based_deduplication=True)
    b = client.message.publish(url=f"{BASE}/200/py-dedup", body=body, content_based_deduplication=True)
    assert b.message_id == a.message_id
    assert b.deduplicated
    [got] = wait_for("/200/py-dedup", 1)
    assert got["body"] == body.encode()


def test_dead_letter_read_and_deleted(client):
    res = client.message.publish(url=f"{BASE}/500/py-dead", body="x", retries=0)
    wait_for("/500/py-dead", 1)
    deadline = time.time() + PATIENCE_S
    while True:
        found = [m for m in client.dlq.list().messages if m.message_id == res.message_id]
        if found:
            assert found[0].response_status == 500
            break
        assert time.time() < deadline, "not in the DLQ"
        time.sleep(0.05)
    assert len(to("/500/py-dead")) == 1
    letter = client.dlq.get(found[0].dlq_id)
    assert letter.message_id == res.message_id
    assert letter.response_body == "answer"
    client.dlq.delete(found[0].dlq_id)
    with pytest.raises(QStashError):
        client.dlq.get(found[0].dlq_id)


def test_redacted_fields_delivered_but_shown_redacted(client):
    def hidden(value):
        return "REDACTED:" + hashlib.sha256(value.encode()).hexdigest()

    res = client.message.publish(
        url=f"{BASE}/500/py-redact",
        body="py private body",
        headers={"Authorization": "Bearer py-secret", "X-Plain": "shown"},
        retries=0,
        redact={"body": True, "header": ["Authorization"]},
    )
    [got] = wait_for("/500/py-redact", 1)
    assert got["verified"], got["error"]
    assert got["headers"]["authorization"] == "Bearer py-secret"
    assert got["body"] == b"py private body"
    deadline = time.time() + PATIENCE_S
    while True:
        found = [m for m in client.dlq.list().messages if m.message_id == res.message_id]
        if found:
            break
        assert time.time() < deadline, f"{res.message_id} not in the DLQ"
        time.sleep(0.05)
    letter = client.dlq.get(found[0].dlq_id)
    assert letter.headers["authorization"] == [hidden("Bearer py-secret")]
    assert letter.headers["x-plain"] == ["shown"]
    client.dlq.delete(found[0].dlq_id)


def test_dead_letters_deleted_in_bulk(client):
    ids = []
    for name in ["py-bulk-a", "py-bulk-b"]:
        res = client.message.publish(url=f"{BASE}/500/{name}", body="x", retries=0)
        deadline = time.time() + PATIENCE_S
        while not any(m.message_id == res.message_id for m in client.dlq.list().messages):
            assert time.time() < deadline, "not in the DLQ"
            time.sleep(0.05)
        ids.append(res.message_id)
    # The Python SDK sends the ids as a JSON body; unknown ones are not counted.
    assert client.dlq.delete_many(ids + ["msg_not_a_dead_letter"]) == 2
    left = [m.dlq_id for m in client.dlq.list().messages]
    assert not set(ids) & set(left)
    assert client.dlq.delete_many(ids) == 0


def test_dead_letters_listed_by_filter(client):
    since = int(time.time() * 1000)
    ids = {}
    for path, label in [("404/py-f-a", "py-f-red"), ("500/py-f-b", "py-f-red")]:
        res = client.message.publish(url=f"{BASE}/{path}", body="f", retries=0, label=label)
        deadline = time.time() + PATIENCE_S
        while not any(m.message_id == res.message_id for m in client.dlq.list().messages):
            assert time.time() < deadline, f"{res.message_id} not in the DLQ"
            time.sleep(0.05)
        ids[path] = res.message_id

    def listed(**filter):
        return sorted(m.dlq_id for m in client.dlq.list(filter=filter).messages)

    assert listed(url=f"{BASE}/500/py-f-b") == [ids["500/py-f-b"]]
    assert listed(response_status=404, from_time=since) == [ids["404/py-f-a"]]
    assert listed(label="py-f-red") == sorted(ids.values())
    assert listed(label="py-f-red", to_time=since - 1) == []
    assert listed(message_id=ids["404/py-f-a"]) == [ids["404/py-f-a"]]
    with pytest.raises(QStashError):
        listed(caller_ip="127.0.0.1")
    assert client.dlq.delete_many(list(ids.values())) == 2


def test_refused_destination_and_token(client):
    with pytest.raises(QStashError, match="allow-list"):
        client.message.publish(url="http://127.0.0.2:9/not-allowed", body="x")
    stranger = QStash("not-the-token-0123456789", base_url=GATEWAY_URL)
    with pytest.raises(QStashError):
        stranger.message.publish(url=f"{BASE}/200/py-bad", body="x")


def test_batch(client):
    res = client.message.batch(
        [
            {"url": f"{BASE}/200/py-batch-a", "body": "a", "headers": {"X-N": "1"}},
            {"url": f"{BASE}/200/py-batch-b", "body": "b", "method": "PUT", "delay": "1s"},
        ]
    )
    assert len(res) == 2
    [a] = wait_for("/200/py-batch-a", 1)
    [b] = wait_for("/200/py-batch-b", 1)
    assert a["verified"] and b["verified"], (a["error"], b["error"])
    assert a["headers"]["upstash-message-id"] == res[0].message_id
    assert a["headers"]["x-n"] == "1"
    assert b["headers"]["upstash-message-id"] == res[1].message_id
    assert b["method"] == "PUT"
