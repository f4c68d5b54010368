// Callbacks, queues and flow control through the official QStash JS SDK (@upstash/qstash) and
// `delayq gateway`: a recording receiver of its own on loopback (RECEIVER_PORT) verifies every
// request with the SDK's Receiver and measures how many deliveries of a path run at once.
// Started by ../run.sh.
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
const port = Number(env("RECEIVER_PORT"));
const base = `http://127.0.0.1:${port}`;
const client = new Client({ baseUrl: env("GATEWAY_URL"), token: env("GATEWAY_TOKEN"), enableTelemetry: false });
const receiver = new Receiver({
  currentSigningKey: env("SIGNING_KEY"),
  nextSigningKey: env("NEXT_SIGNING_KEY"),
});

// Every request is recorded with its signature's check. A path /PLAN/... answers the n-th
// request with PLAN's n-th status (500-200); /slowMS/... answers 200 after MS ms, and counts
// the requests under way to the path's second segment (`running`, `peak`).
const seen = [];
const running = new Map();
const peak = new Map();
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const body = Buffer.concat(chunks);
    const record = { method: req.method, target: req.url, headers: req.headers, body, start: Date.now(), verified: false };
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
    const [, first, group] = pathOnly.split("/");
    const n = seen.filter((r) => r.target.split("?")[0] === pathOnly).length;
    seen.push(record);
    let status = 200;
    if (first.startsWith("slow")) {
      running.set(group, (running.get(group) ?? 0) + 1);
      peak.set(group, Math.max(peak.get(group) ?? 0, running.get(group)));
      await new Promise((r) => setTimeout(r, Number(first.slice(4))));
      running.set(group, running.get(group) - 1);
    } else {
      const plan = first.split("-").map(Number).filter((s) => s > 0);
      status = plan[Math.min(n, plan.length - 1)] ?? 200;
    }
    record.end = Date.now();
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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("callback: QStash's callback body after delivery, signed for the callback URL", async () => {
  const res = await client.publish({
    url: `${base}/200/node-cb-source`,
    body: "source body",
    callback: `${base}/200/node-cb/`,
    retries: 2,
  });
  const [cb] = await waitFor("/200/node-cb/", 1);
  assert.equal(cb.verified, true, cb.error);
  const body = JSON.parse(cb.body.toString());
  assert.equal(body.status, 200);
  assert.equal(body.sourceMessageId, res.messageId);
  assert.equal(Buffer.from(body.body, "base64").toString(), "answer");
  assert.equal(Buffer.from(body.sourceBody, "base64").toString(), "source body");
  assert.equal(body.url, `${base}/200/node-cb-source`);
  assert.equal(body.retried, 0);
  assert.equal(body.maxRetries, 2);
  assert.equal(body.dlqId, undefined);
  assert.notEqual(cb.headers["upstash-message-id"], res.messageId);
});

test("failure callback: after the last retry, with the dlqId and the last answer", async () => {
  const res = await client.publish({
    url: `${base}/500/node-fail`,
    body: "x",
    retries: 1,
    failureCallback: `${base}/200/node-fcb`,
  });
  const [cb] = await waitFor("/200/node-fcb", 1);
  assert.equal(cb.verified, true, cb.error);
  assert.equal(to("/500/node-fail").length, 2);
  const body = JSON.parse(cb.body.toString());
  assert.equal(body.status, 500);
  assert.equal(body.dlqId, res.messageId);
  assert.equal(body.retried, 1);
  assert.equal(Buffer.from(body.body, "base64").toString(), "answer");
  const dead = await client.dlq.listMessages();
  const letter = dead.messages.find((m) => m.messageId === res.messageId);
  assert.equal(letter.responseStatus, 500);
  assert.equal(letter.responseBody, "answer");
});

test("callback outside the allow-list: refused, nothing delivered", async () => {
  await assert.rejects(
    client.publish({ url: `${base}/200/node-cb-refused`, body: "x", callback: "http://127.0.0.2:1/cb" }),
    /allow-list/,
  );
  await sleep(300);
  assert.equal(to("/200/node-cb-refused").length, 0);
});
