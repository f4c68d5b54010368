//! What delayq's workers and schedulers keep in Redis about a queue, as the dashboard shows it:
//! its activity by minute and by day (moved, taken, acked, failed) and the live processes
//! serving it.
//!
//! `GET /api/queues/{name}/activity`: the last hour, a minute at a time, oldest first (one
//! pipelined read). `GET /api/queues/{name}/days?days=N`: the last N UTC days (default and at
//! most 90), a day at a time with its ISO date, oldest first (one pipelined read). `GET /api/queues/{name}/processes`: the live workers and schedulers, with
//! their last heartbeat (one pipelined read). The overview's rows carry [`recent`]'s sums and
//! a count of the processes.

use super::{bounded, failure, Shared, Ui};
use crate::text_codec::TextCodec;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::inspect::{DayActivity, MinuteActivity, DAYS_KEPT};
use delayq::DelayedQueue;
use serde_json::json;
use std::collections::HashMap;

/// Minutes of history the queue view charts.
const HISTORY_MINUTES: usize = 60;
/// Minutes the overview's rates are averaged over (the current one, still filling, included).
pub(super) const RATE_MINUTES: usize = 5;

/// A minute's counts as JSON; `failed` is retried plus dead-lettered.
fn minute_json(m: &MinuteActivity) -> serde_json::Value {
    json!({
        "minute_ms": m.minute_ms,
        "moved": m.moved,
        "taken": m.taken,
        "acked": m.acked,
        "failed": m.failed(),
    })
}

/// A day's counts as JSON, with its ISO date; `failed` is retried plus dead-lettered.
fn day_json(d: &DayActivity) -> serde_json::Value {
    json!({
        "date": d.date,
        "day_ms": d.day_ms,
        "moved": d.moved,
        "taken": d.taken,
        "acked": d.acked,
        "failed": d.failed(),
    })
}

/// The queue's counts summed over the last [`RATE_MINUTES`] and how many processes serve it:
/// two pipelined reads, made at once.
pub(super) async fn recent(
    queue: &DelayedQueue<TextCodec>,
) -> anyhow::Result<(MinuteActivity, usize)> {
    let (minutes, processes) = tokio::join!(
        queue.inspect().activity(RATE_MINUTES),
        queue.inspect().processes()
    );
    let mut sum = MinuteActivity::default();
    for m in minutes? {
        sum.moved += m.moved;
        sum.taken += m.taken;
        sum.acked += m.acked;
        sum.retried += m.retried;
        sum.dead += m.dead;
    }
    Ok((sum, processes?.len()))
}

/// [`recent`]'s sums as the overview's row carries them.
pub(super) fn recent_json(sum: &MinuteActivity) -> serde_json::Value {
    let mut sums = minute_json(sum);
    sums["minute_ms"] = json!(null);
    sums["minutes"] = json!(RATE_MINUTES);
    sums
}

/// `GET /api/queues/{name}/activity`.
pub(super) async fn history(State(ui): State<Shared>, Path(name): Path<String>) -> Response {
    answer(&ui, &name, |queue| async move {
        let minutes = queue.inspect().activity(HISTORY_MINUTES).await?;
        let minutes: Vec<_> = minutes.iter().map(minute_json).collect();
        Ok(json!({ "now_ms": delayq::time::now_ms(), "minutes": minutes }))
    })
    .await
}

/// `GET /api/queues/{name}/days?days=N`: N from 1 to [`DAYS_KEPT`] (default all of them).
pub(super) async fn days(
    State(ui): State<Shared>,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let days = match params.get("days").map(|d| d.parse::<usize>()) {
        None => DAYS_KEPT,
        Some(Ok(days)) if (1..=DAYS_KEPT).contains(&days) => days,
        Some(_) => {
            let message = format!("days: a whole number from 1 to {DAYS_KEPT}");
            return failure(StatusCode::BAD_REQUEST, message);
        }
    };
    answer(&ui, &name, |queue| async move {
        let days: Vec<_> = queue
            .inspect()
            .days(days)
            .await?
            .iter()
            .map(day_json)
            .collect();
        Ok(json!({ "now_ms": delayq::time::now_ms(), "days": days }))
    })
    .await
}

/// `GET /api/queues/{name}/processes`.
pub(super) async fn processes(State(ui): State<Shared>, Path(name): Path<String>) -> Response {
    answer(&ui, &name, |queue| async move {
        let processes: Vec<_> = queue
            .inspect()
            .processes()
            .await?
            .into_iter()
            .map(|p| {
                json!({
                    "id": p.id,
                    "kind": p.kind,
                    "host": p.host,
                    "pid": p.pid,
                    "version": p.version,
                    "started_ms": p.started_ms,
                    "beat_ms": p.beat_ms,
                    "patterns": p.patterns,
                })
            })
            .collect();
        Ok(json!({ "now_ms": delayq::time::now_ms(), "processes": processes }))
    })
    .await
}

/// The JSON `read` makes of the queue `name`, or why not (outside `--match`, Redis failing).
pub(super) async fn answer<F, Fut>(ui: &Ui, name: &str, read: F) -> Response
where
    F: FnOnce(DelayedQueue<TextCodec>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<serde_json::Value>>,
{
    if let Some(outside) = ui.outside(name) {
        return outside;
    }
    let work = async {
        let queue = ui.queue(name).await?;
        read(queue).await
    };
    match bounded(work).await {
        Ok(body) => Json(body).into_response(),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}
