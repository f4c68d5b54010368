//! The gateway's own keys, beside the queue's and in its hash slot: the message index
//! (`delayq_gateway_messages:{QUEUE}`, a hash of message id to [`Record`]), the deduplication
//! ids (`delayq_gateway_dedup:{QUEUE}:ID`, strings that expire after the window), the
//! cancellations (`delayq_gateway_cancelled:{QUEUE}:ID`), the last answers of dead letters
//! (`delayq_gateway_response:{QUEUE}:ID`) and the claims of DLQ retries
//! (`delayq_gateway_retrying:{QUEUE}:ID`); in each `ID`, `%` and `:` are escaped as delayq
//! escapes a business key (`delayq::names::item_key`), after the `KIND:` of a deduplication id.
//!
//! The index is what `GET` and `DELETE /v2/messages/{id}` read: publishing writes a message's
//! record before its entry, and a delivery that succeeds or gives up removes it. A cancel
//! removes the record and cancels the entry by its handle; when the entry is not pending any
//! more (taken, or waiting for a retry under a new handle) it leaves a cancellation, and the
//! next attempt drops the message unsent. A dead letter retried through the DLQ gets its
//! record back, written with its CREATED event before it is replayed, by the one retry that
//! claimed the letter when several come at once. Deliveries need no
//! record: a dead letter replayed with `delayq dead replay` is delivered.

use crate::envelope::{Answer, Envelope};
use crate::scripts::{
    CANCEL_BEGIN, DEDUP_CLAIM, DEDUP_RELEASE, STORE_PUT, STORE_RETRY, STORE_UPDATE,
};
use bytes::Bytes;
use delayq::fred::clients::Client;
use delayq::fred::interfaces::{HashesInterface, KeysInterface};
use delayq::fred::prelude::Value;
use delayq::fred::types::Expiration;
use delayq::names::item_key;
use serde::{Deserialize, Serialize};
use std::time::Duration;

type RedisResult<T> = Result<T, delayq::fred::error::Error>;

/// A message's record in the index: its envelope without the body, and the handle of its
/// first entry (empty until the offer answered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) handle: String,
    pub(crate) envelope: Envelope,
    pub(crate) body_len: usize,
}

impl Record {
    pub(crate) fn of(envelope: &Envelope, handle: String) -> Record {
        let mut envelope = envelope.clone();
        let body_len = std::mem::take(&mut envelope.body).len();
        Record {
            handle,
            envelope,
            body_len,
        }
    }

    fn encode(&self) -> Bytes {
        Bytes::from(rmp_serde::to_vec_named(self).unwrap_or_default())
    }
}

/// The arguments of `store_put.lua` and `store_retry.lua`: the message id, `record`, and
/// `created` (`'0'` and empty strings without it).
fn put_args(record: &Record, created: Option<EventWrite>) -> Vec<Value> {
    let (kept, oldest, json) = created.map_or((0, String::new(), String::new()), |event| {
        (event.kept, event.oldest, event.json)
    });
    vec![
        Value::from(record.envelope.id.as_str()),
        Value::Bytes(record.encode()),
        Value::from(kept.to_string()),
        Value::from(oldest),
        Value::from(json),
    ]
}

/// How long a cancellation waits for the message's next attempt: longer than the longest delay
/// plus the longest wait between retries.
const CANCELLATION_KEPT: Duration = Duration::from_secs(400 * 24 * 3600);

/// How long a DLQ retry's claim of its dead letter holds: longer than a retry takes from its
/// claim to its replay, so that another retry of the letter at once leaves the record alone;
/// a retry whose gateway died before the replay holds the letter that long.
pub(crate) const RETRY_LEASE: Duration = Duration::from_secs(10);

/// How long a dead letter's last response is kept.
const RESPONSE_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// An event written in the same step as a record (see [`Store::put`]): the most events the
/// stream keeps, the stream id before which events are trimmed, and the event's JSON.
#[derive(Debug, Clone)]
pub(crate) struct EventWrite {
    pub(crate) kept: usize,
    pub(crate) oldest: String,
    pub(crate) json: String,
}

/// What claiming a deduplication id found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DedupClaim {
    /// The id is this message's now: store it (which settles the claim).
    Claimed,
    /// Another message holds the id and is being stored (or its publisher died less than a
    /// lease ago): ask again shortly.
    Pending(String),
    /// Another message holds the id and is stored: the answer is its id.
    Settled(String),
}

/// `prefix:{name}`, or `prefix:name` when the name has its own hash tag (Redisson's rule).
pub(crate) fn tagged(prefix: &str, name: &str) -> String {
    match name.contains('{') && name.contains('}') {
        true => format!("{prefix}:{name}"),
        false => format!("{prefix}:{{{name}}}"),
    }
}

/// The index and the deduplication ids of one gateway queue.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    client: Client,
    index: String,
    dedup: String,
    cancelled: String,
    responses: String,
    retrying: String,
    events: String,
}

impl Store {
    pub(crate) fn new(client: Client, queue: &str) -> Store {
        Store {
            client,
            index: tagged("delayq_gateway_messages", queue),
            dedup: tagged("delayq_gateway_dedup", queue),
            cancelled: tagged("delayq_gateway_cancelled", queue),
            responses: tagged("delayq_gateway_response", queue),
            retrying: tagged("delayq_gateway_retrying", queue),
            events: tagged("delayq_gateway_events", queue),
        }
    }

    /// The key of deduplication id `id` (`KIND:VALUE`, KIND `id` or `content`):
    /// `delayq_gateway_dedup:{QUEUE}:KIND:VALUE`, with `%` and `:` of VALUE escaped as delayq
    /// writes a business key ([`item_key`]), so that no gateway's key is also one of a gateway
    /// whose queue is named `{QUEUE}:…` (whose keys have a `:` more after `{QUEUE}:`). A value
    /// without `%` or `:` keeps the name it had.
    fn dedup_key(&self, id: &str) -> String {
        match id.split_once(':') {
            Some((kind, value)) => item_key(&format!("{}:{kind}", self.dedup), value),
            None => item_key(&self.dedup, id),
        }
    }

    /// The events stream's key (`delayq_gateway_events:{QUEUE}`; see `events.rs`).
    pub(crate) fn events_key(&self) -> &str {
        &self.events
    }

    /// Claims `id` for `message` for `window`, unless it is claimed already: see
    /// [`DedupClaim`] and `lua/dedup_claim.lua`. A claim stays pending until [`update`](Store::update) settles it; a
    /// pending claim older than `lease` (its publisher died or lost Redis between the claim
    /// and the store) is taken over by this one.
    pub(crate) async fn claim_dedup(
        &self,
        id: &str,
        message: &str,
        window: Duration,
        lease: Duration,
    ) -> RedisResult<DedupClaim> {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1);
        let args = vec![
            Value::from(message),
            Value::from(ms(window)),
            Value::from(ms(lease)),
        ];
        let (state, first): (String, String) = DEDUP_CLAIM
            .run(&self.client, vec![self.dedup_key(id).into()], args)
            .await?;
        Ok(match state.as_str() {
            "claimed" => DedupClaim::Claimed,
            "pending" => DedupClaim::Pending(first),
            _ => DedupClaim::Settled(first),
        })
    }

    /// Forgets `id`'s pending claim by `message` (its message could not be stored); a claim
    /// taken over by another publish meanwhile stays.
    pub(crate) async fn release_dedup(&self, id: &str, message: &str) -> RedisResult<()> {
        DEDUP_RELEASE
            .run::<i64>(
                &self.client,
                vec![self.dedup_key(id).into()],
                vec![message.into()],
            )
            .await
            .map(drop)
    }

    /// Writes a message's first record, and `created` (its CREATED event) in the same step:
    /// one call, and the event is in the stream before the message's entry is offered.
    pub(crate) async fn put(
        &self,
        record: &Record,
        created: Option<EventWrite>,
    ) -> RedisResult<()> {
        STORE_PUT
            .run::<i64>(
                &self.client,
                self.index_and_events(),
                put_args(record, created),
            )
            .await
            .map(drop)
    }

    /// Claims the retry of dead letter `id` for [`RETRY_LEASE`] and writes its record and
    /// `created` (its CREATED event) in the same step, unless another retry of it claimed it
    /// less than a lease ago (see `lua/store_retry.lua`). The event's stream ids (none when no
    /// event is kept) when claimed; `None` when another retry holds the claim.
    pub(crate) async fn put_retried(
        &self,
        record: &Record,
        created: Option<EventWrite>,
    ) -> RedisResult<Option<Vec<String>>> {
        let mut keys = self.index_and_events();
        keys.push(self.retrying_key(&record.envelope.id).into());
        let mut args = put_args(record, created);
        let lease = i64::try_from(RETRY_LEASE.as_millis()).unwrap_or(i64::MAX);
        args.push(Value::from(lease));
        let (written, event): (i64, String) = STORE_RETRY.run(&self.client, keys, args).await?;
        Ok((written == 1).then(|| [event].into_iter().filter(|e| !e.is_empty()).collect()))
    }

    /// Takes back what [`put_retried`](Self::put_retried) wrote for `id` whose replay failed:
    /// its record, and its claim (a retry may try again at once).
    pub(crate) async fn take_back_retried(&self, id: &str) -> RedisResult<()> {
        self.remove(id).await?;
        self.client
            .del::<i64, _>(self.retrying_key(id))
            .await
            .map(drop)
    }

    /// The keys of `store_put.lua` and `store_retry.lua`.
    fn index_and_events(&self) -> Vec<delayq::fred::types::Key> {
        vec![self.index.as_str().into(), self.events.as_str().into()]
    }

    /// Writes `record` over the one in the index, if there still is one; with `dedup`, settles
    /// the record's message's claim of that deduplication id in the same step (its message is
    /// stored: a later publish with the id answers it). See `lua/store_update.lua`.
    pub(crate) async fn update(&self, record: &Record, dedup: Option<&str>) -> RedisResult<()> {
        let args = vec![
            Value::from(record.envelope.id.as_str()),
            Value::Bytes(record.encode()),
        ];
        let mut keys = vec![self.index.as_str().into()];
        keys.extend(dedup.map(|id| self.dedup_key(id).into()));
        STORE_UPDATE
            .run::<i64>(&self.client, keys, args)
            .await
            .map(drop)
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The index's key.
    pub(crate) fn index_key(&self) -> &str {
        &self.index
    }

    pub(crate) async fn get(&self, id: &str) -> RedisResult<Option<Record>> {
        let raw: Option<Bytes> = self.client.hget(&self.index, id).await?;
        Ok(raw.and_then(|raw| rmp_serde::from_slice(&raw).ok()))
    }

    /// `delayq_gateway_cancelled:{QUEUE}:ID`, `ID` escaped as [`dedup_key`](Self::dedup_key)
    /// escapes a value (a message id, `msg_…`, keeps its name): a cancellation asked for
    /// `x:ID` is not the one of `ID` at a gateway whose queue is `{QUEUE}:x`.
    fn cancelled_key(&self, id: &str) -> String {
        item_key(&self.cancelled, id)
    }

    /// `delayq_gateway_retrying:{QUEUE}:ID`, `ID` escaped as in
    /// [`cancelled_key`](Self::cancelled_key).
    fn retrying_key(&self, id: &str) -> String {
        item_key(&self.retrying, id)
    }

    /// `delayq_gateway_response:{QUEUE}:ID`, `ID` escaped as in
    /// [`cancelled_key`](Self::cancelled_key).
    fn response_key(&self, id: &str) -> String {
        item_key(&self.responses, id)
    }

    /// Begins a cancel of `id` in one call (`lua/cancel_begin.lua`): leaves its cancellation,
    /// for its next attempt to see (kept for longer than any message can wait between two
    /// attempts), and takes its record out of the index. Whether the index had it, and the
    /// record (`None` also when it does not read).
    pub(crate) async fn begin_cancel(&self, id: &str) -> RedisResult<(bool, Option<Record>)> {
        let ms = i64::try_from(CANCELLATION_KEPT.as_millis()).unwrap_or(i64::MAX);
        let keys = vec![self.index.as_str().into(), self.cancelled_key(id).into()];
        let raw: Option<Bytes> = CANCEL_BEGIN
            .run(&self.client, keys, vec![Value::from(id), Value::from(ms)])
            .await?;
        let record = raw.as_ref().and_then(|raw| rmp_serde::from_slice(raw).ok());
        Ok((raw.is_some(), record))
    }

    pub(crate) async fn is_cancelled(&self, id: &str) -> RedisResult<bool> {
        let found: i64 = self.client.exists(self.cancelled_key(id)).await?;
        Ok(found > 0)
    }

    pub(crate) async fn clear_cancelled(&self, id: &str) -> RedisResult<()> {
        self.client
            .del::<i64, _>(self.cancelled_key(id))
            .await
            .map(drop)
    }

    /// Keeps the last answer to message `id` (given up: a dead letter) for [`RESPONSE_KEPT`].
    pub(crate) async fn put_response(&self, id: &str, answer: &Answer) -> RedisResult<()> {
        let ms = i64::try_from(RESPONSE_KEPT.as_millis()).unwrap_or(i64::MAX);
        let bytes = Bytes::from(rmp_serde::to_vec_named(answer).unwrap_or_default());
        self.client
            .set::<(), _, _>(
                self.response_key(id),
                bytes,
                Some(Expiration::PX(ms)),
                None,
                false,
            )
            .await
    }

    /// The last answer kept for message `id`.
    pub(crate) async fn response(&self, id: &str) -> RedisResult<Option<Answer>> {
        let raw: Option<Bytes> = self.client.get(self.response_key(id)).await?;
        Ok(raw.and_then(|raw| rmp_serde::from_slice(&raw).ok()))
    }

    /// Removes `id` from the index; true when it was there.
    pub(crate) async fn remove(&self, id: &str) -> RedisResult<bool> {
        let removed: i64 = self.client.hdel(&self.index, id).await?;
        Ok(removed > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_the_queue_slot() {
        assert_eq!(tagged("p", "jobs"), "p:{jobs}");
        assert_eq!(tagged("p", "{jobs}:a"), "p:{jobs}:a");
    }
}
