//! `POST /v2/batch`: a JSON array of messages, `{"destination", "headers": {name: value},
//! "body": string, "queue"?}`, each checked as a publish is. Every message is checked before
//! any is stored: one bad message refuses the whole batch (4xx, nothing stored). The answer is
//! an array in the same order, each item what a publish answers.

use crate::error::ApiError;
use crate::headers;
use crate::publish::{allowed, checked_url, read_body, Prepared};
use crate::Shared;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most messages in one batch.
pub(crate) const MAX_BATCH: usize = 100;

/// One message of a batch, as the SDKs send it.
#[derive(Debug, Deserialize)]
struct Item {
    destination: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    queue: Option<String>,
}

pub(crate) async fn batch(
    State(shared): State<Arc<Shared>>,
    request: Request,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let limit = shared.config.body_limit;
    let owner = crate::access::caller_of(request.extensions()).owner_tag();
    // The JSON escapes a body may need, and the headers, on top of the bodies themselves.
    let raw = read_body(request.into_body(), limit.saturating_mul(4)).await?;
    let items: Vec<Item> = serde_json::from_slice(&raw).map_err(|err| {
        ApiError::bad_request(format!("a batch is a JSON array of messages: {err}"))
    })?;
    if items.is_empty() || items.len() > MAX_BATCH {
        return Err(ApiError::bad_request(format!(
            "a batch has from 1 to {MAX_BATCH} messages, not {}",
            items.len()
        )));
    }
    let now_ms = crate::now_ms();
    let mut prepared = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = |err: ApiError| err.within(&format!("message {i} of the batch"));
        let (message, queue) = prepare(&shared, item, now_ms).map_err(at)?;
        prepared.push((message.owned_by(owner.clone()), queue));
    }
    let mut answers = Vec::with_capacity(prepared.len());
    for (message, queue) in prepared {
        // A storage failure here leaves the messages before it stored (and says so).
        let stored = match queue {
            None => message.enqueue(&shared).await,
            Some(name) => match crate::queues::into_queue(&shared, message, &name).await {
                Ok(message) => message.enqueue(&shared).await,
                Err(err) => Err(err),
            },
        };
        let (_, answer) = stored.map_err(|err| {
            err.within(&format!(
                "after {} messages of the batch were stored",
                answers.len()
            ))
        })?;
        answers.push(answer);
    }
    Ok((StatusCode::CREATED, Json(Value::Array(answers))))
}

/// A message of the batch checked, with the queue it goes to.
fn prepare(
    shared: &Shared,
    item: Item,
    now_ms: i64,
) -> Result<(Prepared, Option<String>), ApiError> {
    if let Some(queue) = &item.queue {
        crate::queues::checked_name(queue)?;
    }
    let url = checked_url(item.destination)?;
    allowed(shared, &url)?;
    let mut map = HeaderMap::new();
    for (name, value) in &item.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ApiError::bad_request(format!("bad header name {name:?}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| ApiError::bad_request(format!("bad value of header {name}")))?;
        map.append(name, value);
    }
    let options = headers::parse(&map, &shared.config, now_ms)?;
    let body = item.body.unwrap_or_default().into_bytes();
    if body.len() > shared.config.body_limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is over this gateway's limit of {} bytes",
                shared.config.body_limit
            ),
        ));
    }
    let message = Prepared::new(url, options, body, now_ms);
    if item.queue.is_some() && message.has_flow() {
        return Err(ApiError::bad_request(crate::queues::NO_FLOW));
    }
    Ok((message, item.queue))
}
