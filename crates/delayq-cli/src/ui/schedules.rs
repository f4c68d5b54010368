//! A queue's recurring schedules in the dashboard, and the actions on each.
//!
//! `GET /api/queues/{name}/schedules?offset=&limit=`: a page of the queue's schedules, by next
//! occurrence (paused and ended ones last), with their total: a `ZCARD` and a `ZRANGE` of the
//! page's ids from the schedules zset, then one `HGETALL` per schedule of the page (at most
//! [`MOST`]), so a queue of thousands of schedules costs no more than the page shown. Each row:
//! `id`, `cron` and `zone` or `every_ms`, `next_ms`, `last_ms`, `paused`, `missed`,
//! `start_ms`, `end_ms` and `value`, a bounded preview with the queue's codec; a schedule that
//! cannot be read: `id` and `error`.
//! `POST /api/queues/{name}/schedules/{id}/{pause,resume,trigger,remove}`: each with the role
//! [`access`](super::access) says (remove loses the schedule: admin; the others keep it).

use super::activity::answer;
use super::preview::{shown, PREVIEW};
use super::{bounded, failure, refusal, Shared};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::codec::ByteArrayCodec;
use delayq::fred::interfaces::SortedSetsInterface;
use delayq::{DelayedQueue, Error, QueueKeys, ScheduleInfo};
use serde_json::json;
use std::collections::HashMap;

/// Schedules of a page when the request does not say.
const PAGE: usize = 50;
/// The most schedules one page reads.
const MOST: usize = 200;

/// The queue `name` with values as bytes, for its schedules' door (the rows show values with
/// the queue's text codec, or as bytes when they do not decode).
async fn raw_queue(ui: &super::Ui, name: &str) -> delayq::Result<DelayedQueue<ByteArrayCodec>> {
    DelayedQueue::builder(ui.ctx.client.clone(), name, ByteArrayCodec)
        .options(ui.ctx.global.options())
        .transfer(false)
        .build()
        .await
}

/// `GET /api/queues/{name}/schedules`.
pub(super) async fn list(
    State(ui): State<Shared>,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let [offset, limit] = match super::paging::numbers(&params, [("offset", 0), ("limit", PAGE)]) {
        Ok(numbers) => numbers,
        Err(bad) => return *bad,
    };
    let limit = limit.clamp(1, MOST);
    let read = |_queue| async {
        let keys = QueueKeys::new(name.as_str());
        let client = &ui.ctx.client;
        let total: u64 = client.zcard(keys.schedules()).await?;
        // Both within i64 (paging.rs bounds the offset); the last one capped, never wrapped.
        let first = i64::try_from(offset).unwrap_or(i64::MAX);
        let last = i64::try_from(offset.saturating_add(limit - 1)).unwrap_or(i64::MAX);
        let ids: Vec<String> = client
            .zrange(keys.schedules(), first, last, None, false, None, false)
            .await?;
        let queue = raw_queue(&ui, &name).await?;
        let of_queue = queue.schedules();
        let gateway = super::gateway::gateway_of(&ui, &name).await?.is_some();
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            match of_queue.get(&id).await {
                Ok(Some(info)) => rows.push(row(&ui, &name, &info, gateway)),
                // Removed between the two reads: left out.
                Ok(None) => {}
                // A hash another writer got wrong (or a key of another type) is its own row.
                Err(err @ (Error::InvalidSchedule(_) | Error::WrongType { .. })) => {
                    rows.push(json!({ "id": id, "error": err.to_string() }));
                }
                Err(err) => return Err(err.into()),
            }
        }
        Ok(json!({
            "now_ms": delayq::time::now_ms(),
            "total": total,
            "offset": offset,
            "limit": limit,
            "schedules": rows,
        }))
    };
    answer(&ui, &name, read).await
}

/// A schedule as the page shows it; of a gateway's queue (`gateway`), its value is the
/// template envelope, whose bytes hold the forwarded headers: shown as the method and URL
/// only, with QStash's `Schedule` fields (secrets redacted) as `schedule`.
fn row(ui: &super::Ui, name: &str, info: &ScheduleInfo, gateway: bool) -> serde_json::Value {
    let schedule = &info.schedule;
    let value = &schedule.value;
    let decoded = gateway
        .then(|| delayq_gateway::view::schedule_json(info))
        .flatten();
    let mut row = json!({
        "id": schedule.id,
        "next_ms": info.next_ms,
        "last_ms": info.last_ms,
        "paused": schedule.paused,
        "missed": schedule.missed.to_string(),
        "start_ms": schedule.start_ms,
        "end_ms": schedule.end_ms,
        "value": shown(ui.ctx.codec(name), value, value.len() as u64, PREVIEW),
    });
    crate::show::recurrence_fields(&mut row, &schedule.recurrence);
    if let Some(decoded) = decoded {
        let text = format!("{} {}", decoded["method"], decoded["destination"]).replace('"', "");
        row["value"] = json!({ "value": text, "len": value.len(), "cut": false });
        row["schedule"] = decoded;
    }
    row
}

/// `POST /api/queues/{name}/schedules/{id}/{action}`.
pub(super) async fn act(
    State(ui): State<Shared>,
    Path((name, id, action)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    let done = bounded(async {
        let queue = raw_queue(&ui, &name).await?;
        let of_queue = queue.schedules();
        Ok(match action.as_str() {
            "pause" => Some(
                of_queue
                    .pause(&id)
                    .await
                    .map(|i| json!({ "next_ms": i.next_ms })),
            ),
            "resume" => Some(
                of_queue
                    .resume(&id)
                    .await
                    .map(|i| json!({ "next_ms": i.next_ms })),
            ),
            "trigger" => Some(
                of_queue
                    .trigger(&id)
                    .await
                    .map(|handle| json!({ "handle": handle.to_string() })),
            ),
            "remove" => Some(match of_queue.remove(&id).await {
                Ok(true) => Ok(json!({ "removed": true })),
                Ok(false) => Err(Error::NoSuchSchedule {
                    queue: name.clone(),
                    id: id.clone(),
                }),
                Err(err) => Err(err),
            }),
            _ => None,
        })
    });
    match done.await {
        Ok(Some(Ok(body))) => {
            tracing::info!(queue = %name, schedule = %id, action, "dashboard write");
            Json(body).into_response()
        }
        Ok(Some(Err(err @ Error::NoSuchSchedule { .. }))) => {
            failure(StatusCode::NOT_FOUND, err.to_string())
        }
        Ok(Some(Err(err))) => failure(StatusCode::BAD_GATEWAY, err.to_string()),
        Ok(None) => failure(StatusCode::NOT_FOUND, format!("no action {action:?}")),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}
