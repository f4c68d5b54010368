// Schedules, events and signing keys through the official QStash JS SDK (@upstash/qstash):
// a schedule created, read, listed, paused, resumed and deleted with client.schedules, its
// occurrences delivered to a recording receiver on loopback and verified with the SDK's
// Receiver given the keys GET /v2/keys answers. Started by ../run.sh (SCHEDULES_RECEIVER_PORT
// is this file's own receiver, allowed as a destination).
//
// The schedules use a 6-field cron (seconds first), a delayq extension: QStash's own crons have
// 5 fields and fire at most once a minute.
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
const port = Number(env("SCHEDULES_RECEIVER_PORT"));
const base = `http://127.0.0.1:${port}`;
const client = new Client({ baseUrl: gatewayUrl, token, enableTelemetry: false });

// Every request as it came; answered with the status its path starts with (/500/...).
const seen = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    seen.push({ method: req.method, target: req.url, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
    const status = Number(req.url.split("/")[1]) || 200;
    res.writeHead(status, { "content-type": "text/plain" });
    res.end("ok");
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

async function api(method, route) {
  const res = await fetch(`${gatewayUrl}${route}`, { method, headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, json: await res.json() };
}

test("a schedule: created, its occurrences signed messages of their own, read, paused, resumed, deleted", async () => {
  const destination = `${base}/200/node-sched?x=1`;
  const created = Date.now();
  const answer = await client.schedules.create({
    destination,
    cron: "*/2 * * * * *",
    scheduleId: "node-sched",
    method: "PUT",
    body: "tick",
    headers: { "X-A": "a" },
    retries: 1,
    delay: 1,
  });
  assert.equal(answer.scheduleId, "node-sched");

  const schedule = await client.schedules.get("node-sched");
  assert.equal(schedule.scheduleId, "node-sched");
  assert.equal(schedule.cron, "*/2 * * * * *");
  assert.equal(schedule.destination, destination);
  assert.equal(schedule.method, "PUT");
  assert.equal(schedule.body, "tick");
  assert.equal(schedule.retries, 1);
  assert.equal(schedule.delay, 1);
  assert.equal(schedule.isPaused, false);
  assert.deepEqual(schedule.header["x-a"], ["a"]);
  assert.ok(schedule.createdAt >= created - 1000, JSON.stringify(schedule));
  const listed = await client.schedules.list();
  assert.ok(listed.some((s) => s.scheduleId === "node-sched"), JSON.stringify(listed));

  const got = await waitFor("/200/node-sched", 2);
  const { status, json: keys } = await api("GET", "/v2/keys");
  assert.equal(status, 200);
  const receiver = new Receiver({ currentSigningKey: keys.current, nextSigningKey: keys.next });
  const ids = new Set();
  for (const r of got.slice(0, 2)) {
    assert.equal(r.method, "PUT");
    assert.equal(r.body.toString(), "tick");
    assert.equal(r.headers["x-a"], "a");
    assert.equal(r.headers["upstash-schedule-id"], "node-sched");
    ids.add(r.headers["upstash-message-id"]);
    const ok = await receiver.verify({ signature: r.headers["upstash-signature"], body: r.body.toString(), url: base + r.target });
    assert.equal(ok, true);
    assert.ok(r.at >= created + 1000, "the delay applies");
  }
  assert.equal(ids.size, 2, "each occurrence is a message of its own");

  await client.schedules.pause({ schedule: "node-sched" });
  assert.equal((await client.schedules.get("node-sched")).isPaused, true);
  await client.schedules.resume({ schedule: "node-sched" });
  assert.equal((await client.schedules.get("node-sched")).isPaused, false);
  await client.schedules.delete("node-sched");
  await assert.rejects(client.schedules.get("node-sched"), (err) => err.status === 404);
});

test("a schedule is replaced by its id", async () => {
  const destination = `${base}/200/node-upsert`;
  await client.schedules.create({ destination, cron: "0 0 1 1 *", scheduleId: "node-upsert", body: "one", retries: 2 });
  await client.schedules.create({ destination, cron: "CRON_TZ=Europe/Berlin 30 2 * * *", scheduleId: "node-upsert", body: "two" });
  const schedule = await client.schedules.get("node-upsert");
  assert.equal(schedule.body, "two");
  assert.equal(schedule.cron, "CRON_TZ=Europe/Berlin 30 2 * * *");
  assert.equal(schedule.retries, 3);
  assert.equal((await client.schedules.list()).filter((s) => s.scheduleId === "node-upsert").length, 1);
  await client.schedules.delete("node-upsert");
});

test("bad schedules are refused, unknown ones are 404", async () => {
  const destination = `${base}/200/node-bad`;
  for (const cron of ["61 * * * *", "* * *", "CRON_TZ=Mars/Olympus 0 * * * *", "whenever"]) {
    await assert.rejects(client.schedules.create({ destination, cron }), (err) => err.status === 400, cron);
  }
  await assert.rejects(
    client.schedules.create({ destination: "http://169.254.169.254/latest", cron: "* * * * *" }),
    (err) => err.status === 403,
  );
  assert.ok(!(await client.schedules.list()).some((s) => s.destination === destination));
  await assert.rejects(client.schedules.get("node-none"), (err) => err.status === 404);
  await assert.rejects(client.schedules.delete("node-none"), (err) => err.status === 404);
  await assert.rejects(client.schedules.pause({ schedule: "node-none" }), (err) => err.status === 404);
});

// Polls client.logs for messageId until its newest event is `state`; its events, newest first.
async function waitEvents(messageId, state) {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const { logs } = await client.logs({ filter: { messageId } });
    if (logs[0]?.state === state) return logs;
    if (Date.now() > deadline) throw new Error(`${messageId}: ${JSON.stringify(logs)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("events: the states of a delivered and a failed message, filters and the cursor", async () => {
  const a = await client.publish({ url: `${base}/200/node-ev`, body: "a", label: "node-ev" });
  const b = await client.publish({ url: `${base}/500/node-ev-fail`, body: "b", retries: 0 });
  const delivered = await waitEvents(a.messageId, "DELIVERED");
  assert.deepEqual(delivered.map((e) => e.state), ["DELIVERED", "ACTIVE", "CREATED"]);
  assert.equal(delivered[0].url, `${base}/200/node-ev`);
  assert.equal(delivered[0].responseStatus, 200);
  assert.ok(delivered[0].time >= delivered[2].time);
  const failed = await waitEvents(b.messageId, "FAILED");
  assert.deepEqual(failed.map((e) => e.state), ["FAILED", "ERROR", "ACTIVE", "CREATED"]);
  assert.equal(failed[1].responseStatus, 500);

  const byState = await client.logs({ filter: { messageId: b.messageId, state: "ERROR" } });
  assert.deepEqual(byState.logs.map((e) => e.state), ["ERROR"]);
  const byUrl = await client.logs({ filter: { url: `${base}/200/node-ev`, state: "CREATED" } });
  assert.deepEqual(byUrl.logs.map((e) => e.messageId), [a.messageId]);
  const byIds = await client.logs({ messageIds: [a.messageId, b.messageId] });
  assert.equal(byIds.logs.length, 7);
  assert.deepEqual(byIds.events, byIds.logs);

  // One event a page: the cursor walks all three of a's, newest first.
  const walked = [];
  let cursor;
  do {
    const page = await client.logs({ count: 1, cursor, filter: { messageId: a.messageId } });
    walked.push(...page.logs.map((e) => e.state));
    cursor = page.cursor;
  } while (cursor && walked.length < 10);
  assert.deepEqual(walked, ["DELIVERED", "ACTIVE", "CREATED"]);

  for (const bad of ["state=NOPE", "count=0", "cursor=zzz"]) {
    const { status, json } = await api("GET", `/v2/events?${bad}`);
    assert.equal(status, 400, bad);
    assert.equal(typeof json.error, "string");
  }
  const { status, json } = await api("GET", `/v2/logs?messageId=${a.messageId}`);
  assert.equal(status, 200);
  assert.deepEqual(json.logs.map((e) => e.state), ["DELIVERED", "ACTIVE", "CREATED"]);
});

test("a delivered message stays readable (--keep-delivered)", async () => {
  const res = await client.publish({ url: `${base}/200/node-kept?x=1`, body: "kept", headers: { "X-K": "1" } });
  // DELIVERED is written once the message left the index for the kept ones.
  await waitEvents(res.messageId, "DELIVERED");
  const message = await client.messages.get(res.messageId);
  assert.equal(message.messageId, res.messageId);
  assert.equal(message.url, `${base}/200/node-kept?x=1`);
  assert.deepEqual(message.header["x-k"], ["1"]);
  await assert.rejects(client.messages.cancel(res.messageId), (err) => err.status === 404);
});
