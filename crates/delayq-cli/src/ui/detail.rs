//! `GET /api/queues/{name}`: one queue in detail.

use super::{failure, Shared};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::fred::interfaces::SortedSetsInterface;
use serde_json::json;

/// Rows of each list shown.
const LIMIT: usize = 50;
/// The chart: one bar a minute over the next hour.
const BUCKET_MS: i64 = 60_000;
const BUCKETS: usize = 60;

pub(super) async fn queue(State(ui): State<Shared>, Path(name): Path<String>) -> Response {
    if let Some(outside) = ui.outside(&name) {
        return outside;
    }
    match super::bounded(read(&ui, &name)).await {
        Ok(body) => Json(body).into_response(),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn read(ui: &super::Ui, name: &str) -> anyhow::Result<serde_json::Value> {
    let row = ui.row(name).await?;
    let queue = ui.queue(name).await?;
    let now = delayq::time::now_ms();
    let pending: Vec<_> = queue
        .pending(LIMIT)
        .await?
        .into_iter()
        .map(|p| json!({ "due_ms": p.due_ms, "value": p.value.unwrap_or_else(|_| hex(&p.raw)) }))
        .collect();
    let dead: Vec<_> = queue
        .dead_letters(LIMIT)
        .await?
        .into_iter()
        .map(|d| {
            json!({
                "attempts": d.attempts,
                "error": d.error,
                "dead_at_ms": d.dead_at_ms,
                "value": d.value.unwrap_or_else(|_| hex(&d.raw)),
            })
        })
        .collect();
    let quarantine: Vec<_> = queue
        .quarantined(LIMIT)
        .await?
        .iter()
        .map(|e| json!({ "len": e.len(), "hex": hex(e) }))
        .collect();
    Ok(json!({
        "now_ms": now,
        "queue": row,
        "chart": chart(ui, queue.keys().timeout(), now).await?,
        "pending": pending,
        "dead": dead,
        "quarantine": quarantine,
    }))
}

/// Entries due in each minute of the next hour (from the timeout zset's scores), and how many
/// are overdue now.
async fn chart(ui: &super::Ui, zset: &str, now: i64) -> anyhow::Result<serde_json::Value> {
    let client = &ui.ctx.client;
    let overdue: u64 = client.zcount(zset, f64::NEG_INFINITY, now as f64).await?;
    let end = now + BUCKET_MS * BUCKETS as i64;
    let scored: Vec<(bytes::Bytes, f64)> = client
        .zrangebyscore(zset, (now + 1) as f64, end as f64, true, Some((0, 100_000)))
        .await?;
    let mut counts = vec![0u64; BUCKETS];
    for (_, score) in scored {
        let i = ((score as i64 - now) / BUCKET_MS).clamp(0, BUCKETS as i64 - 1) as usize;
        counts[i] += 1;
    }
    Ok(json!({ "start_ms": now, "bucket_ms": BUCKET_MS, "counts": counts, "overdue": overdue }))
}
