//! The dead letters of the gateway's queue as QStash's DLQ: `GET /v2/dlq` (a page, optionally
//! one message's), `GET` and `DELETE /v2/dlq/{dlqId}`, `POST /v2/dlq/retry/{dlqId}` and
//! `POST /v2/dlq/retry?dlqIds=..` (as the JS SDK sends it). A dead
//! letter's `dlqId` is its message id. They are found by reading the dead-letter list from its
//! oldest record, at most [`SCANNED`] of them.

use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::messages::message_json;
use crate::Shared;
use axum::extract::{Path, Query, RawQuery, State};
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

/// The query of `GET /v2/dlq`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    cursor: Option<String>,
    count: Option<usize>,
    message_id: Option<String>,
}

/// A dead letter and its envelope.
struct Found {
    letter: DeadLetter<Vec<u8>>,
    envelope: Envelope,
    /// The queue whose dead letter it is: the gateway's, or a lane's.
    queue: DelayedQueue<ByteArrayCodec>,
}

impl Found {
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

/// `GET /v2/dlq[?cursor=N&count=N&messageId=ID]`: `{messages, cursor?}`, oldest first; the
/// cursor (an offset) is there when more follow.
pub(crate) async fn list(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let from: usize = match query.cursor.as_deref() {
        None | Some("") => 0,
        Some(cursor) => cursor
            .parse()
            .map_err(|_| ApiError::bad_request(format!("bad cursor {cursor:?}")))?,
    };
    let count = query.count.unwrap_or(PAGE).clamp(1, PAGE);
    let all = letters(&shared, SCANNED).await?;
    let matching: Vec<&Found> = all
        .iter()
        .filter(|f| {
            query
                .message_id
                .as_ref()
                .is_none_or(|id| &f.envelope.id == id)
        })
        .collect();
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

/// The most dead letters one bulk delete may name.
pub(crate) const MAX_BULK: usize = 1_000;

/// The ids of a bulk request: `dlqIds=ID` in the query (repeated, as the node SDK sends them)
/// and `{"dlqIds": [...]}` in a JSON body (as the Python SDK sends them), without repeats.
/// Anything else (filters, `all`, `count`, `cursor`, other fields) is refused: a bulk delete
/// by filter is not supported, and must not delete more than asked.
fn bulk_ids(uri: &Uri, body: &[u8]) -> Result<Vec<String>, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|err| ApiError::bad_request(format!("bad query: {}", err.body_text())))?;
    let mut ids = Vec::new();
    for (name, value) in pairs {
        match name.as_str() {
            "dlqIds" => ids.push(value),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {other:?}: give the dead letters as dlqIds \
                     (by filter, count or cursor is not supported yet)"
                )))
            }
        }
    }
    if !body.iter().all(u8::is_ascii_whitespace) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Ids {
            dlq_ids: Vec<String>,
        }
        let given: Ids = serde_json::from_slice(body).map_err(|err| {
            ApiError::bad_request(format!("bad body: {err} (expected {{\"dlqIds\": [...]}})"))
        })?;
        ids.extend(given.dlq_ids);
    }
    if ids.iter().any(String::is_empty) {
        return Err(ApiError::bad_request("an empty dlqId"));
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return Err(ApiError::bad_request(
            "give the dead letters as dlqIds (deleting all, or by filter, is not supported yet)",
        ));
    }
    if ids.len() > MAX_BULK {
        return Err(ApiError::bad_request(format!(
            "{} dlqIds; at most {MAX_BULK} a request",
            ids.len()
        )));
    }
    Ok(ids)
}

/// `DELETE /v2/dlq?dlqIds=A&dlqIds=B`, or with the body `{"dlqIds": ["A", "B"]}`:
/// `{"deleted": N}`, N the dead letters found and deleted (ids not found are not counted, as
/// QStash answers). The input is checked before anything is deleted.
pub(crate) async fn delete_many(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let ids = bulk_ids(&uri, &body)?;
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut deleted = 0;
    for found in letters(&shared, SCANNED).await? {
        if !wanted.contains(found.envelope.id.as_str()) {
            continue;
        }
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
    Ok(Json(json!({ "deleted": deleted })))
}

/// `POST /v2/dlq/retry?dlqIds=A&dlqIds=B`: each as [`retry`]; 201
/// `{"responses": [{"messageId"}]}` for those found. Filters instead of ids are refused.
pub(crate) async fn retry_many(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let ids: Vec<&str> = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.strip_prefix("dlqIds="))
        .filter(|id| !id.is_empty())
        .collect();
    if ids.is_empty() {
        return Err(ApiError::bad_request(
            "give the dead letters as dlqIds=ID (filters are not supported yet)",
        ));
    }
    let mut responses = Vec::new();
    for id in ids {
        match replay(&shared, id).await {
            Ok(()) => responses.push(json!({ "messageId": id })),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err),
        }
    }
    Ok((StatusCode::CREATED, Json(json!({ "responses": responses }))))
}

/// Puts the dead letter `id` back into the queue, due now. Its CREATED event is written first,
/// as a publish writes it before the entry: the events of its attempts come after it (written
/// after the replay, a worker could take the message and write its first attempt's events
/// before it). A replay that finds the letter gone (replayed or deleted by another request
/// meanwhile) or fails takes the event back.
async fn replay(shared: &Shared, id: &str) -> Result<(), ApiError> {
    let found = find(shared, id).await?;
    let again = crate::events::event(&found.envelope, "CREATED", crate::now_ms());
    let written = crate::events::record(shared, &[again]).await;
    let replayed = found
        .queue
        .admin()
        .replay_dead_letter(&found.letter.record, SCANNED, Duration::ZERO)
        .await;
    if !matches!(replayed, Ok(true)) {
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
