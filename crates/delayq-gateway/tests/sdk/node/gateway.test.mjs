// The official QStash JS SDK (@upstash/qstash, pinned in package.json) as a client of
// `delayq gateway`: it publishes through the gateway, a recording receiver on loopback verifies
// every delivery with the SDK's own Receiver. Started by ../run.sh, which passes the gateway's
// address, token and keys, the receiver's port and where the SDK is installed.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run tests/sdk/run.sh`);
  return value;
};
const sdk = createRequire(path.join(env("QSTASH_SDK_DIR"), "package.json"))("@upstash/qstash");
const { Client, Receiver } = sdk;

const PATIENCE_MS = 60_000;
const gatewayUrl = env("GATEWAY_URL");
const token = env("GATEWAY_TOKEN");
const currentSigningKey = env("SIGNING_KEY");
const nextSigningKey = env("NEXT_SIGNING_KEY");
const port = Number(env("RECEIVER_PORT"));
const base = `http://127.0.0.1:${port}`;

const client = new Client({ baseUrl: gatewayUrl, token, enableTelemetry: false });
const receiver = new Receiver({ currentSigningKey, nextSigningKey });

// Every request: method, path and query, headers, raw body, when, and whether the SDK's
// Receiver accepted its signature (with the destination as `url`). The n-th request to a path
// /PLAN/... is answered with the n-th status of PLAN (e.g. 500-200), the last one repeating.
const seen = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const body = Buffer.concat(chunks);
    const record = {
      method: req.method,
      target: req.url,
      headers: req.headers,
      body,
      at: Date.now(),
      verified: false,
      error: undefined,
    };
    try {
      record.verified = await receiver.verify({
        signature: req.headers["upstash-signature"] ?? "",
        body: body.toString("utf8"),
        url: base + req.url,
      });
    } catch (err) {
      record.error = String(err);
    }
    const pathOnly = req.url.split("?")[0];
    const n = seen.filter((r) => r.target.split("?")[0] === pathOnly).length;
    seen.push(record);
    const plan = pathOnly.split("/")[1].split("-").map(Number).filter((s) => s > 0);
    const status = plan[Math.min(n, plan.length - 1)] ?? 200;
    res.writeHead(status, { "content-type": "text/plain" });
    res.end("answer");
  });
});
await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
after(() => server.close());

const to = (prefix) => seen.filter((r) => r.target.startsWith(prefix));
async function waitFor(prefix, n) {
  const deadline = Date.now() + PATIENCE_MS;
  while (to(prefix).length < n) {
    if (Date.now() > deadline) {
      throw new Error(`${prefix}: ${to(prefix).length} requests after ${PATIENCE_MS} ms, not ${n}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return to(prefix);
}

test("publish: body byte for byte, forwarded headers, method, query, signature", async () => {
  const body = "héllo, wörld ✓ {\"k\": [1, 2]}\r\n";
  const url = `${base}/200/node-publish?x=1&y=a%20b`;
  const res = await client.publish({
    url,
    body,
    method: "PUT",
    headers: { "X-Order": "17", "Content-Type": "text/plain; charset=utf-8" },
  });
  assert.match(res.messageId, /^msg_/);
  const [got] = await waitFor("/200/node-publish", 1);
  assert.equal(got.verified, true, got.error);
  assert.equal(got.method, "PUT");
  assert.equal(got.target, "/200/node-publish?x=1&y=a%20b");
  assert.deepEqual(got.body, Buffer.from(body, "utf8"));
  assert.equal(got.headers["x-order"], "17");
  assert.equal(got.headers["content-type"], "text/plain; charset=utf-8");
  assert.equal(got.headers["upstash-message-id"], res.messageId);
  assert.equal(got.headers["upstash-retried"], "0");
});

test("the signature is the gateway's: a receiver with other keys refuses it", async () => {
  const res = await client.publishJSON({ url: `${base}/200/node-keys`, body: { a: 1 } });
  const [got] = await waitFor("/200/node-keys", 1);
  assert.equal(got.verified, true, got.error);
  assert.equal(got.headers["content-type"], "application/json");
  assert.equal(got.body.toString(), '{"a":1}');
  assert.equal(got.headers["upstash-message-id"], res.messageId);
  const args = { signature: got.headers["upstash-signature"], body: got.body.toString(), url: base + got.target };
  // The next key alone (as a receiver not yet rotated sees it) still verifies.
  const fallback = new Receiver({ currentSigningKey: "sig_wrong_wrong_wrong", nextSigningKey: currentSigningKey });
  assert.equal(await fallback.verify(args), true);
  const strangers = new Receiver({ currentSigningKey: "sig_wrong_1", nextSigningKey: "sig_wrong_2" });
  await assert.rejects(strangers.verify(args));
  await assert.rejects(receiver.verify({ ...args, body: args.body + " " }));
  await assert.rejects(receiver.verify({ ...args, url: `${base}/other` }));
});

test("delay: delivered not before it", async () => {
  const published = Date.now();
  const res = await client.publish({ url: `${base}/200/node-delay`, body: "later", delay: 2, label: "node-label" });
  const message = await client.messages.get(res.messageId);
  assert.equal(message.messageId, res.messageId);
  assert.equal(message.label, "node-label");
  assert.ok(message.notBefore >= published + 2000, JSON.stringify(message));
  const [got] = await waitFor("/200/node-delay", 1);
  assert.equal(got.verified, true, got.error);
  assert.ok(got.at >= published + 2000, `${got.at - published} ms after publishing`);
});

test("retries: each attempt signed afresh, Upstash-Retried counts", async () => {
  const res = await client.publish({
    url: `${base}/500-502-200/node-retry`,
    body: "again",
    retries: 3,
    retryDelay: "600 * (1 + retried)",
  });
  const got = await waitFor("/500-502-200/node-retry", 3);
  // The message's own retry delay (600 ms, then 1200 ms), not the gateway's 200 ms backoff.
  assert.ok(got[1].at - got[0].at >= 550, `first retry after ${got[1].at - got[0].at} ms`);
  assert.ok(got[2].at - got[1].at >= 1150, `second retry after ${got[2].at - got[1].at} ms`);
  assert.deepEqual(got.map((r) => r.headers["upstash-retried"]), ["0", "1", "2"]);
  assert.ok(got.every((r) => r.verified), got.map((r) => r.error).join());
  assert.ok(got.every((r) => r.headers["upstash-message-id"] === res.messageId));
  // Succeeded on the third: no fourth attempt (a message due 2 s later has arrived
  // meanwhile), and it is not a dead letter.
  await client.publish({ url: `${base}/200/node-retry-marker`, body: "m", delay: 2 });
  await waitFor("/200/node-retry-marker", 1);
  assert.equal(to("/500-502-200/node-retry").length, 3);
  const dlq = await client.dlq.listMessages();
  assert.ok(!dlq.messages.some((m) => m.messageId === res.messageId));
});

async function waitDead(messageId) {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const dlq = await client.dlq.listMessages();
    const found = dlq.messages.find((m) => m.messageId === messageId);
    if (found) return found;
    assert.ok(Date.now() < deadline, `${messageId} not in the DLQ`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("retries used up: a dead letter, retried from the DLQ", async () => {
  const res = await client.publish({ url: `${base}/500-500-200/node-dead`, body: "x", retries: 1 });
  await waitFor("/500-500-200/node-dead", 2);
  const dead = await waitDead(res.messageId);
  assert.equal(dead.responseStatus, 500);
  assert.equal(dead.dlqId, res.messageId);
  assert.equal(to("/500-500-200/node-dead").length, 2);
  const retried = await client.dlq.retry(dead.dlqId);
  assert.deepEqual(retried.responses.map((r) => r.messageId), [res.messageId]);
  const got = await waitFor("/500-500-200/node-dead", 3);
  assert.equal(got[2].headers["upstash-retried"], "0");
  assert.equal(got[2].verified, true, got[2].error);
});

test("redact: delivered as sent, shown as REDACTED:<sha256> by the DLQ", async () => {
  const { createHash } = await import("node:crypto");
  const hidden = (v) => `REDACTED:${createHash("sha256").update(v).digest("hex")}`;
  const res = await client.publish({
    url: `${base}/500/node-redact`,
    body: "node private body",
    headers: { Authorization: "Bearer node-secret", "X-Plain": "shown" },
    retries: 0,
    redact: { body: true, header: ["Authorization"] },
  });
  const [got] = await waitFor("/500/node-redact", 1);
  assert.equal(got.verified, true, got.error);
  assert.equal(got.headers["authorization"], "Bearer node-secret");
  assert.equal(got.body.toString(), "node private body");
  const dead = await waitDead(res.messageId);
  assert.deepEqual(dead.header["authorization"], [hidden("Bearer node-secret")]);
  assert.deepEqual(dead.header["x-plain"], ["shown"]);
  assert.ok(!JSON.stringify(dead).includes("node-secret"));
  await client.dlq.delete(dead.dlqId);
});

test("a dead letter deleted", async () => {
  const res = await client.publish({ url: `${base}/500/node-deleted`, body: "x", retries: 0 });
  const dead = await waitDead(res.messageId);
  await client.dlq.delete(dead.dlqId);
  const dlq = await client.dlq.listMessages();
  assert.ok(!dlq.messages.some((m) => m.messageId === res.messageId));
});

test("dead letters deleted in bulk: ids in the query, unknown ones not counted", async () => {
  const ids = [];
  for (const name of ["node-bulk-a", "node-bulk-b"]) {
    const res = await client.publish({ url: `${base}/500/${name}`, body: "x", retries: 0 });
    ids.push((await waitDead(res.messageId)).dlqId);
  }
  const deleted = await client.dlq.delete([...ids, "msg_not_a_dead_letter"]);
  assert.equal(deleted.deleted, 2);
  const dlq = await client.dlq.listMessages();
  assert.ok(!dlq.messages.some((m) => ids.includes(m.dlqId)));
  // A bad filter is refused (400) rather than ignored.
  await assert.rejects(client.dlq.delete({ filter: { callerIp: "127.0.0.1" } }), (err) => err.status === 400);
});

test("DLQ filters: listed, deleted and retried by filter", async () => {
  const since = new Date();
  const published = {};
  for (const [name, label] of [["404/node-f-a", "node-f-red"], ["500/node-f-b", "node-f-blue"], ["500/node-f-c", "node-f-red"]]) {
    const res = await client.publish({ url: `${base}/${name}`, body: "f", retries: 0, label });
    published[name] = (await waitDead(res.messageId)).dlqId;
  }
  const ids = (list) => list.messages.map((m) => m.dlqId).sort();
  const mine = [published["404/node-f-a"], published["500/node-f-b"], published["500/node-f-c"]].sort();
  // Filters: one value, several (any matches), several filters (all match), dates.
  assert.deepEqual(ids(await client.dlq.listMessages({ filter: { url: `${base}/500/node-f-b` } })), [published["500/node-f-b"]]);
  assert.deepEqual(ids(await client.dlq.listMessages({ filter: { responseStatus: 404, fromDate: since } })), [published["404/node-f-a"]]);
  assert.deepEqual(ids(await client.dlq.listMessages({ filter: { label: ["node-f-red", "node-f-blue"] } })), mine);
  assert.deepEqual(ids(await client.dlq.listMessages({ filter: { label: "node-f-red", responseStatus: 500 } })), [published["500/node-f-c"]]);
  assert.deepEqual(ids(await client.dlq.listMessages({ dlqIds: [published["500/node-f-c"]] })), [published["500/node-f-c"]]);
  await assert.rejects(client.dlq.listMessages({ filter: { callerIp: "127.0.0.1" } }), (err) => err.status === 400);
  // Retry by filter: the 404 one is delivered again (and dead again).
  const retried = await client.dlq.retry({ filter: { label: "node-f-red", responseStatus: 404 } });
  assert.deepEqual(retried.responses.map((r) => r.messageId), [published["404/node-f-a"]]);
  const again = await waitFor("/404/node-f-a", 2);
  assert.equal(again[1].verified, true, again[1].error);
  await waitDead(published["404/node-f-a"]);
  // Delete by filter, one at a time, following the cursor as the SDK's docs do.
  let cursor;
  let deleted = 0;
  do {
    const result = await client.dlq.delete({ filter: { label: "node-f-red" }, count: 1, cursor });
    deleted += result.deleted;
    cursor = result.cursor;
  } while (cursor);
  assert.equal(deleted, 2);
  const left = ids(await client.dlq.listMessages({ filter: { label: ["node-f-red", "node-f-blue"] } }));
  assert.deepEqual(left, [published["500/node-f-b"]]);
  await client.dlq.delete([published["500/node-f-b"]]);
});

test("cancel: a cancelled message is never delivered", async () => {
  // Due in an hour: still pending when cancelled, however slow the machine.
  const res = await client.publish({ url: `${base}/200/node-cancelled`, body: "no", delay: 3600 });
  await client.messages.cancel(res.messageId);
  await assert.rejects(client.messages.get(res.messageId));
  const two = [
    await client.publish({ url: `${base}/200/node-cancelled`, body: "no", delay: 3600 }),
    await client.publish({ url: `${base}/200/node-cancelled`, body: "no", delay: 3600 }),
  ];
  const many = await client.messages.cancel(two.map((r) => r.messageId));
  assert.equal(many.cancelled, 2);
  // Nothing left to deliver: the gateway knows none of the three as a message (a pending or a
  // delivered one would be read: --keep-delivered), and each one's last event is CANCELED.
  for (const id of [res.messageId, ...two.map((r) => r.messageId)]) {
    await assert.rejects(client.messages.get(id), (err) => err.status === 404);
    const { logs } = await client.logs({ filter: { messageId: id } });
    assert.equal(logs[0]?.state, "CANCELED", JSON.stringify(logs));
  }
  assert.equal(to("/200/node-cancelled").length, 0);
});

test("deduplication id: one message, the first id", async () => {
  const id = `node-${Date.now()}`;
  const a = await client.publish({ url: `${base}/200/node-dedup2`, body: "1", deduplicationId: id });
  const b = await client.publish({ url: `${base}/200/node-dedup2`, body: "2", deduplicationId: id });
  assert.equal(b.messageId, a.messageId);
  assert.equal(b.deduplicated, true);
  const [got] = await waitFor("/200/node-dedup2", 1);
  assert.equal(got.body.toString(), "1");
});

test("bad input: the SDK gets the gateway's error", async () => {
  await assert.rejects(
    client.publish({ url: "http://127.0.0.2:9/not-allowed", body: "x" }),
    (err) => /allow-list/.test(String(err)),
  );
  await assert.rejects(client.publish({ url: `${base}/200/node-bad`, body: "x", delay: "soon" }));
  const stranger = new Client({ baseUrl: gatewayUrl, token: "not-the-token-0123456789", enableTelemetry: false });
  await assert.rejects(stranger.publish({ url: `${base}/200/node-bad`, body: "x" }), (err) => /401|token/.test(String(err)));
});

test("batch: every message delivered, answers in order", async () => {
  const res = await client.batch([
    { url: `${base}/200/node-batch-a`, body: "a", headers: { "X-N": "1" } },
    { url: `${base}/200/node-batch-b`, body: "b", method: "PUT", delay: 1 },
  ]);
  assert.equal(res.length, 2);
  assert.match(res[0].messageId, /^msg_/);
  const [a] = await waitFor("/200/node-batch-a", 1);
  const [b] = await waitFor("/200/node-batch-b", 1);
  assert.ok(a.verified && b.verified, `${a.error} ${b.error}`);
  assert.equal(a.headers["upstash-message-id"], res[0].messageId);
  assert.equal(a.headers["x-n"], "1");
  assert.equal(b.headers["upstash-message-id"], res[1].messageId);
  assert.equal(b.method, "PUT");
  assert.equal(b.body.toString(), "b");
});
