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
// request with PLAN's n-th status (500-200); /slowMS/... answers 200 after MS ms, and
// /gate/... once the test opens the path's second segment (`opened`); both count the requests
// under way to that segment (`running`, `peak`).
const seen = [];
const running = new Map();
const peak = new Map();
const opened = new Set();
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
    if (first.startsWith("slow") || first === "gate") {
      running.set(group, (running.get(group) ?? 0) + 1);
      peak.set(group, Math.max(peak.get(group) ?? 0, running.get(group)));
      if (first === "gate") {
        while (!opened.has(group)) await new Promise((r) => setTimeout(r, 10));
      } else {
        await new Promise((r) => setTimeout(r, Number(first.slice(4))));
      }
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
// Waits until n requests of a /gate/ group are under way at once.
async function waitRunning(group, n) {
  const deadline = Date.now() + PATIENCE_MS;
  while ((running.get(group) ?? 0) < n) {
    if (Date.now() > deadline) throw new Error(`${group}: ${running.get(group) ?? 0} under way, not ${n}`);
    await sleep(20);
  }
}

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

const byStart = (records) => [...records].sort((a, b) => a.start - b.start);

test("queues: FIFO one at a time with parallelism 1, paused then resumed", async () => {
  const queue = client.queue({ queueName: "node-fifo" });
  await queue.upsert({ parallelism: 1, paused: true });
  const ids = [];
  for (let i = 0; i < 6; i++) {
    const res = await queue.enqueue({ url: `${base}/slow100/node-fifo/${i}`, body: `m${i}` });
    ids.push(res.messageId);
    await sleep(3);
  }
  await sleep(800);
  assert.equal(to("/slow100/node-fifo/").length, 0);
  const paused = await queue.get();
  assert.equal(paused.name, "node-fifo");
  assert.equal(paused.paused, true);
  assert.equal(paused.parallelism, 1);
  assert.equal(paused.lag, 6);
  await queue.resume();
  await waitFor("/slow100/node-fifo/", 6);
  const calls = byStart(to("/slow100/node-fifo/"));
  assert.deepEqual(calls.map((c) => c.target), [0, 1, 2, 3, 4, 5].map((i) => `/slow100/node-fifo/${i}`));
  assert.deepEqual(calls.map((c) => c.headers["upstash-message-id"]), ids);
  for (const c of calls) assert.equal(c.verified, true, c.error);
  assert.equal(peak.get("node-fifo"), 1);
  const names = (await client.queue().list()).map((q) => q.name);
  assert.ok(names.includes("node-fifo"), names.join());
  const deadline = Date.now() + PATIENCE_MS;
  while ((await queue.get()).lag > 0 && Date.now() < deadline) await sleep(50);
  await queue.delete();
  await assert.rejects(queue.get());
});

test("queues: parallelism 2 caps the deliveries under way", async () => {
  const queue = client.queue({ queueName: "node-two" });
  await queue.upsert({ parallelism: 2, paused: true });
  for (let i = 0; i < 8; i++) await queue.enqueue({ url: `${base}/gate/node-two/${i}`, body: "p" });
  await queue.resume();
  // Held at the receiver until two are under way: the parallelism is seen used whatever the
  // machine's speed (timed answers alone may each end before the next starts).
  await waitRunning("node-two", 2);
  opened.add("node-two");
  await waitFor("/gate/node-two/", 8);
  await sleep(400);
  assert.equal(peak.get("node-two"), 2);
});

test("queues: a bad queue name or parallelism is refused, nothing stored", async () => {
  await assert.rejects(client.queue({ queueName: "bad*name" }).enqueue({ url: `${base}/200/node-q-bad`, body: "x" }), /queue name/);
  await assert.rejects(client.queue({ queueName: "node-p0" }).upsert({ parallelism: 0 }), /parallelism/);
  const names = (await client.queue().list()).map((q) => q.name);
  assert.ok(!names.includes("node-p0") && !names.includes("bad*name"), names.join());
  await sleep(300);
  assert.equal(to("/200/node-q-bad").length, 0);
});

test("flow control: parallelism 1 per key, observed at the receiver", async () => {
  for (let i = 0; i < 5; i++) {
    await client.publish({ url: `${base}/slow200/node-fc-a/${i}`, body: "a", flowControl: { key: "node-a", parallelism: 1 } });
  }
  const got = await waitFor("/slow200/node-fc-a/", 5);
  await sleep(300);
  for (const c of got) assert.equal(c.verified, true, c.error);
  assert.equal(peak.get("node-fc-a"), 1);
});

test("flow control: rate per period, observed at the receiver", async () => {
  // All six due at one instant, so that the limit alone spreads their starts.
  const dueSecs = Math.floor(Date.now() / 1000) + 2;
  for (let i = 0; i < 6; i++) {
    await client.publish({
      url: `${base}/200/node-fc-rate/${i}`,
      body: "r",
      notBefore: dueSecs,
      flowControl: { key: "node-r", rate: 2, period: "1s" },
    });
  }
  const calls = byStart(await waitFor("/200/node-fc-rate/", 6));
  // Two per second, spread: the limit grants start k (from 0) no sooner than kT - T/2 after
  // the due time (T = 500 ms; 2 ms less for rounding), and the receiver sees each request
  // after its grant: lower bounds that hold whatever the machine's load (differences of the
  // receiver's times would not: a late first request shortens them).
  const due = dueSecs * 1000;
  const seenAt = calls.map((c) => c.start - due);
  assert.ok(seenAt[0] >= 0, `${seenAt}`);
  for (let k = 1; k < calls.length; k++) {
    assert.ok(seenAt[k] >= k * 500 - 250 - 2, `start ${k}: ${seenAt}`);
  }
});

test("flow control: the values read back; bad ones refused, nothing delivered", async () => {
  const res = await client.publish({
    url: `${base}/200/node-fc-shown`,
    body: "s",
    // Still pending when read and cancelled below, however slow the machine.
    delay: 3600,
    flowControl: { key: "node-s", parallelism: 3, rate: 5, period: "1m" },
  });
  const message = await client.messages.get(res.messageId);
  assert.equal(message.flowControlKey, "node-s");
  assert.equal(message.parallelism, 3);
  assert.equal(message.rate, 5);
  assert.equal(message.period, 60);
  await client.messages.cancel(res.messageId);
  await assert.rejects(
    client.publish({ url: `${base}/200/node-fc-bad`, body: "x", flowControl: { key: "k", parallelism: 0 } }),
    /Flow-Control-Value/,
  );
  await assert.rejects(
    client.publish({ url: `${base}/200/node-fc-bad`, body: "x", flowControl: { key: "k", rate: 1, period: "8d" } }),
    /Flow-Control-Value/,
  );
  await sleep(300);
  assert.equal(to("/200/node-fc-bad").length, 0);
});

test("flow control: a key read back with its wait list", async () => {
  await assert.rejects(client.flowControl.get("node-w"), (err) => err.status === 404);
  // One start an hour: the first is delivered, the two others wait for the rate.
  for (let i = 0; i < 3; i++) {
    await client.publish({
      url: `${base}/200/node-fc-wait/${i}`,
      body: "w",
      flowControl: { key: "node-w", parallelism: 2, rate: 1, period: "1h" },
    });
  }
  await waitFor("/200/node-fc-wait/", 1);
  const deadline = Date.now() + PATIENCE_MS;
  let info;
  for (;;) {
    info = await client.flowControl.get("node-w");
    if (info.waitListSize === 2) break;
    assert.ok(Date.now() < deadline, JSON.stringify(info));
    await sleep(50);
  }
  assert.equal(info.flowControlKey, "node-w");
  assert.equal(info.parallelismMax, 2);
  assert.equal(info.rateMax, 1);
  assert.equal(info.rateCount, 1);
  assert.equal(info.ratePeriod, 3600);
  assert.equal(info.isPaused, false);
  assert.equal(to("/200/node-fc-wait/").length, 1);
  // Paused and resumed (deliveries held while paused: tests/flow_control.rs); pinning is not
  // supported: refused, not ignored.
  await assert.rejects(client.flowControl.pause("node-none"), (err) => err.status === 404);
  await client.flowControl.pause("node-w");
  assert.equal((await client.flowControl.get("node-w")).isPaused, true);
  await client.flowControl.resume("node-w");
  assert.equal((await client.flowControl.get("node-w")).isPaused, false);
  await assert.rejects(client.flowControl.pin("node-w", { parallelism: 1 }), (err) => err.status === 405);
  // The rate reset: the next one starts at once, the last waits again.
  await assert.rejects(client.flowControl.resetRate("node-none"), (err) => err.status === 404);
  await client.flowControl.resetRate("node-w");
  await waitFor("/200/node-fc-wait/", 2);
  for (;;) {
    info = await client.flowControl.get("node-w");
    if (info.waitListSize === 1) break;
    assert.ok(Date.now() < deadline, JSON.stringify(info));
    await sleep(50);
  }
  assert.equal(info.rateCount, 1);
  assert.equal(to("/200/node-fc-wait/").length, 2);
});

test("queues: batch items with a queueName go to their queue", async () => {
  const res = await client.batch([
    { url: `${base}/slow50/node-bq/0`, body: "0", queueName: "node-batched" },
    { url: `${base}/slow50/node-bq/1`, body: "1", queueName: "node-batched" },
  ]);
  assert.equal(res.length, 2);
  const got = await waitFor("/slow50/node-bq/", 2);
  for (const c of got) assert.equal(c.verified, true, c.error);
  assert.equal(peak.get("node-bq"), 1);
  assert.equal((await client.queue({ queueName: "node-batched" }).get()).parallelism, 1);
});
