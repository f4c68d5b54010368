#!/usr/bin/env python3
"""The gateway's fault run (issue 37): two `delayq gateway` processes on one throwaway Redis
and one queue, one of them killed with SIGKILL and started again every few seconds (in turn)
for the whole run, while N messages are published through both over plain HTTP and delivered
to a loopback receiver that answers 500 to about 10% of the requests.

At the end every published message must have been answered 200 at least once, or be a dead
letter (`GET /v2/dlq`); a message that is neither is lost and the run exits 1. Duplicates (a
message answered 200 more than once: at-least-once delivery) are counted, with the check that
every such redelivery carried the same Upstash-Message-Id.

Standard-library Python 3 only; everything on loopback. Not a step of scripts/test-all.sh
(minutes long); run it by hand from the repository's root:

    nice -n 19 cargo build -p delayq-cli --bin delayq
    nice -n 19 python3 crates/delayq-gateway/tests/kill/run.py --messages 50000
"""
import argparse
import http.client
import http.server
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.."))


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_secret(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text + "\n")


class Recorder:
    """Every request the receiver answered: per message id, (Upstash-Retried, status, seq)."""

    def __init__(self, fail_rate, seed):
        self.lock = threading.Lock()
        self.fail_rate = fail_rate
        self.random = random.Random(seed)
        self.attempts = {}
        self.delivered = set()
        self.requests = 0
        self.answered_500 = 0
        self.retried_attempts = 0
        self.no_id = 0

    def answer(self, message_id, retried, seq):
        with self.lock:
            self.requests += 1
            fail = self.random.random() < self.fail_rate
            status = 500 if fail else 200
            if message_id is None:
                self.no_id += 1
                return 400
            self.attempts.setdefault(message_id, []).append((retried, status, seq))
            if retried and retried != "0":
                self.retried_attempts += 1
            if fail:
                self.answered_500 += 1
            else:
                self.delivered.add(message_id)
            return status

    def delivered_count(self, ids):
        with self.lock:
            return sum(1 for i in ids if i in self.delivered)

    def undelivered(self, ids):
        with self.lock:
            return [i for i in ids if i not in self.delivered]


def receiver(recorder):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            seq = None
            if body.startswith(b"seq="):
                seq = int(body[4:].decode())
            status = recorder.answer(
                self.headers.get("Upstash-Message-Id"), self.headers.get("Upstash-Retried"), seq
            )
            reply = b"ok" if status == 200 else b"try again"
            self.send_response(status)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A killed gateway resets its connections: expected here, not worth a traceback.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Gateways:
    """The two gateway processes: started, killed (SIGKILL) and started again."""

    def __init__(self, args, work, redis_port, receiver_url):
        self.work = work
        self.ports = [free_port(), free_port()]
        self.procs = [None, None]
        self.logs = [open(os.path.join(work, f"gateway-{i}.log"), "ab") for i in range(2)]
        self.binary = args.binary
        self.common = [
            "--url", f"redis://127.0.0.1:{redis_port}", "gateway",
            "--token-file", os.path.join(work, "token"),
            "--signing-key-file", os.path.join(work, "signing.key"),
            "--queue", "kill-run",
            "--allow-destination", receiver_url,
            "--retry-first-wait", "100ms", "--retry-max-wait", "1s",
            "--request-timeout", "5s",
        ]
        self.kills = 0

    def start(self, i):
        cmd = ["nice", "-n", "19", self.binary] + self.common[:3]
        cmd += ["--listen", f"127.0.0.1:{self.ports[i]}"] + self.common[3:]
        self.procs[i] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self.logs[i], stderr=self.logs[i],
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.procs[i].poll() is not None:
                raise RuntimeError(f"gateway {i} exited with {self.procs[i].returncode}; "
                                   f"see {self.work}/gateway-{i}.log")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.ports[i], timeout=2)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"gateway {i} did not answer within 60 s")

    def kill_and_restart(self, i):
        proc = self.procs[i]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.kills += 1
        self.start(i)

    def stop(self):
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        for out in self.logs:
            out.close()


class Publisher:
    """Publishes messages seq = start, start + step, ... over one keep-alive connection,
    moving to the other gateway when its connection breaks (a kill) and sending the message
    again: a message whose answer was lost may so be published twice, under two ids."""

    def __init__(self, gateways, token, receiver_url, args, results):
        self.gateways = gateways
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "text/plain",
            "Upstash-Retries": str(args.retries),
        }
        self.dedup = args.dedup
        self.path = "/v2/publish/" + receiver_url + "hook"
        self.results = results

    def run(self, first, step, count, stop):
        which = first % 2
        conn = None
        seq = first
        while seq < count and not stop.is_set():
            if conn is None:
                conn = http.client.HTTPConnection(
                    "127.0.0.1", self.gateways.ports[which], timeout=15)
            try:
                headers = dict(self.headers)
                if self.dedup:
                    # A resend is answered 202 with the first message's id.
                    headers["Upstash-Deduplication-Id"] = f"kill-run-{seq}"
                conn.request("POST", self.path, body=f"seq={seq}".encode(), headers=headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = None
                which = 1 - which
                self.results.note_retry()
                time.sleep(0.05)
                continue
            if response.status >= 500:
                self.results.note_retry()
                time.sleep(0.05)
                continue
            if response.status != 201 and not (self.dedup and response.status == 202):
                raise RuntimeError(f"publish of {seq} answered {response.status}: {body[:200]!r}")
            answer = json.loads(body)
            self.results.add(seq, answer["messageId"], answer.get("deduplicated", False))
            seq += step
        if conn is not None:
            conn.close()


class Published:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = {}
        self.seq_of = {}
        self.retries = 0
        self.deduplicated = set()

    def add(self, seq, message_id, deduplicated):
        with self.lock:
            if deduplicated:
                self.deduplicated.add(message_id)
            self.ids.setdefault(seq, []).append(message_id)
            self.seq_of[message_id] = seq

    def note_retry(self):
        with self.lock:
            self.retries += 1

    def all_ids(self):
        with self.lock:
            return list(self.seq_of)


def dlq_ids(port, token):
    """Every dead letter's message id, page by page."""
    ids = set()
    cursor = None
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while True:
            query = "count=100" + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
            conn.request("GET", f"/v2/dlq?{query}", headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise OSError(f"GET /v2/dlq answered {response.status}: {body[:200]!r}")
            page = json.loads(body)
            ids.update(m["messageId"] for m in page["messages"])
            cursor = page.get("cursor")
            if not cursor:
                return ids
    finally:
        conn.close()


def killer(gateways, every, stop, stopped):
    which = 0
    try:
        while not stop.wait(every):
            gateways.kill_and_restart(which)
            which = 1 - which
    except Exception as err:  # noqa: BLE001 - reported by the main thread
        stopped.append(err)


def start_redis(work):
    port = free_port()
    proc = subprocess.Popen(
        ["nice", "-n", "19", "redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", work],
        stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, "redis.log"), "wb"),
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def wait_accounted(args, published, recorder, gateways, token, started):
    """Waits until every published message is delivered or a dead letter, or the deadline."""
    deadline = time.monotonic() + args.deadline
    dead = set()
    last_dlq = 0.0
    last_note = 0.0
    while True:
        ids = published.all_ids()
        missing = recorder.undelivered(ids)
        now = time.monotonic()
        if missing and (now - last_dlq > 5 or len(missing) < 50):
            for port in gateways.ports:
                try:
                    dead = dlq_ids(port, token)
                    break
                except OSError:
                    continue
            last_dlq = now
        lost = [i for i in missing if i not in dead]
        if now - last_note > 5:
            log(f"waiting: {len(ids) - len(missing)} delivered, {len(missing) - len(lost)} dead, "
                f"{len(lost)} not yet, {gateways.kills} kills, {now - started:.0f} s")
            last_note = now
        if not lost or now > deadline:
            return missing, dead, lost
        time.sleep(1)


def report(args, published, recorder, dead, missing, lost, kills, wall):
    ids = published.all_ids()
    with recorder.lock:
        attempts = {k: list(v) for k, v in recorder.attempts.items()}
    duplicates = {i: a for i, a in attempts.items() if sum(1 for _, s, _ in a if s == 200) > 1}
    # A redelivery is the same message id by construction of the count; check that each
    # duplicate's attempts carry one sequence number, the one published under that id.
    mismatched = [i for i, a in duplicates.items()
                  if {seq for _, _, seq in a} != {published.seq_of.get(i)}]
    unknown = [i for i in attempts if i not in published.seq_of]
    # A publish whose answer a kill cut off was sent again: its first copy, stored, has an id
    # the client never saw and is delivered too (publishing is at least once).
    ids_of_seq = {}
    for i, a in attempts.items():
        for _, status, seq in a:
            if status == 200:
                ids_of_seq.setdefault(seq, set()).add(i)
    twice = sum(1 for v in ids_of_seq.values() if len(v) > 1)
    seqs_done = sum(1 for v in published.ids.values()
                    if any(i in recorder.delivered or i in dead for i in v))
    print(f"published:                 {len(ids)} messages ({len(published.ids)} of "
          f"{args.messages} sequence numbers; {len(published.deduplicated)} answered 202 "
          f"deduplicated to a first publish cut off by a kill)")
    print(f"publish requests retried:  {published.retries}")
    print(f"delivered (a 200):         {len(ids) - len(missing)}")
    print(f"in the DLQ:                {len(missing) - len(lost)}")
    print(f"lost (neither):            {len(lost)}")
    print(f"duplicates (200 twice+):   {len(duplicates)} messages, "
          f"{sum(sum(1 for _, s, _ in a if s == 200) - 1 for a in duplicates.values())} extra "
          f"200s; same Upstash-Message-Id and body: {len(duplicates) - len(mismatched)} of "
          f"{len(duplicates)}")
    print(f"receiver requests:         {recorder.requests} ({recorder.answered_500} answered "
          f"500; {recorder.retried_attempts} attempts with Upstash-Retried > 0)")
    print(f"unanswered publishes:      {len(unknown)} message ids delivered that no publish "
          f"answer named (the publish was cut off by a kill and sent again); "
          f"{twice} sequence numbers delivered under two ids")
    print(f"sequence numbers delivered or dead: {seqs_done} of {args.messages}")
    print(f"kills (SIGKILL + restart): {kills}")
    print(f"wall time:                 {wall:.1f} s")
    if lost:
        print(f"lost message ids (first 20): {lost[:20]}")
        print(f"lost ids named by a 202 (deduplicated) answer: "
              f"{sum(1 for i in lost if i in published.deduplicated)} of {len(lost)}")
    if recorder.no_id:
        print(f"requests without Upstash-Message-Id: {recorder.no_id}")
    failed = bool(lost) or bool(mismatched) or recorder.no_id > 0
    failed = failed or len(published.ids) != args.messages or seqs_done != args.messages
    return 1 if failed else 0


def run(args, work):
    started = time.monotonic()
    token = "tok_" + secrets.token_hex(16)
    write_secret(os.path.join(work, "token"), token)
    write_secret(os.path.join(work, "signing.key"), "sig_" + secrets.token_urlsafe(24))
    redis, redis_port = start_redis(work)
    gateways = None
    stop = threading.Event()
    try:
        recorder = Recorder(args.fail_rate, args.seed)
        server = receiver(recorder)
        receiver_url = f"http://127.0.0.1:{server.server_address[1]}/"
        gateways = Gateways(args, work, redis_port, receiver_url)
        gateways.start(0)
        gateways.start(1)
        log(f"redis on {redis_port}, gateways on {gateways.ports}, receiver {receiver_url}")
        killer_errors = []
        kill_thread = threading.Thread(
            target=killer, args=(gateways, args.kill_every, stop, killer_errors), daemon=True)
        kill_thread.start()
        published = Published()
        publisher = Publisher(gateways, token, receiver_url, args, published)
        errors = []

        def publish(first):
            try:
                publisher.run(first, args.clients, args.messages, stop)
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append(err)
                stop.set()

        threads = [threading.Thread(target=publish, args=(i,), daemon=True)
                   for i in range(args.clients)]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            time.sleep(5)
            log(f"published {len(published.seq_of)}, delivered "
                f"{len(recorder.delivered)}, kills {gateways.kills}")
        if errors:
            raise errors[0]
        log(f"published {len(published.seq_of)} in {time.monotonic() - started:.1f} s")
        missing, dead, lost = wait_accounted(args, published, recorder, gateways, token, started)
        stop.set()
        kill_thread.join()
        if killer_errors:
            raise killer_errors[0]
        # Late redeliveries (a killed process's in-flight message given back) still count.
        time.sleep(args.settle)
        server.shutdown()
        return report(args, published, recorder, dead, missing, lost, gateways.kills,
                      time.monotonic() - started)
    finally:
        stop.set()
        if gateways is not None:
            gateways.stop()
        redis.send_signal(signal.SIGKILL)
        redis.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=8, help="publishing threads")
    parser.add_argument("--retries", type=int, default=5, help="Upstash-Retries of each message")
    parser.add_argument("--fail-rate", type=float, default=0.10, help="share of 500 answers")
    parser.add_argument("--kill-every", type=float, default=4.0, help="seconds between kills")
    parser.add_argument("--deadline", type=float, default=600.0,
                        help="seconds to wait after publishing for every message's outcome")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds to keep recording once every message is accounted for")
    parser.add_argument("--dedup", action="store_true",
                        help="send each message with an Upstash-Deduplication-Id of its own")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/debug/delayq"))
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary} missing: nice -n 19 cargo build -p delayq-cli --bin delayq")
    if shutil.which("redis-server") is None:
        sys.exit("redis-server missing (scripts/lib.sh ensure_redis installs it)")

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    work = tempfile.mkdtemp(prefix="delayq-kill-")
    status = 1
    try:
        status = run(args, work)
    finally:
        if status != 0 or args.keep:
            for name in sorted(os.listdir(work)):
                if name.endswith(".log") and status != 0:
                    with open(os.path.join(work, name), "rb") as src:
                        tail = src.read()[-3000:].decode(errors="replace")
                    log(f"tail of {name}:\n{tail}")
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
