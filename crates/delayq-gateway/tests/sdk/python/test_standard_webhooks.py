"""The opt-in Standard Webhooks signature (`delayq gateway --standard-webhooks-secret-file`),
verified by an independent implementation: the Standard Webhooks reference library from PyPI
(`standardwebhooks`, pinned in requirements.txt). Messages are published with the official
QStash SDK; a receiver of this file's own on loopback records each delivery. Started by
../run.sh, which passes the secrets (the gateway runs mid-rotation: a current and a next
secret) and the receiver's port."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

PATIENCE_S = 60


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run tests/sdk/run.sh", returncode=2)
    return value


GATEWAY_URL = env("GATEWAY_URL")
TOKEN = env("GATEWAY_TOKEN")
SECRET = env("STANDARD_WEBHOOKS_SECRET")
NEXT_SECRET = env("STANDARD_WEBHOOKS_NEXT_SECRET")
PORT = int(env("WEBHOOKS_RECEIVER_PORT"))
BASE = f"http://127.0.0.1:{PORT}"

SEEN = []
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Records every request; the n-th request to /PLAN/... gets the n-th status of PLAN
    (e.g. 500-200), the last repeating."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        path = self.path.split("?")[0]
        with LOCK:
            n = sum(1 for r in SEEN if r["target"].split("?")[0] == path)
            SEEN.append({"target": self.path, "headers": dict(self.headers.items()), "body": body})
        plan = [int(s) for s in path.split("/")[1].split("-") if s.isdigit()] or [200]
        self.send_response(plan[min(n, len(plan) - 1)])
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module", autouse=True)
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield
    server.shutdown()


def wait_for(prefix, n):
    deadline = time.time() + PATIENCE_S
    while True:
        with LOCK:
            got = [r for r in SEEN if r["target"].startswith(prefix)]
        if len(got) >= n:
            return got
        assert time.time() < deadline, f"{prefix}: {len(got)} requests, not {n}"
        time.sleep(0.025)


def test_every_attempt_verifies_with_the_reference_library():
    client = QStash(TOKEN, base_url=GATEWAY_URL)
    payload = {"order": 17, "note": "grüße ✓"}
    res = client.message.publish_json(url=f"{BASE}/500-200/sw", body=payload, retries=2)
    attempts = wait_for("/500-200/sw", 2)
    verifier = Webhook(SECRET)
    for got in attempts:
        headers = got["headers"]
        # The library's own check: signature of id.timestamp.body, timestamp within 5 minutes.
        assert verifier.verify(got["body"], headers) == payload
        lower = {k.lower(): v for k, v in headers.items()}
        assert lower["webhook-id"] == res.message_id == lower["upstash-message-id"]
        assert abs(int(lower["webhook-timestamp"]) - time.time()) < 60
        # Mid-rotation: two signatures, space-separated, the current secret's first.
        signatures = lower["webhook-signature"].split(" ")
        assert len(signatures) == 2 and all(s.startswith("v1,") for s in signatures)
        # A receiver holding only the next secret verifies every attempt too.
        assert Webhook(NEXT_SECRET).verify(got["body"], headers) == payload
        # Each signature is one secret's: kept alone, only its own secret verifies it.
        for kept, secret, other in [(0, SECRET, NEXT_SECRET), (1, NEXT_SECRET, SECRET)]:
            alone = {**lower, "webhook-signature": signatures[kept]}
            assert Webhook(secret).verify(got["body"], alone) == payload
            with pytest.raises(WebhookVerificationError):
                Webhook(other).verify(got["body"], alone)
        assert lower.get("upstash-signature"), "the QStash signature is still sent"
    # The same id on both attempts: a receiver can tell a redelivery.
    assert attempts[0]["headers"]["webhook-id"] == attempts[1]["headers"]["webhook-id"]
    # And the verifier is not one that passes anything: another body, id or secret fails.
    first = attempts[0]
    tampered = json.dumps({"order": 18}).encode()
    with pytest.raises(WebhookVerificationError):
        verifier.verify(tampered, first["headers"])
    with pytest.raises(WebhookVerificationError):
        verifier.verify(first["body"], {**first["headers"], "webhook-id": "msg_other"})
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "QUJD" * 8).verify(first["body"], first["headers"])


def test_a_forwarded_webhook_signature_is_replaced():
    client = QStash(TOKEN, base_url=GATEWAY_URL)
    client.message.publish(
        url=f"{BASE}/200/sw-forged",
        body="{}",
        headers={"webhook-signature": "v1,Zm9yZ2Vk", "webhook-id": "msg_forged"},
    )
    [got] = wait_for("/200/sw-forged", 1)
    assert Webhook(SECRET).verify(got["body"], got["headers"]) == {}
    lower = {k.lower(): v for k, v in got["headers"].items()}
    assert lower["webhook-id"] != "msg_forged"
    assert "Zm9yZ2Vk" not in lower["webhook-signature"]
