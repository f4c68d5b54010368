//! `GET` and `DELETE /v2/messages/{id}`: a message still to be delivered (pending, or waiting
//! between retries), and cancelling it; `DELETE /v2/messages` cancels several by id.

use crate::access::Caller;
use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::Shared;
use axum::extract::{Path, RawQuery, State};
use axum::Extension;
use axum::Json;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// `GET /v2/messages/{id}`: the message as QStash's `Message` (without its body: see
/// docs/gateway.md), or 404 once it was given up or cancelled, or delivered longer ago than
/// the configured `keep_delivered`.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<Value>, ApiError> {
    let found = match shared.store.get(&id).await {
        Ok(None) => crate::kept::get(&shared.store, &id).await,
        found => found,
    };
    let record = match found {
        Ok(Some(record)) => record,
        Ok(None) => return Err(ApiError::not_found(format!("message {id} not found"))),
        Err(err) => return Err(ApiError::internal("reading the message", &err)),
    };
    // A publish token sees its own messages only; another's is as if it did not exist.
    if caller.is_some_and(|Extension(c)| !c.may_see(record.envelope.owner.as_deref())) {
        return Err(ApiError::not_found(format!("message {id} not found")));
    }
    Ok(Json(message_json(&record.envelope)))
}

/// QStash's `Message` fields of `envelope` (headers as arrays of values, times in ms).
pub(crate) fn message_json(envelope: &Envelope) -> Value {
    let mut header = Map::new();
    for (name, value) in &envelope.headers {
        let values = header.entry(name.clone()).or_insert_with(|| json!([]));
        if let Value::Array(values) = values {
            values.push(envelope.redact.header(name, value).into_owned().into());
        }
    }
    let mut message = json!({
        "messageId": envelope.id,
        "url": envelope.url,
        "method": envelope.method,
        "header": header,
        "maxRetries": envelope.retries,
        "notBefore": envelope.not_before_ms,
        "createdAt": envelope.created_ms,
    });
    if let Some(expr) = &envelope.retry_delay {
        message["retryDelayExpression"] = expr.clone().into();
    }
    if let Some(schedule) = &envelope.schedule_id {
        message["scheduleId"] = schedule.clone().into();
    }
    for (callback, name) in [
        (&envelope.callback, "callback"),
        (&envelope.failure_callback, "failureCallback"),
    ] {
        if let Some(callback) = callback {
            message[name] = callback.url.clone().into();
            let header: Map<String, Value> = callback
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), json!([v])))
                .collect();
            message[format!("{name}Header")] = header.into();
        }
    }
    if let Some(queue) = &envelope.queue_name {
        message["queueName"] = queue.clone().into();
    }
    if let Some(flow) = &envelope.flow {
        message["flowControlKey"] = flow.key.clone().into();
        if let Some(p) = flow.parallelism {
            message["parallelism"] = p.into();
        }
        if let Some(rate) = flow.rate {
            message["rate"] = rate.into();
            message["period"] = (flow.period_ms / 1000).into();
        }
    }
    if let Some(first) = envelope.labels.first() {
        message["label"] = first.clone().into();
        message["labels"] = envelope.labels.clone().into();
    }
    message
}

/// `DELETE /v2/messages/{id}`: the message is never delivered (an attempt already under way
/// may still complete); 404 when it is no longer to be delivered.
pub(crate) async fn cancel(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    match cancel_one(&shared, &id).await? {
        true => Ok(Json(json!({ "cancelled": 1 }))),
        false => Err(ApiError::not_found(format!("message {id} not found"))),
    }
}

/// `DELETE /v2/messages?messageIds=A&messageIds=B` (the JS SDK) or with the body
/// `{"messageIds": [..]}` (the Python SDK): `{"cancelled": n}`, those still to be delivered.
/// Cancelling every message, or by filters, is refused (400): not supported yet.
pub(crate) async fn cancel_many(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let mut ids: Vec<String> = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.strip_prefix("messageIds="))
        .flat_map(|ids| ids.split(','))
        .map(str::to_owned)
        .collect();
    if !body.is_empty() {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Ids {
            #[serde(default)]
            message_ids: Vec<String>,
        }
        let given: Ids = serde_json::from_slice(&body)
            .map_err(|err| ApiError::bad_request(format!("bad body: {err}")))?;
        ids.extend(given.message_ids);
    }
    ids.retain(|id| !id.is_empty());
    if ids.is_empty() {
        return Err(ApiError::bad_request(
            "give the messages as messageIds (cancelling all, or by filters, is not supported yet)",
        ));
    }
    let mut cancelled = 0;
    for id in &ids {
        if cancel_one(&shared, id).await? {
            cancelled += 1;
        }
    }
    Ok(Json(json!({ "cancelled": cancelled })))
}

/// Cancels message `id`; false when it is no longer to be delivered.
async fn cancel_one(shared: &Shared, id: &str) -> Result<bool, ApiError> {
    // The cancellation first, with the record's removal: from the moment the record is gone,
    // no attempt may be made.
    let (found, record) = match shared.store.begin_cancel(id).await {
        Ok(begun) => begun,
        Err(err) => return Err(ApiError::internal("cancelling the message", &err)),
    };
    // The pending entry removed by its handle needs no cancellation left for it; an entry not
    // found by it (taken, waiting for a retry) meets the cancellation at its next attempt.
    if let Some(record) = record.as_ref().filter(|_| found) {
        let canceled = crate::events::event(&record.envelope, "CANCELED", crate::now_ms());
        crate::events::record(shared, &[canceled]).await;
    }
    let handle = record.as_ref().and_then(|r| r.handle.parse().ok());
    let removed = match (found, handle) {
        (true, Some(handle)) => {
            let lane = record.as_ref().and_then(|r| r.envelope.lane.clone());
            let queue = match lane {
                None => Ok(shared.queue.clone()),
                Some(lane) => shared.lanes.queue(&lane).await,
            };
            let cancelled = match queue {
                Ok(queue) => queue.cancel(&handle).await.map_err(|e| e.to_string()),
                Err(err) => Err(err.to_string()),
            };
            cancelled.unwrap_or_else(|err| {
                tracing::warn!(error = %err, message = %id, "gateway: cannot remove a cancelled entry");
                false
            })
        }
        _ => false,
    };
    if removed || !found {
        if let Err(err) = shared.store.clear_cancelled(id).await {
            tracing::warn!(error = %err, message = %id, "gateway: cannot clear a cancellation");
        }
    }
    if found {
        tracing::debug!(message = %id, "cancelled");
    }
    Ok(found)
}
