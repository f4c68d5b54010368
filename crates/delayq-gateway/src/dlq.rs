//! The dead letters of the gateway's queue as QStash's DLQ: `GET /v2/dlq` (a page, by ids or
//! filters: `dlq_filter.rs`), `GET` and `DELETE /v2/dlq/{dlqId}`, `POST /v2/dlq/retry/{dlqId}`,
//! and `DELETE /v2/dlq`, `POST /v2/dlq/retry` in bulk (by ids, by filters or all, at most
//! [`MAX_BULK`] a request). A dead letter's `dlqId` is its message id. They are found by
//! reading the dead-letter list from its oldest record, at most [`SCANNED`] of them.

use crate::dlq_filter::{DlqQuery, LetterFacts};
use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::messages::message_json;
use crate::store::Record;
use crate::Shared;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::Json;
use bytes::Bytes;
use delayq::codec::ByteArrayCodec;
use delayq::reliable::DeadLetter;
use delayq::DelayedQueue;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The most dead letters read to answer one request.
pub(crate) const SCANNED: usize = 10_000;
/// The most dead letters on one page.
const PAGE: usize = 100;

/// A dead letter and its envelope.
struct Found {
    letter: DeadLetter<Vec<u8>>,
    envelope: Envelope,
    /// The queue whose dead letter it is: the gateway's, or a lane's.
    queue: DelayedQueue<ByteArrayCodec>,
}

impl Found {
    /// What the DLQ's filters look at besides the envelope.
    fn facts(&self) -> LetterFacts {
        LetterFacts {
            response_status: crate::deliver::status_of(&self.letter.error).0,
            dead_at_ms: self.letter.dead_at_ms,
        }
    }

    /// QStash's `DLQMessage`: the `Message` fields, `dlqId`, `responseStatus`, `responseBody`
    /// (the first 4 KiB of the last answer, or why there was none), and delayq's `error`
    /// and `attempts`.
    fn json(&self) -> Value {
        let mut message = message_json(&self.envelope);
        let (status, body) = crate::deliver::status_of(&self.letter.error);
        message["dlqId"] = self.envelope.id.clone().into();
        message["responseStatus"] = status.into();
        message["responseBody"] = body.into();
        message["error"] = self.letter.error.clone().into();
        message["attempts"] = self.letter.attempts.into();
        message
    }
}

/// `message` (a dead letter's JSON) with its last answer's headers as `responseHeader` (names
/// to arrays of values), when the gateway kept them.
async fn with_response(shared: &Shared, mut message: Value) -> Value {
    let id = message["messageId"].as_str().unwrap_or_default().to_owned();
    if let Ok(Some(answer)) = shared.store.response(&id).await {
        let mut header = serde_json::Map::new();
        for (name, value) in answer.headers {
            let values = header.entry(name).or_insert_with(|| json!([]));
            if let Value::Array(values) = values {
                values.push(value.into());
            }
        }
        message["responseHeader"] = header.into();
    }
    message
}

/// The dead letters (the oldest `limit`) whose records hold a gateway envelope.
/// Those of the gateway's queue first, then those of each lane (QStash queues, flow control).
async fn letters(shared: &Shared, limit: usize) -> Result<Vec<Found>, ApiError> {
    let mut queues = vec![shared.queue.clone()];
    let lanes = match shared.lanes.all().await {
        Ok(lanes) => lanes,
        Err(err) => return Err(ApiError::internal("reading the dead letters", &err)),
    };
    let mut names: Vec<String> = lanes.into_keys().collect();
    names.sort();
    for name in names {
        match shared.lanes.queue(&name).await {
            Ok(queue) => queues.push(queue),
            Err(err) => return Err(ApiError::internal("reading the dead letters", &err)),
        }
    }
    let mut found = Vec::new();
    for queue in queues {
        let letters = match queue.inspect().dead_letters(limit).await {
            Ok(letters) => letters,
            Err(err) => return Err(ApiError::internal("reading the dead letters", &err)),
        };
        found.extend(letters.into_iter().filter_map(|letter| {
            let envelope = Envelope::decode(&letter.raw).ok()?;
            let queue = queue.clone();
            Some(Found {
                letter,
                envelope,
                queue,
            })
        }));
    }
    Ok(found)
}

async fn find(shared: &Shared, id: &str) -> Result<Found, ApiError> {
    letters(shared, SCANNED)
        .await?
        .into_iter()
        .find(|found| found.envelope.id == id)
        .ok_or_else(|| ApiError::not_found(format!("dead letter {id} not found")))
}

/// The query of `uri` as a DLQ query, or a 400.
fn dlq_query(uri: &Uri) -> Result<DlqQuery, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|err| ApiError::bad_request(format!("bad query: {}", err.body_text())))?;
    crate::dlq_filter::parse(pairs).map_err(ApiError::bad_request)
}

/// The dead letters of `all` that `query` asks for (by ids, or by its filters), in order.
fn matching<'a>(all: &'a [Found], query: &DlqQuery) -> Vec<&'a Found> {
    all.iter()
        .filter(|f| match query.ids.is_empty() {
            true => query.filter.matches(&f.envelope, f.facts()),
            false => query.ids.contains(&f.envelope.id),
        })
        .collect()
}

/// `GET /v2/dlq[?cursor=N&count=N&FILTER=..]`: `{messages, cursor?}`, oldest first; the cursor
/// (an offset) is there when more follow. Filters: see `dlq_filter.rs`.
pub(crate) async fn list(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let query = dlq_query(&uri)?;
    let from = query.from;
    let count = query.count.unwrap_or(PAGE).min(PAGE);
    let all = letters(&shared, SCANNED).await?;
    let matching = matching(&all, &query);
    let mut page: Vec<Value> = Vec::new();
    for found in matching.iter().skip(from).take(count) {
        page.push(with_response(&shared, found.json()).await);
    }
    let mut answer = json!({ "messages": page });
    if from + count < matching.len() {
        answer["cursor"] = (from + count).to_string().into();
    }
    Ok(Json(answer))
}

/// `GET /v2/dlq/{dlqId}`.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let found = find(&shared, &id).await?;
    Ok(Json(with_response(&shared, found.json()).await))
}

/// `DELETE /v2/dlq/{dlqId}`: `{"deleted": 1}`, or 404.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let found = find(&shared, &id).await?;
    match found
        .queue
        .admin()
        .delete_dead_letter(&found.letter.record)
        .await
    {
        Ok(true) => Ok(Json(json!({ "deleted": 1 }))),
        Ok(false) => Err(ApiError::not_found(format!("dead letter {id} not found"))),
        Err(err) => Err(ApiError::internal("deleting the dead letter", &err)),
    }
}

/// The most dead letters one bulk delete or retry may name, or touch by filter.
pub(crate) const MAX_BULK: usize = 1_000;
/// How many dead letters a bulk call by filter touches when it gives no `count` (the SDKs'
/// default).
const BULK_DEFAULT: usize = 100;

/// What a bulk call acts on.
enum Bulk {
    /// These dead letters (`dlqIds`), without repeats.
    Ids(Vec<String>),
    /// At most `count` of those matching the query's filters (every dead letter for none),
    /// after its cursor.
    Matching { query: Box<DlqQuery>, count: usize },
}

/// What a bulk delete or retry asks for: `dlqIds=ID` in the query (repeated, as the node SDK
/// sends them) or `{"dlqIds": [...]}` in a JSON body (as the Python SDK sends them); or filters
/// with `count` and `cursor` (the JS SDK's `filter`), or only `count` (its `all: true`).
/// Nothing at all, a bad filter, ids beside filters, or more than [`MAX_BULK`] is refused.
fn bulk_of(uri: &Uri, body: &[u8]) -> Result<Bulk, ApiError> {
    let mut query = dlq_query(uri)?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Ids {
            dlq_ids: Vec<String>,
        }
        let given: Ids = serde_json::from_slice(body).map_err(|err| {
            ApiError::bad_request(format!("bad body: {err} (expected {{\"dlqIds\": [...]}})"))
        })?;
        if given.dlq_ids.iter().any(String::is_empty) {
            return Err(ApiError::bad_request("an empty dlqId"));
        }
        query.ids.extend(given.dlq_ids);
        query.ids.sort();
        query.ids.dedup();
    }
    let by_ids = !query.ids.is_empty();
    let filtered = !query.filter.is_empty();
    match (by_ids, filtered, query.count) {
        (true, true, _) => Err(ApiError::bad_request("give dlqIds or filters, not both")),
        (true, false, Some(_)) => Err(ApiError::bad_request("count goes with filters, not dlqIds")),
        (true, false, None) if query.ids.len() > MAX_BULK => Err(ApiError::bad_request(format!(
            "{} dlqIds; at most {MAX_BULK} a request",
            query.ids.len()
        ))),
        (true, false, None) => Ok(Bulk::Ids(query.ids)),
        (false, false, None) => Err(ApiError::bad_request(
            "give the dead letters as dlqIds, filters, or count (all of them, count at a time)",
        )),
        (false, _, count) => match count.unwrap_or(BULK_DEFAULT) {
            n if n > MAX_BULK => Err(ApiError::bad_request(format!(
                "count {n}: at most {MAX_BULK} a request"
            ))),
            count => Ok(Bulk::Matching {
                query: Box::new(query),
                count,
            }),
        },
    }
}

/// The dead letters `bulk` acts on, and the cursor to answer: the same offset when more match
/// (those acted on leave the DLQ, so the next ones take their place).
async fn bulk_targets(
    shared: &Shared,
    bulk: &Bulk,
) -> Result<(Vec<Found>, Option<String>), ApiError> {
    let all = letters(shared, SCANNED).await?;
    match bulk {
        Bulk::Ids(ids) => Ok((
            all.into_iter()
                .filter(|f| ids.contains(&f.envelope.id))
                .collect(),
            None,
        )),
        Bulk::Matching { query, count } => {
            let (wanted, more) = {
                let matching = matching(&all, query);
                let wanted: Vec<String> = matching
                    .iter()
                    .skip(query.from)
                    .take(*count)
                    .map(|f| f.envelope.id.clone())
                    .collect();
                let more = matching.len() > query.from + wanted.len();
                (wanted, more)
            };
            let targets = all
                .into_iter()
                .filter(|f| wanted.contains(&f.envelope.id))
                .collect();
            Ok((targets, more.then(|| query.from.to_string())))
        }
    }
}

/// `DELETE /v2/dlq` by ids (`?dlqIds=A&dlqIds=B`, or the body `{"dlqIds": ["A", "B"]}`), by
/// filters (`?url=..&count=N&cursor=C`) or all (`?count=N`): `{"deleted": N, "cursor"?}`, N
/// the dead letters found and deleted (ids not found are not counted, as QStash answers), the
/// cursor there when more match. The input is checked before anything is deleted.
pub(crate) async fn delete_many(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let bulk = bulk_of(&uri, &body)?;
    let (targets, cursor) = bulk_targets(&shared, &bulk).await?;
    let mut deleted = 0;
    for found in targets {
        match found
            .queue
            .admin()
            .delete_dead_letter(&found.letter.record)
            .await
        {
            Ok(true) => deleted += 1,
            // Deleted by another request meanwhile: not counted twice.
            Ok(false) => {}
            Err(err) => return Err(ApiError::internal("deleting the dead letters", &err)),
        }
    }
    let mut answer = json!({ "deleted": deleted });
    if let Some(cursor) = cursor {
        answer["cursor"] = cursor.into();
    }
    Ok(Json(answer))
}

/// `POST /v2/dlq/retry` by ids, by filters or all, as [`delete_many`] takes them: each as
/// [`retry`]; 201 `{"responses": [{"messageId"}], "cursor"?}` for those found.
pub(crate) async fn retry_many(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let bulk = bulk_of(&uri, &body)?;
    let (targets, cursor) = bulk_targets(&shared, &bulk).await?;
    let mut responses = Vec::new();
    for found in &targets {
        match replay_found(&shared, found).await {
            Ok(()) => responses.push(json!({ "messageId": found.envelope.id })),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err),
        }
    }
    let mut answer = json!({ "responses": responses });
    if let Some(cursor) = cursor {
        answer["cursor"] = cursor.into();
    }
    Ok((StatusCode::CREATED, Json(answer)))
}

/// Puts the dead letter `id` back into the queue, due now. Its record goes back into the
/// message index (so that `GET` and `DELETE /v2/messages/{id}` find it again) in one call with
/// its CREATED event, both written first, as a publish writes them before the entry: the events
/// of its attempts come after it (written after the replay, a worker could take the message and
/// write its first attempt's events before it). Only a retry that claims the letter for
/// [`RETRY_LEASE`](crate::store::RETRY_LEASE) writes them and replays it: another retry of it
/// within the lease answers 404, as once it is replayed (finding the letter gone, it would take
/// back the record of the one that replayed it). A replay that finds the letter gone (deleted
/// meanwhile) or fails takes back the record, the event and the claim.
async fn replay(shared: &Shared, id: &str) -> Result<(), ApiError> {
    replay_found(shared, &find(shared, id).await?).await
}

/// Puts the dead letter `found` back into the queue, due now (see [`replay`]).
async fn replay_found(shared: &Shared, found: &Found) -> Result<(), ApiError> {
    let id = &found.envelope.id;
    // The record keeps the envelope's owner (its publisher still reads it); it has no handle:
    // a cancel leaves a cancellation for its next attempt.
    let record = Record::of(&found.envelope, String::new());
    let again = crate::events::event(&found.envelope, "CREATED", crate::now_ms());
    let written = match shared
        .store
        .put_retried(&record, crate::events::with_record(shared, &again))
        .await
    {
        Ok(Some(written)) => written,
        Ok(None) => return Err(ApiError::not_found(format!("dead letter {id} not found"))),
        Err(err) => return Err(ApiError::internal("retrying the dead letter", &err)),
    };
    let replayed = found
        .queue
        .admin()
        .replay_dead_letter(&found.letter.record, SCANNED, Duration::ZERO)
        .await;
    if !matches!(replayed, Ok(true)) {
        if let Err(err) = shared.store.take_back_retried(id).await {
            tracing::warn!(error = %err, message = %id, "gateway: cannot take back a retried message's record");
        }
        crate::events::withdraw(shared, &written).await;
    }
    match replayed {
        Ok(true) => Ok(()),
        Ok(false) => Err(ApiError::not_found(format!("dead letter {id} not found"))),
        Err(err) => Err(ApiError::internal("retrying the dead letter", &err)),
    }
}

/// `POST /v2/dlq/retry/{dlqId}`: the message goes back into the queue, due now, with a fresh
/// count of retries; 201 `{"messageId"}`. Differs from QStash: the message keeps its id.
pub(crate) async fn retry(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    replay(&shared, &id).await?;
    Ok((StatusCode::CREATED, Json(json!({ "messageId": id }))))
}
