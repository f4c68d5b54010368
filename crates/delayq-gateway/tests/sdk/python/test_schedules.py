"""Schedules, events and signing keys through the official QStash Python SDK (qstash): a schedule
created, read, listed, paused, resumed and deleted with client.schedule, its occurrences
delivered to a recording receiver on loopback and verified with the SDK's Receiver, and the
signing keys rotated with client.signing_key. Started by ../run.sh (SCHEDULES_RECEIVER_PORT is
this file's own receiver). The key rotation is this run's last change of the keys: run.sh keeps
this file after the others.

The schedules use a 6-field cron (seconds first), a delayq extension: QStash's own crons have 5
fields and fire at most once a minute."""

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from qstash import QStash, Receiver
from qstash.log import LogState
from qstash.errors import QStashError

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
PORT = int(env("SCHEDULES_RECEIVER_PORT"))
BASE = f"http://127.0.0.1:{PORT}"

SEEN = []
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Records every request as it came; answers with the status its path starts with
    (/500/...)."""

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        with LOCK:
            SEEN.append(
                {
                    "method": self.command,
                    "target": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                    "at": time.time(),
                }
            )
        first = self.path.split("/")[1]
        self.send_response(int(first) if first.isdigit() else 200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

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


def verifies(receiver, record):
    try:
        receiver.verify(
            signature=record["headers"].get("upstash-signature", ""),
            body=record["body"].decode("utf-8"),
            url=BASE + record["target"],
        )
        return True
    except QStashError:
        return False


def refused_with(status, call):
    with pytest.raises(QStashError) as err:
        call()
    assert f"status: {status}" in str(err.value)


def test_schedule_lifecycle(client):
    destination = f"{BASE}/200/py-sched?x=1"
    created = time.time()
    schedule_id = client.schedule.create(
        destination=destination,
        cron="*/2 * * * * *",
        schedule_id="py-sched",
        method="PUT",
        body="tick",
        headers={"X-A": "a"},
        retries=1,
        delay=1,
    )
    assert schedule_id == "py-sched"
    schedule = client.schedule.get("py-sched")
    assert schedule.schedule_id == "py-sched"
    assert schedule.cron == "*/2 * * * * *"
    assert schedule.destination == destination
    assert schedule.method == "PUT"
    assert schedule.body == "tick"
    assert schedule.retries == 1
    assert schedule.delay == 1
    assert schedule.paused is False
    assert schedule.headers["x-a"] == ["a"]
    assert schedule.created_at >= int(created * 1000) - 1000
    assert any(s.schedule_id == "py-sched" for s in client.schedule.list())

    got = wait_for("/200/py-sched", 2)
    keys = client.signing_key.get()
    receiver = Receiver(current_signing_key=keys.current, next_signing_key=keys.next)
    ids = set()
    for record in got[:2]:
        assert record["method"] == "PUT"
        assert record["body"] == b"tick"
        assert record["headers"]["x-a"] == "a"
        assert record["headers"]["upstash-schedule-id"] == "py-sched"
        assert verifies(receiver, record)
        assert record["at"] >= created + 1
        ids.add(record["headers"]["upstash-message-id"])
    assert len(ids) == 2, "each occurrence is a message of its own"

    client.schedule.pause("py-sched")
    assert client.schedule.get("py-sched").paused is True
    client.schedule.resume("py-sched")
    assert client.schedule.get("py-sched").paused is False
    client.schedule.delete("py-sched")
    refused_with(404, lambda: client.schedule.get("py-sched"))


def test_schedule_upsert_and_zone(client):
    destination = f"{BASE}/200/py-upsert"
    client.schedule.create(destination=destination, cron="0 0 1 1 *", schedule_id="py-upsert", body="one")
    client.schedule.create(
        destination=destination,
        cron="CRON_TZ=America/New_York 0 12 * * *",
        schedule_id="py-upsert",
        body="two",
        retries=0,
    )
    schedule = client.schedule.get("py-upsert")
    assert schedule.body == "two"
    assert schedule.retries == 0
    assert schedule.cron == "CRON_TZ=America/New_York 0 12 * * *"
    assert schedule.next_schedule_time > time.time() * 1000
    assert [s.schedule_id for s in client.schedule.list()].count("py-upsert") == 1
    client.schedule.delete("py-upsert")


def test_bad_schedules_refused(client):
    destination = f"{BASE}/200/py-bad"
    for cron in ["61 * * * *", "* * *", "CRON_TZ=Mars/Olympus 0 * * * *", "whenever"]:
        refused_with(400, lambda: client.schedule.create(destination=destination, cron=cron))
    refused_with(
        403,
        lambda: client.schedule.create(destination="http://169.254.169.254/x", cron="* * * * *"),
    )
    assert not any(s.destination == destination for s in client.schedule.list())
    refused_with(404, lambda: client.schedule.get("py-none"))
    refused_with(404, lambda: client.schedule.delete("py-none"))
    refused_with(404, lambda: client.schedule.pause("py-none"))
    refused_with(404, lambda: client.schedule.resume("py-none"))


def wait_events(client, message_id, state):
    deadline = time.time() + PATIENCE_S
    while True:
        logs = client.log.list(filter={"message_id": message_id}).logs
        if logs and logs[0].state == state:
            return logs
        assert time.time() < deadline, f"{message_id}: {logs}"
        time.sleep(0.05)


def test_events_with_filters_and_cursor(client):
    a = client.message.publish(url=f"{BASE}/200/py-ev", body="a").message_id
    b = client.message.publish(url=f"{BASE}/500/py-ev-fail", body="b", retries=0).message_id
    delivered = wait_events(client, a, LogState.DELIVERED)
    assert [e.state for e in delivered] == [LogState.DELIVERED, LogState.ACTIVE, LogState.CREATED]
    assert delivered[0].url == f"{BASE}/200/py-ev"
    assert delivered[0].response_status == 200
    failed = wait_events(client, b, LogState.FAILED)
    assert [e.state for e in failed] == [
        LogState.FAILED,
        LogState.ERROR,
        LogState.ACTIVE,
        LogState.CREATED,
    ]
    assert failed[1].response_status == 500

    errors = client.log.list(filter={"message_id": b, "state": LogState.ERROR}).logs
    assert [e.state for e in errors] == [LogState.ERROR]
    both = client.log.list(filter={"message_ids": [a, b]}).logs
    assert len(both) == 7
    created = client.log.list(filter={"url": f"{BASE}/200/py-ev", "state": LogState.CREATED})
    assert [e.message_id for e in created.logs] == [a]
    since = client.log.list(filter={"message_id": a, "from_time": delivered[0].time})
    since_states = [e.state for e in since.logs]
    assert since_states[0] == LogState.DELIVERED and LogState.CREATED not in since_states

    walked = []
    cursor = None
    while len(walked) < 10:
        page = client.log.list(cursor=cursor, count=1, filter={"message_id": a})
        walked.extend(e.state for e in page.logs)
        cursor = page.cursor
        if not cursor:
            break
    assert walked == [LogState.DELIVERED, LogState.ACTIVE, LogState.CREATED]


def test_delivered_message_stays_readable(client):
    res = client.message.publish(url=f"{BASE}/200/py-kept?x=1", body="kept", headers={"X-K": "1"})
    # DELIVERED is written once the message left the index for the kept ones (--keep-delivered).
    wait_events(client, res.message_id, LogState.DELIVERED)
    message = client.message.get(res.message_id)
    assert message.message_id == res.message_id
    assert message.url == f"{BASE}/200/py-kept?x=1"
    assert message.headers["x-k"] == ["1"]
    refused_with(404, lambda: client.message.cancel(res.message_id))


def test_key_rotation_verified_by_the_receiver(client):
    keys = client.signing_key.get()
    assert (keys.current, keys.next) == (CURRENT_KEY, NEXT_KEY)
    rotated = client.signing_key.rotate()
    assert rotated.current == NEXT_KEY
    assert rotated.next not in (CURRENT_KEY, NEXT_KEY) and rotated.next.startswith("sig_")
    again = client.signing_key.get()
    assert (again.current, again.next) == (rotated.current, rotated.next)
    client.message.publish(url=f"{BASE}/200/py-rotated", body="after")
    [record] = wait_for("/200/py-rotated", 1)
    # A receiver given the new keys, and one not yet updated (the old next key is its next).
    assert verifies(Receiver(current_signing_key=rotated.current, next_signing_key=rotated.next), record)
    assert verifies(Receiver(current_signing_key=CURRENT_KEY, next_signing_key=NEXT_KEY), record)
    # The old current key no longer signs.
    assert not verifies(Receiver(current_signing_key=CURRENT_KEY, next_signing_key=CURRENT_KEY), record)
