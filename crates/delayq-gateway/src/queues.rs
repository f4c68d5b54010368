//! QStash queues: `POST /v2/enqueue/{queue}/{destination}` and `/v2/queues` (upsert, get, list,
//! delete, pause, resume). Each queue is a lane (see `lanes.rs`): a delayq queue of its own,
//! taken in offer order, with a concurrency cap of its parallelism across every gateway
//! process; a paused queue's workers stop.

use crate::error::ApiError;
use crate::headers;
use crate::lanes::{valid_queue_name, Lane, MAX_NAME};
use crate::publish::{allowed, destination_after, read_body, Prepared};
use crate::Shared;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The highest parallelism of a queue.
pub(crate) const MAX_PARALLELISM: u32 = 1000;

/// Why a queue's message may not ask for flow control.
pub(crate) const NO_FLOW: &str =
    "flow control is not supported on a queue's messages (the queue's parallelism limits them)";

pub(crate) fn checked_name(name: &str) -> Result<(), ApiError> {
    match valid_queue_name(name) {
        true => Ok(()),
        false => Err(ApiError::bad_request(format!(
            "bad queue name {name:?}: 1 to {MAX_NAME} letters, digits, '-', '.' or '_'"
        ))),
    }
}

/// `POST /v2/enqueue/{queue}/{destination}`: a publish into the queue, created (parallelism 1)
/// when missing. Flow control is refused here: a queue has its own parallelism.
pub(crate) async fn enqueue(
    State(shared): State<Arc<Shared>>,
    request: Request,
) -> Result<Response, ApiError> {
    let path = request.uri().path();
    let after = path.find("/v2/enqueue/").map_or(path, |i| &path[i + 12..]);
    let name = after.split('/').next().unwrap_or("").to_owned();
    checked_name(&name)?;
    let prefix = format!("{}{name}/", &path[..path.len() - after.len()]);
    let url = destination_after(request.uri(), &prefix)?;
    allowed(&shared, &url)?;
    let now_ms = crate::now_ms();
    let options = headers::parse(request.headers(), &shared.config, now_ms)?;
    let body = read_body(request.into_body(), shared.config.body_limit).await?;
    let message = Prepared::new(url, options, body.to_vec(), now_ms);
    if message.has_flow() {
        return Err(ApiError::bad_request(NO_FLOW));
    }
    let message = into_queue(&shared, message, &name).await?;
    let (status, answer) = message.enqueue(&shared).await?;
    Ok((status, Json(answer)).into_response())
}

/// `message` sent to queue `name` (checked already), the queue made (parallelism 1) when
/// missing.
pub(crate) async fn into_queue(
    shared: &Shared,
    message: Prepared,
    name: &str,
) -> Result<Prepared, ApiError> {
    let lane = shared.lanes.queue_lane(name);
    let now_ms = crate::now_ms();
    let fresh = Lane {
        queue: Some(name.to_owned()),
        parallelism: Some(1),
        rate: None,
        period_ms: 0,
        paused: false,
        created_at: now_ms,
        updated_at: now_ms,
    };
    if let Err(err) = shared.lanes.ensure(&lane, &fresh).await {
        return Err(ApiError::internal("creating the queue", &err));
    }
    Ok(message.in_queue(name, lane))
}

/// The body of `POST /v2/queues`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Upsert {
    queue_name: String,
    #[serde(default)]
    parallelism: Option<u32>,
    #[serde(default)]
    paused: Option<bool>,
}

/// `POST /v2/queues`: creates or updates a queue.
pub(crate) async fn upsert(
    State(shared): State<Arc<Shared>>,
    body: axum::body::Bytes,
) -> Result<StatusCode, ApiError> {
    let ask: Upsert = serde_json::from_slice(&body)
        .map_err(|err| ApiError::bad_request(format!("bad queue: {err}")))?;
    checked_name(&ask.queue_name)?;
    let parallelism = ask.parallelism.unwrap_or(1);
    if !(1..=MAX_PARALLELISM).contains(&parallelism) {
        return Err(ApiError::bad_request(format!(
            "bad parallelism {parallelism}: from 1 to {MAX_PARALLELISM}"
        )));
    }
    let lane = shared.lanes.queue_lane(&ask.queue_name);
    let now = crate::now_ms();
    let old = read(&shared, &lane).await?;
    let queue = Lane {
        queue: Some(ask.queue_name.clone()),
        parallelism: Some(parallelism),
        rate: None,
        period_ms: 0,
        paused: ask.paused.unwrap_or(false),
        created_at: old.map_or(now, |o| o.created_at),
        updated_at: now,
    };
    match shared.lanes.put(&lane, &queue).await {
        Ok(()) => Ok(StatusCode::OK),
        Err(err) => Err(ApiError::internal("storing the queue", &err)),
    }
}

async fn read(shared: &Shared, lane: &str) -> Result<Option<Lane>, ApiError> {
    shared
        .lanes
        .get(lane)
        .await
        .map_err(|err| ApiError::internal("reading the queue", &err))
}

async fn found(shared: &Shared, name: &str) -> Result<(String, Lane), ApiError> {
    checked_name(name)?;
    let lane = shared.lanes.queue_lane(name);
    match read(shared, &lane).await? {
        Some(queue) => Ok((lane, queue)),
        None => Err(ApiError::not_found(format!("queue {name} not found"))),
    }
}

/// `{name, createdAt, updatedAt, parallelism, lag, paused}`; lag: the messages not delivered
/// yet (pending and ready).
async fn queue_json(shared: &Shared, lane: &str, queue: &Lane) -> Result<Value, ApiError> {
    let stats = match shared.lanes.queue(lane).await {
        Ok(q) => q.inspect().stats().await.map_err(|e| Box::new(e) as _),
        Err(err) => Err(err),
    };
    let stats = stats.map_err(|err| ApiError::internal("reading the queue", &err))?;
    Ok(json!({
        "name": queue.queue,
        "createdAt": queue.created_at,
        "updatedAt": queue.updated_at,
        "parallelism": queue.parallelism.unwrap_or(1),
        "lag": stats.pending + stats.ready,
        "paused": queue.paused,
    }))
}

/// `GET /v2/queues/{name}`.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (lane, queue) = found(&shared, &name).await?;
    Ok(Json(queue_json(&shared, &lane, &queue).await?))
}

/// `GET /v2/queues`: every queue, by name.
pub(crate) async fn list(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, ApiError> {
    let all = match shared.lanes.all().await {
        Ok(all) => all,
        Err(err) => return Err(ApiError::internal("reading the queues", &err)),
    };
    let mut queues: Vec<(String, Lane)> =
        all.into_iter().filter(|(_, l)| l.queue.is_some()).collect();
    queues.sort_by(|a, b| a.1.queue.cmp(&b.1.queue));
    let mut answer = Vec::with_capacity(queues.len());
    for (lane, queue) in &queues {
        answer.push(queue_json(&shared, lane, queue).await?);
    }
    Ok(Json(Value::Array(answer)))
}

/// `DELETE /v2/queues/{name}`: refused (409) while the queue holds messages.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (lane, queue) = found(&shared, &name).await?;
    let shown = queue_json(&shared, &lane, &queue).await?;
    if shown["lag"].as_u64().unwrap_or(0) > 0 {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "queue {name} still holds messages: cancel them or let them be delivered first"
            ),
        ));
    }
    match shared.lanes.remove(&lane).await {
        Ok(_) => Ok(StatusCode::OK),
        Err(err) => Err(ApiError::internal("deleting the queue", &err)),
    }
}

/// `POST /v2/queues/{name}/pause`.
pub(crate) async fn pause(
    state: State<Arc<Shared>>,
    name: Path<String>,
) -> Result<StatusCode, ApiError> {
    set_paused(state, name, true).await
}

/// `POST /v2/queues/{name}/resume`.
pub(crate) async fn resume(
    state: State<Arc<Shared>>,
    name: Path<String>,
) -> Result<StatusCode, ApiError> {
    set_paused(state, name, false).await
}

async fn set_paused(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    paused: bool,
) -> Result<StatusCode, ApiError> {
    let (lane, mut queue) = found(&shared, &name).await?;
    queue.paused = paused;
    queue.updated_at = crate::now_ms();
    match shared.lanes.put(&lane, &queue).await {
        Ok(()) => Ok(StatusCode::OK),
        Err(err) => Err(ApiError::internal("storing the queue", &err)),
    }
}
