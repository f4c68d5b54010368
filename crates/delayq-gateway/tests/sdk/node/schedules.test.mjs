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

// Every request as it came; always answered 200.
const seen = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    seen.push({ method: req.method, target: req.url, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
    res.writeHead(200, { "content-type": "text/plain" });
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
