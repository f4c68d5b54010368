// Roles through the official JS SDK (@upstash/qstash): a client with a publish-only token
// publishes and reads its own messages, and each admin call it makes is refused (403, the
// gateway's JSON error) with nothing done; the admin's client sees and cancels. Started by
// ../run.sh, which passes the tokens (GATEWAY_TOKEN is an admin's, PUBLISH_TOKEN a publisher's).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run tests/sdk/run.sh`);
  return value;
};
const { Client } = createRequire(path.join(env("QSTASH_SDK_DIR"), "package.json"))(
  "@upstash/qstash",
);
const baseUrl = env("GATEWAY_URL");
// An allowed destination; nothing is delivered to it (every message is delayed, then cancelled).
const destination = `http://127.0.0.1:${env("RECEIVER_PORT")}/200/node-roles`;
const admin = new Client({ baseUrl, token: env("GATEWAY_TOKEN"), enableTelemetry: false });
const publisher = new Client({ baseUrl, token: env("PUBLISH_TOKEN"), enableTelemetry: false });
// The SDK's QstashError carries the answer's status and the gateway's JSON error.
const refused = (err) => err.status === 403 && /role is publish/.test(err.message);
const notFound = (err) => err.status === 404 && /not found/.test(err.message);

test("a publish-only token publishes and reads its own messages, and no more", async () => {
  const mine = await publisher.publish({ url: destination, body: "p", delay: 3600 });
  assert.match(mine.messageId, /^msg_/);
  const [batched] = await publisher.batch([{ url: destination, body: "b", delay: 3600 }]);
  assert.match(batched.messageId, /^msg_/);
  const got = await publisher.messages.get(mine.messageId);
  assert.equal(got.messageId, mine.messageId);

  // An admin's message is not the publisher's.
  const theirs = await admin.publish({ url: destination, body: "a", delay: 3600 });
  await assert.rejects(publisher.messages.get(theirs.messageId), notFound);

  // Admin calls: 403, nothing done.
  await assert.rejects(publisher.messages.delete(mine.messageId), refused);
  await assert.rejects(publisher.messages.deleteMany([mine.messageId]), refused);
  await assert.rejects(publisher.dlq.listMessages(), refused);
  assert.equal((await admin.messages.get(mine.messageId)).messageId, mine.messageId);

  // The admin sees every message, and cancels them.
  for (const id of [mine.messageId, batched.messageId, theirs.messageId]) {
    assert.equal((await admin.messages.get(id)).messageId, id);
    await admin.messages.delete(id);
  }
  await assert.rejects(publisher.messages.get(mine.messageId), notFound);
});
