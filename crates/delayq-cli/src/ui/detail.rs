//! `GET /api/queues/{name}`: one queue in detail; 404 for a queue with no key at all.
//!
//! Query: `pending`, `dead`, `quarantine`: where each list's page starts (0 by default).

use super::{failure, paging, preview, Shared};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::fred::interfaces::SortedSetsInterface;
use serde_json::json;
use std::collections::HashMap;

/// Rows of each list shown.
pub(super) const LIMIT: usize = 50;
/// The chart: one bar a minute over the next hour.
const BUCKET_MS: i64 = 60_000;
const BUCKETS: usize = 60;

pub(super) async fn queue(
    State(ui): State<Shared>,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if let Some(outside) = ui.outside(&name) {
        return outside;
    }
    let starts = match paging::numbers(&params, [("pending", 0), ("dead", 0), ("quarantine", 0)]) {
        Ok(starts) => starts,
        Err(refused) => return *refused,
    };
    match super::bounded(read(&ui, &name, starts)).await {
        Ok(Some(body)) => Json(body).into_response(),
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            format!("no queue {name:?}: no key of it exists"),
        ),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

/// The queue's detail; `None` when it has no key at all.
async fn read(
    ui: &super::Ui,
    name: &str,
    [pending_from, dead_from, quarantine_from]: [usize; 3],
) -> anyhow::Result<Option<serde_json::Value>> {
    let row = ui.row(name).await?;
    let empty = ["pending", "ready", "in_flight", "dead", "quarantined"]
        .iter()
        .all(|k| row[k] == 0)
        && row["paused"] == false;
    if empty {
        return Ok(None);
    }
    let queue = ui.queue(name).await?;
    let (client, codec, keys) = (&ui.ctx.client, &ui.ctx.codec, queue.keys());
    let now = delayq::time::now_ms();
    let format = queue.entry_format();
    let pending = preview::pending(client, codec, keys, format, pending_from, LIMIT).await?;
    let dead = preview::dead(client, codec, keys, dead_from, LIMIT).await?;
    let quarantine = preview::quarantine(client, keys, quarantine_from, LIMIT).await?;
    Ok(Some(json!({
        "now_ms": now,
        "queue": row,
        "chart": chart(ui, keys.timeout(), now).await?,
        "page": LIMIT,
        "pending": { "from": pending_from, "rows": pending },
        "dead": { "from": dead_from, "rows": dead },
        "quarantine": { "from": quarantine_from, "rows": quarantine },
    })))
}

/// Entries due in each minute of the next hour, and how many are overdue now: one `ZCOUNT`
/// each, in one pipeline (each O(log n): no member is read, however many there are).
async fn chart(ui: &super::Ui, zset: &str, now: i64) -> anyhow::Result<serde_json::Value> {
    let pipeline = ui.ctx.client.pipeline();
    let _: () = pipeline.zcount(zset, f64::NEG_INFINITY, now as f64).await?;
    for i in 0..BUCKETS as i64 {
        let start = now + 1 + i * BUCKET_MS;
        let _: () = pipeline
            .zcount(zset, start as f64, (start + BUCKET_MS - 1) as f64)
            .await?;
    }
    let mut counts: Vec<u64> = pipeline.all().await?;
    let overdue = if counts.is_empty() {
        0
    } else {
        counts.remove(0)
    };
    Ok(json!({ "start_ms": now, "bucket_ms": BUCKET_MS, "counts": counts, "overdue": overdue }))
}
